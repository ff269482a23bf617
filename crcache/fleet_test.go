package crcache

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubetyped/informer/crcache/internal/pods"
	"github.com/kubetyped/informer/internal/replayserver"
	"github.com/kubetyped/informer/internal/testkit"
)

// podSharing says which parts of one pod two clusters' caches hold once:
// a string, and sub-objects of the metadata (the label map) and of the
// spec (the first container's resource requests, env list and liveness
// probe).
type podSharing struct {
	Image, Labels, Requests bool
	Env, LivenessProbe      bool
}

// sharingOf compares the cached objects a and b, the same pod of two
// clusters.
func sharingOf(a, b *corev1.Pod) podSharing {
	ca, cb := a.Spec.Containers[0], b.Spec.Containers[0]
	return podSharing{
		Image:         unsafe.StringData(ca.Image) == unsafe.StringData(cb.Image),
		Labels:        reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(b.Labels).UnsafePointer(),
		Requests:      reflect.ValueOf(ca.Resources.Requests).UnsafePointer() == reflect.ValueOf(cb.Resources.Requests).UnsafePointer(),
		Env:           len(ca.Env) > 0 && &ca.Env[0] == &cb.Env[0],
		LivenessProbe: ca.LivenessProbe != nil && ca.LivenessProbe == cb.LivenessProbe,
	}
}

// TestFleetSharesAcrossClusters runs the caches of two clusters, served by
// a replay server in protobuf with the same pods (the fleet's common
// Deployments), and checks what the same pod's cached objects share, for
// each way of making the caches:
//   - in one fleet with crcache's defaults (pods deep-copied on read, so
//     sharing on): the string and every sub-object are one copy, shared
//     by the decoder as it decodes;
//   - in one fleet with pods read without deep copies (sharing off for
//     them): the string only;
//   - in one fleet with a transform (sharing on): the decoder shares
//     strings only (the transform may write into its input), and the
//     informer's pass shares the transform's output after it, in the
//     fleet's table: for a pod, whose pass walks the spec, the same parts
//     as the decoder (for other kinds the pass shares only the metadata's
//     strings and maps);
//   - as two caches of New: nothing.
//
// The stores' objects are compared (the cached ones, not reads' copies).
func TestFleetSharesAcrossClusters(t *testing.T) {
	server, err := replayserver.Start(replayserver.Options{Clusters: 2, Pods: 20, Common: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	clusters := server.Clusters()
	identity := func(obj any) (any, error) { return obj, nil }

	for _, tc := range []struct {
		name string
		// newCaches returns the constructors of the caches of the two
		// clusters.
		newCaches func() [2]cache.NewCacheFunc
		opts      cache.Options
		want      podSharing
	}{
		{
			name: "fleet, defaults",
			newCaches: func() [2]cache.NewCacheFunc {
				f := NewFleet(FleetOptions{})
				return [2]cache.NewCacheFunc{f.NewCache("a"), f.NewCache("b")}
			},
			want: podSharing{Image: true, Labels: true, Requests: true, Env: true, LivenessProbe: true},
		},
		{
			name: "fleet, UnsafeDisableDeepCopy",
			newCaches: func() [2]cache.NewCacheFunc {
				f := NewFleet(FleetOptions{})
				return [2]cache.NewCacheFunc{f.NewCache("a"), f.NewCache("b")}
			},
			opts: cache.Options{DefaultUnsafeDisableDeepCopy: new(true)},
			want: podSharing{Image: true},
		},
		{
			name: "fleet, transform",
			newCaches: func() [2]cache.NewCacheFunc {
				f := NewFleet(FleetOptions{})
				return [2]cache.NewCacheFunc{f.NewCache("a"), f.NewCache("b")}
			},
			opts: cache.Options{DefaultTransform: identity},
			want: podSharing{Image: true, Labels: true, Requests: true, Env: true, LivenessProbe: true},
		},
		{
			name: "two caches of New",
			newCaches: func() [2]cache.NewCacheFunc {
				return [2]cache.NewCacheFunc{New, New}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newCaches := tc.newCaches()
			var cached [2]*corev1.Pod
			for i, newCache := range newCaches {
				store := startReplayCache(t, newCache, clusters[i].Config(), tc.opts)
				obj, ok, err := store.GetByKey(firstPodKey(t, store))
				if err != nil || !ok {
					t.Fatalf("cluster %d: GetByKey: %v, %v", i, ok, err)
				}
				cached[i] = obj.(*corev1.Pod)
			}
			if cached[0].UID == cached[1].UID {
				t.Fatalf("the clusters' pods have the same UID %s: not two clusters", cached[0].UID)
			}
			if diff := cmp.Diff(tc.want, sharingOf(cached[0], cached[1])); diff != "" {
				t.Errorf("held once by both clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// firstPodKey returns the smallest key of store's pods.
func firstPodKey(t *testing.T, store toolscache.Store) string {
	t.Helper()
	keys := store.ListKeys()
	if len(keys) == 0 {
		t.Fatal("no pod cached")
	}
	return slices.Min(keys)
}

// startReplayCache makes a cache with newCache for the replay cluster at
// config, runs it until the test ends, waits for its pods to sync and
// returns their store.
func startReplayCache(t *testing.T, newCache cache.NewCacheFunc, config *rest.Config, opts cache.Options) toolscache.Store {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(httpClient.CloseIdleConnections) // after the cache has stopped
	opts.HTTPClient, opts.Mapper, opts.Scheme = httpClient, testMapper(), scheme.Scheme
	c, err := newCache(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(t.Context(), &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	startCache(t, c)
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("cache not synced")
	}
	return inf.(toolscache.SharedIndexInformer).GetStore()
}

// TestFleetClusterNames checks the life of a cluster's name: in use (in
// Clusters, refused to a second cache, whether made or started then) from
// its cache's Start until Start has returned, then free for a new cache of
// that name; names that cannot name a directory are refused. Once every
// cache has stopped, none left a goroutine behind.
func TestFleetClusterNames(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := NewFleet(FleetOptions{})
	cluster := newFakeCluster()
	cluster.Create(pods.Pod(1, 10))
	newCache := func(name string) (cache.Cache, error) {
		return f.newCache(name, fakeConfig(), testOptions(t), cluster.newSource)
	}
	mustNewCache := func(name string) cache.Cache {
		t.Helper()
		c, err := newCache(name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	errorOf := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	inUse := `crcache: Fleet: cluster "a" already has a running cache: a cluster's name is free again once its cache's Start has returned`

	for _, tc := range []struct{ name, err string }{
		{"", `crcache: Fleet: cluster name is empty`},
		{"a/b", `crcache: Fleet: cluster name "a/b": names a path, not a directory`},
		{"..", `crcache: Fleet: cluster name "..": names a path, not a directory`},
		{strings.Repeat("x", 254), `crcache: Fleet: cluster name "xxxxxxxxxxxxxxxxxxxx"… is longer than 253 characters`},
	} {
		_, err := newCache(tc.name)
		if diff := cmp.Diff(tc.err, errorOf(err)); diff != "" {
			t.Errorf("NewCache(%.10q) error (-want +got):\n%s", tc.name, diff)
		}
	}

	// Two caches of "a" made before either starts: the second's Start
	// fails at once.
	first, early := mustNewCache("a"), mustNewCache("a")
	if diff := cmp.Diff([]string(nil), f.Clusters()); diff != "" {
		t.Errorf("Clusters before any Start (-want +got):\n%s", diff)
	}
	stopFirst := startCache(t, first)
	testkit.Eventually(t, `cluster "a" running`, func() bool { return len(f.Clusters()) == 1 })
	b := mustNewCache("b")
	stopB := startCache(t, b)
	testkit.Eventually(t, "two clusters running", func() bool { return len(f.Clusters()) == 2 })
	if diff := cmp.Diff([]string{"a", "b"}, f.Clusters()); diff != "" {
		t.Errorf("Clusters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(inUse, errorOf(early.Start(t.Context()))); diff != "" {
		t.Errorf("Start of a second cache of %q (-want +got):\n%s", "a", diff)
	}
	if diff := cmp.Diff("informer already started", errorOf(first.Start(t.Context()))); diff != "" {
		t.Errorf("Start of a running cache again (-want +got):\n%s", diff)
	}
	_, err := newCache("a")
	if diff := cmp.Diff(inUse, errorOf(err)); diff != "" {
		t.Errorf("NewCache of a running cluster (-want +got):\n%s", diff)
	}
	if !first.WaitForCacheSync(t.Context()) {
		t.Fatal("cache a not synced")
	}

	// Stopped, "a" is free: a new cache of it runs and serves the cluster.
	stopFirst()
	if diff := cmp.Diff([]string{"b"}, f.Clusters()); diff != "" {
		t.Errorf("Clusters once a's Start returned (-want +got):\n%s", diff)
	}
	again := mustNewCache("a")
	stopAgain := startCache(t, again)
	if !again.WaitForCacheSync(t.Context()) {
		t.Fatal("cache a, made again, not synced")
	}
	var list corev1.PodList
	if err := again.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pod-1"}, podNames(list.Items)); diff != "" {
		t.Errorf("pods of cluster a, its cache made again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, f.Clusters()); diff != "" {
		t.Errorf("Clusters with a back (-want +got):\n%s", diff)
	}
	if _, err := Cost(t.Context(), again); err != nil {
		t.Errorf("Cost of a fleet's cache: %v", err)
	}
	stopAgain()
	stopB()
	if diff := cmp.Diff([]string(nil), f.Clusters()); diff != "" {
		t.Errorf("Clusters once every Start returned (-want +got):\n%s", diff)
	}
}

// podNames returns the names of pods, in order.
func podNames(pods []corev1.Pod) []string {
	names := make([]string, len(pods))
	for i := range pods {
		names[i] = pods[i].Name
	}
	return names
}
