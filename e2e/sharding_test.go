package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// The sharding tests run against a cluster of their own whose API server
// has the ShardedListAndWatch gate, so that the shared cluster keeps the
// configuration the other tests expect; that shared cluster, without the
// gate, is the server on which a shard must fail.

// shardingGate is the API server flag of the sharded cluster.
const shardingGate = "--feature-gates=ShardedListAndWatch=true"

// Lease timing of the dynamic tests: short, so that a takeover is quick.
const (
	testLeaseDuration = 3 * time.Second
	testRenewInterval = 500 * time.Millisecond
)

func TestSharding(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	c := startClusterOfOwn(ctx, t, "sharded-", cluster.Options{APIServerArgs: []string{shardingGate}})
	t.Logf("the sharded cluster started in %v", time.Since(start))
	config := c.Config()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(ctx, t, client)
	start = time.Now()
	createPods(ctx, t, client, ns, 3000)
	t.Logf("created 3,000 pods in %v", time.Since(start))

	t.Run("StaticShardsPartitionTheList", func(t *testing.T) { testStaticShards(ctx, t, config, client, ns) })
	t.Run("DynamicShardsTakeOverAndRebalance", func(t *testing.T) { testDynamicShards(ctx, t, config, client, ns) })
	t.Run("WithoutTheGate", func(t *testing.T) { testShardsWithoutTheGate(ctx, t) })
}

// createPods creates n pods in namespace, 8 at a time.
func createPods(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := client.CoreV1().Pods(namespace).Create(ctx, newPod(fmt.Sprintf("pod-%d", i), "0"), metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("create pods: %v", err)
	}
}

// startShard starts a factory with opts and its pod informer and waits for
// it to sync; the factory shuts down when the test ends or stop is called.
func startShard(ctx context.Context, t *testing.T, config *rest.Config, opts informer.FactoryOptions, handler informer.ResourceEventHandler[*corev1.Pod]) (pods *informer.Informer[*corev1.Pod], stop func()) {
	t.Helper()
	factory, err := informer.NewFactory(config, opts)
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	t.Cleanup(factory.Shutdown)
	pods, err = informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	if handler != nil {
		if _, err := pods.AddEventHandler(handler); err != nil {
			t.Fatal(err)
		}
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	return pods, factory.Shutdown
}

// staticSelector is the server's selector of static shard i of n, as
// apimachinery's matcher reads it.
func staticSelector(i, n int) sharding.Selector {
	bound := func(k int) string {
		if k == n {
			return "0x10000000000000000"
		}
		q, _ := bits.Div64(uint64(k), 0, uint64(n)) // floor(k·2⁶⁴/n)
		return fmt.Sprintf("0x%016x", q)
	}
	return sharding.NewSelector(sharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: bound(i), End: bound(i + 1)})
}

// checkShards checks that the caches are disjoint and that their union is
// want, and returns each cache's size.
func checkShards(t *testing.T, caches []resourceVersions, want resourceVersions) []int {
	t.Helper()
	union := resourceVersions{}
	var sizes []int
	for i, c := range caches {
		sizes = append(sizes, len(c))
		for k, rv := range c {
			if _, dup := union[k]; dup {
				t.Errorf("%s is in two shards (the second is %d)", k, i)
			}
			union[k] = rv
		}
	}
	if diff := cmp.Diff(want, union); diff != "" {
		t.Errorf("union of the shards against a LIST (-list +union):\n%s", diff)
	}
	return sizes
}

func testStaticShards(ctx context.Context, t *testing.T, config *rest.Config, client kubernetes.Interface, ns string) {
	want := listPods(ctx, t, client, ns)
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var caches []resourceVersions
	for i := range 3 {
		pods, _ := startShard(ctx, t, config, informer.FactoryOptions{Namespace: ns, Shard: &informer.Shard{Index: i, Count: 3}}, nil)
		caches = append(caches, cachedVersions(pods, ns))
		// The server chose by the hash apimachinery computes, which the
		// informer's FilterOnClient uses too (a unit test checks that).
		byHash := resourceVersions{}
		for j := range list.Items {
			if ok, _ := staticSelector(i, 3).Matches(&list.Items[j]); ok {
				byHash.set(&list.Items[j])
			}
		}
		if diff := cmp.Diff(byHash, caches[i]); diff != "" {
			t.Errorf("shard %d: the server's choice against the FNV-1a hash (-hash +server):\n%s", i, diff)
		}
	}
	t.Logf("static shards of 3: %v pods", checkShards(t, caches, want))
}

// memberState follows, for one member, the objects its handler was told it
// holds.
type memberState struct {
	mu      sync.Mutex
	held    map[string]bool
	moved   []string
	updates int
}

func (m *memberState) handler() informer.ResourceEventHandlerFuncs[*corev1.Pod] {
	return informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.held[informer.KeyOf(p)] = true
		},
		UpdateFunc: func(_, _ *corev1.Pod) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.updates++
		},
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.held, d.Name.String())
			if d.Moved {
				m.moved = append(m.moved, d.Name.String())
			}
		},
	}
}

// dynamicMember is one replica: its group, informer and handler state.
type dynamicMember struct {
	name    string
	group   *informer.ShardGroup
	pods    *informer.Informer[*corev1.Pod]
	state   *memberState
	crashed atomic.Bool
	stop    func()
}

// errCrashed fails the requests of a crashed member.
var errCrashed = errors.New("member crashed")

type crashTransport struct {
	next    http.RoundTripper
	crashed *atomic.Bool
}

func (c crashTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	return c.next.RoundTrip(req)
}

// startMember starts a replica: a shard group whose Lease requests fail
// once it is crashed (so that its Lease stays behind, as a killed process's
// does), and a factory with a dynamic shard of the group.
func startMember(ctx context.Context, t *testing.T, config *rest.Config, ns, name string) *dynamicMember {
	t.Helper()
	m := &dynamicMember{name: name, state: &memberState{held: map[string]bool{}}}
	leaseConfig := rest.CopyConfig(config)
	leaseConfig.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return crashTransport{rt, &m.crashed} }
	leaseClient, err := kubernetes.NewForConfig(leaseConfig)
	if err != nil {
		t.Fatal(err)
	}
	m.group, err = informer.NewShardGroup(leaseClient.CoordinationV1(), informer.ShardGroupOptions{
		Name: "e2e", Namespace: ns, Identity: name, LeaseDuration: testLeaseDuration, RenewInterval: testRenewInterval,
	})
	if err != nil {
		t.Fatal(err)
	}
	groupCtx, stopGroup := context.WithCancel(ctx)
	groupDone := make(chan struct{})
	go func() {
		defer close(groupDone)
		if err := m.group.Run(groupCtx); err != nil {
			t.Errorf("%s: group: %v", name, err)
		}
	}()
	pods, stopInformer := startShard(ctx, t, config, informer.FactoryOptions{Namespace: ns, Shard: &informer.Shard{Group: m.group}}, m.state.handler())
	m.pods = pods
	m.stop = func() {
		stopInformer()
		stopGroup()
		<-groupDone
	}
	t.Cleanup(m.stop)
	return m
}

// waitForPartition waits until every member sees the others, has synced,
// and the members' caches and handlers hold disjoint sets whose union is a
// LIST; it returns how long that took and the caches' sizes.
func waitForPartition(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string, members []*dynamicMember) (time.Duration, []int) {
	t.Helper()
	start := time.Now()
	var names []string
	for _, m := range members {
		names = append(names, m.name)
	}
	want := listPods(ctx, t, client, ns)
	settled := func() bool {
		union := resourceVersions{}
		for _, m := range members {
			if !slices.Equal(m.group.Members(), names) || !m.pods.HasSynced() {
				return false
			}
			m.state.mu.Lock()
			held := len(m.state.held)
			m.state.mu.Unlock()
			cached := cachedVersions(m.pods, ns)
			if held != len(cached) {
				return false // the handler lags the cache
			}
			for k, rv := range cached {
				if _, dup := union[k]; dup {
					return false
				}
				union[k] = rv
			}
		}
		return cmp.Equal(want, union)
	}
	for !settled() {
		if ctx.Err() != nil {
			var caches []resourceVersions
			for _, m := range members {
				caches = append(caches, cachedVersions(m.pods, ns))
			}
			checkShards(t, caches, want)
			t.Fatalf("members %v did not settle", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	var caches []resourceVersions
	for _, m := range members {
		caches = append(caches, cachedVersions(m.pods, ns))
		// No object orphaned or held twice by the handlers either.
		m.state.mu.Lock()
		for k := range m.state.held {
			if _, ok := caches[len(caches)-1][k]; !ok {
				t.Errorf("%s's handler holds %s, its cache does not", m.name, k)
			}
		}
		m.state.mu.Unlock()
	}
	return took, checkShards(t, caches, want)
}

// checkShares checks that each of sizes is within ±15% of an equal share.
func checkShares(t *testing.T, sizes []int) {
	t.Helper()
	total := 0
	for _, n := range sizes {
		total += n
	}
	for i, n := range sizes {
		if share := float64(n) * float64(len(sizes)) / float64(total); share < 0.85 || share > 1.15 {
			t.Errorf("member %d holds %d of %d pods: %.0f%% of an equal share", i, n, total, 100*share)
		}
	}
}

func testDynamicShards(ctx context.Context, t *testing.T, config *rest.Config, client kubernetes.Interface, ns string) {
	var members []*dynamicMember
	for i := range 3 {
		members = append(members, startMember(ctx, t, config, ns, fmt.Sprintf("member-%d", i)))
	}
	took, sizes := waitForPartition(ctx, t, client, ns, members)
	t.Logf("3 members: settled %v after the last started, holding %v pods", took, sizes)
	checkShares(t, sizes)

	// member-2 crashes: its Lease stays until it expires.
	killed := members[2]
	killed.crashed.Store(true)
	killed.stop()
	members = members[:2]
	took, sizes = waitForPartition(ctx, t, client, ns, members)
	t.Logf("member-2 killed: the survivors covered its range in %v (lease %v, renewal %v), holding %v pods", took, testLeaseDuration, testRenewInterval, sizes)
	if limit := testLeaseDuration + 5*time.Second; took > limit {
		t.Errorf("takeover took %v, more than the lease duration + 5s = %v", took, limit)
	}

	// member-3 joins: the others narrow without listing again.
	var updatesBefore []int
	for _, m := range members {
		m.state.mu.Lock()
		updatesBefore = append(updatesBefore, m.state.updates)
		m.state.moved = nil
		m.state.mu.Unlock()
	}
	members = append(members, startMember(ctx, t, config, ns, "member-3"))
	took, sizes = waitForPartition(ctx, t, client, ns, members)
	t.Logf("member-3 joined: settled in %v, holding %v pods", took, sizes)
	var moved []string
	for i, m := range members[:2] {
		m.state.mu.Lock()
		if m.state.updates != updatesBefore[i] {
			t.Errorf("%s was notified of %d updates while member-3 joined: a range was listed again", m.name, m.state.updates-updatesBefore[i])
		}
		moved = append(moved, m.state.moved...)
		m.state.mu.Unlock()
	}
	joined := members[2].pods.Lister().Namespace(ns)
	got, _ := joined.List(nil)
	var holds []string
	for _, p := range got {
		holds = append(holds, informer.KeyOf(p))
	}
	slices.Sort(holds)
	slices.Sort(moved)
	// member-3 holds what moved to it, and member-2's range, which it
	// took from whoever had taken it over.
	if diff := cmp.Diff(holds, moved); diff != "" {
		t.Errorf("objects moved away from member-0 and member-1 against those member-3 holds (-member-3 +moved):\n%s", diff)
	}
}

func testShardsWithoutTheGate(ctx context.Context, t *testing.T) {
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	createPods(ctx, t, client, ns, 30)
	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns, Shard: &informer.Shard{Index: 0, Count: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer factory.Shutdown()
	if _, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = factory.WaitForCacheSync(waitCtx)
	if err == nil || !strings.Contains(err.Error(), "ShardedListAndWatch") {
		t.Errorf("WaitForCacheSync on a server without the gate: %v, want an error naming the ShardedListAndWatch gate", err)
	}
	t.Logf("without the gate: %v", err)

	// With FilterOnClient the same shards work, filtered on the client.
	want := listPods(ctx, t, client, ns)
	var caches []resourceVersions
	for i := range 3 {
		pods, _ := startShard(ctx, t, restConfig, informer.FactoryOptions{Namespace: ns, Shard: &informer.Shard{Index: i, Count: 3, FilterOnClient: true}}, nil)
		caches = append(caches, cachedVersions(pods, ns))
	}
	t.Logf("filtered on the client: %v pods", checkShards(t, caches, want))
}
