package e2e

import (
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubetyped/informer/crcache"
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

// newCache calls cacheUnderTest; the specs are built at package
// initialisation and call it only when they run.
func newCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return cacheUnderTest(config, opts)
}

// TestControllerRuntimeCacheSuite runs the Ginkgo specs ported from
// controller-runtime's pkg/cache suite against the cluster TestMain started.
// Ginkgo allows one RunSpecs per process, so the test cannot run twice in
// one binary (-count=1, which hack/e2e.sh passes).
func TestControllerRuntimeCacheSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "controller-runtime cache suite against "+cacheUnderTestName)
}
