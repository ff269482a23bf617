package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer/crcache"
	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// cacheUnderTest is the constructor the ported controller-runtime cache
// suite (crcache_test.go) runs against, chosen by $E2E_CACHE: "crcache" (the
// default) for this project's cache, "controller-runtime" for
// controller-runtime's own cache.New, which is how the port was shown to be
// faithful: every ported case passes against the original.
var cacheUnderTest, cacheUnderTestName = pickCache(os.Getenv("E2E_CACHE"))

func pickCache(name string) (cache.NewCacheFunc, string) {
	switch name {
	case "controller-runtime":
		return cache.New, name
	case "", "crcache":
		return crcache.New, "crcache"
	}
	panic(fmt.Sprintf("E2E_CACHE=%q: want crcache or controller-runtime", name))
}

// newCache calls the suite's cluster's constructor (suiteTarget), by
// default cacheUnderTest; the specs are built at package initialisation and
// call it only when they run.
func newCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	if suiteCluster != nil {
		return suiteCluster.newCache(config, opts)
	}
	return cacheUnderTest(config, opts)
}

// suiteTarget is a cluster the ported suite runs against, other than the
// harness's, and the constructor of its caches.
type suiteTarget struct {
	config   *rest.Config
	newCache cache.NewCacheFunc
}

// suiteCluster is the cluster the running spec is of: nil for the
// harness's (restConfig) with cacheUnderTest, set by the BeforeEach of the
// specs run per cluster of a fleet (runOnFleetCluster). Ginkgo runs one
// spec at a time.
var suiteCluster *suiteTarget

// suiteConfig is the configuration of the suite's cluster.
func suiteConfig() *rest.Config {
	if suiteCluster != nil {
		return suiteCluster.config
	}
	return restConfig
}

// helperClients are the clients of the suite's clusters, by host.
var helperClients = struct {
	sync.Mutex
	byHost map[string]client.Client
}{byHost: map[string]client.Client{}}

// suiteHelperClient returns the client of the suite's cluster, made once.
func suiteHelperClient() (client.Client, error) {
	config := suiteConfig()
	helperClients.Lock()
	defer helperClients.Unlock()
	if cl, ok := helperClients.byHost[config.Host]; ok {
		return cl, nil
	}
	cl, err := client.New(config, client.Options{})
	if err == nil {
		helperClients.byHost[config.Host] = cl
	}
	return cl, err
}

// suiteFleet is the fleet whose caches the specs run per cluster use: its
// clusters over two API servers decode with its one pair of tables.
var suiteFleet = crcache.NewFleet(crcache.FleetOptions{})

// The ported suite's main specs (CacheTest, as "Informer Cache" runs
// them) on caches of one fleet, for two clusters: "a", the harness's API
// server, and "b", an API server of its own over the harness's etcd
// (another --etcd-prefix: its own objects), with every fixture and every
// write of the specs in that cluster. A fleet's cluster has one running
// cache at a time, and some specs run a second cache of the cluster beside
// the first: each cache the specs make is a cluster of the fleet of its
// own, named after the server and numbered ("a-1", "a-2"…). The two
// specs that write into a cached object ("should be able to change object
// in informer cache", which the no-mutation rule forbids) run on a fleet
// of their own: with suiteFleet the write reached the later specs' caches,
// which decoded test-pod-2's labels from the same bytes into the label map
// it had changed (the rule spans a fleet, see docs/fleet.md).
var _ = Describe("Fleet cache, cluster a", func() {
	BeforeEach(func(ctx SpecContext) { runOnFleetCluster(ctx, "a") })
	CacheTest(newCache, cache.Options{})
})

var _ = Describe("Fleet cache, cluster b", func() {
	BeforeEach(func(ctx SpecContext) { runOnFleetCluster(ctx, "b") })
	CacheTest(newCache, cache.Options{})
})

// fleetCaches numbers the caches of suiteFleet.
var fleetCaches atomic.Int64

// runOnFleetCluster makes the running spec's cluster server's ("a": the
// harness's, otherwise extraAPIServer(server)'s), its caches suiteFleet's,
// until the spec ends.
func runOnFleetCluster(ctx context.Context, server string) {
	config := restConfig
	if server != "a" {
		s, err := extraAPIServer(ctx, server)
		Expect(err).NotTo(HaveOccurred())
		config = s.Config()
	}
	fleet := suiteFleet
	if strings.Contains(CurrentSpecReport().FullText(), "should be able to change object in informer cache") {
		fleet = crcache.NewFleet(crcache.FleetOptions{})
	}
	suiteCluster = &suiteTarget{config: config, newCache: func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		return fleet.NewCache(fmt.Sprintf("%s-%d", server, fleetCaches.Add(1)))(config, opts)
	}}
	DeferCleanup(func() { suiteCluster = nil })
}

// extraAPIServers are the API servers extraAPIServer started, by name.
var extraAPIServers = struct {
	sync.Mutex
	byName map[string]*cluster.APIServer
}{byName: map[string]*cluster.APIServer{}}

// extraAPIServer returns the API server name over the harness's etcd,
// with --etcd-prefix /extra-<name> (a cluster of its own), starting it on
// the first call; it runs until TestMain stops the harness's cluster.
func extraAPIServer(ctx context.Context, name string) (*cluster.APIServer, error) {
	extraAPIServers.Lock()
	defer extraAPIServers.Unlock()
	if s, ok := extraAPIServers.byName[name]; ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	s, err := testCluster.StartAPIServer(ctx, cluster.APIServerOptions{Name: "extra-" + name, EtcdPrefix: "/extra-" + name})
	if err != nil {
		return nil, err
	}
	extraAPIServers.byName[name] = s
	return s, nil
}

// TestControllerRuntimeCacheSuite runs the Ginkgo specs ported from
// controller-runtime's pkg/cache suite against the cluster TestMain started.
// Ginkgo runs its suite once per process and refuses -count above 1, so with
// such a count (a flake hunt on the other tests) the test skips, saying so;
// hack/e2e.sh passes -count=1.
func TestControllerRuntimeCacheSuite(t *testing.T) {
	if count := flag.Lookup("test.count"); count != nil && count.Value.String() != "1" {
		t.Skipf("Ginkgo cannot run with -count=%s; run this test with -count=1", count.Value)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "controller-runtime cache suite against "+cacheUnderTestName)
}
