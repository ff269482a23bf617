package e2e

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"
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
	"github.com/kubetyped/informer/e2e/internal/replica"
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
	if err := replica.CreatePods(ctx, client, ns, 3000); err != nil {
		t.Fatal(err)
	}
	t.Logf("created 3,000 pods in %v", time.Since(start))

	t.Run("StaticShardsPartitionTheList", func(t *testing.T) { testStaticShards(ctx, t, config, client, ns) })
	t.Run("DynamicShardsTakeOverAndRebalance", func(t *testing.T) { testDynamicShards(ctx, t, config, client, ns) })
	t.Run("WithoutTheGate", func(t *testing.T) { testShardsWithoutTheGate(ctx, t) })
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

// startReplicas starts replicas of the e2e group, named member-<i> for i
// in ids, stopped when the test ends.
func startReplicas(ctx context.Context, t *testing.T, config *rest.Config, ns string, ids ...int) []*replica.Replica {
	t.Helper()
	var replicas []*replica.Replica
	for _, i := range ids {
		r, err := replica.Start(ctx, config, replica.Options{Namespace: ns, Group: "e2e", LeaseDuration: testLeaseDuration, RenewInterval: testRenewInterval}, fmt.Sprintf("member-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
		replicas = append(replicas, r)
	}
	return replicas
}

// settle waits until the replicas partition a LIST, and fails the test if
// they do not.
func settle(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string, replicas []*replica.Replica) (time.Duration, []int) {
	t.Helper()
	took, diff, err := replica.WaitSettled(ctx, client, ns, replicas)
	if err != nil {
		t.Fatalf("%v; %v", err, diff)
	}
	return took, diff.Held
}

func testDynamicShards(ctx context.Context, t *testing.T, config *rest.Config, client kubernetes.Interface, ns string) {
	members := startReplicas(ctx, t, config, ns, 0, 1, 2)
	took, sizes := settle(ctx, t, client, ns, members)
	t.Logf("3 members: settled %v after the last started, holding %v pods", took, sizes)
	checkShares(t, sizes)

	// member-2 crashes: its Lease stays until it expires.
	members[2].Crash()
	members = members[:2]
	took, sizes = settle(ctx, t, client, ns, members)
	t.Logf("member-2 killed: the survivors covered its range in %v (lease %v, renewal %v), holding %v pods", took, testLeaseDuration, testRenewInterval, sizes)
	if limit := testLeaseDuration + 5*time.Second; took > limit {
		t.Errorf("takeover took %v, more than the lease duration + 5s = %v", took, limit)
	}

	// member-3 joins: the others narrow without listing again.
	var updatesBefore []int
	for _, m := range members {
		updatesBefore = append(updatesBefore, m.Updates())
		m.TakeMoved()
	}
	members = append(members, startReplicas(ctx, t, config, ns, 3)...)
	took, sizes = settle(ctx, t, client, ns, members)
	t.Logf("member-3 joined: settled in %v, holding %v pods", took, sizes)
	var moved []string
	for i, m := range members[:2] {
		if n := m.Updates() - updatesBefore[i]; n != 0 {
			t.Errorf("%s was notified of %d updates while member-3 joined: a range was listed again", m.Name, n)
		}
		moved = append(moved, m.TakeMoved()...)
	}
	slices.Sort(moved)
	// member-3 holds what moved to it from the others.
	if diff := cmp.Diff(members[2].Keys(), moved); diff != "" {
		t.Errorf("objects moved away from member-0 and member-1 against those member-3 holds (-member-3 +moved):\n%s", diff)
	}
}

func testShardsWithoutTheGate(ctx context.Context, t *testing.T) {
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	if err := replica.CreatePods(ctx, client, ns, 30); err != nil {
		t.Fatal(err)
	}
	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns, Shard: &informer.Shard{Index: 0, Count: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer factory.Shutdown()
	if _, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx)
	// The first list fails at once; the wait is only a bound.
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
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
