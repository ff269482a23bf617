package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

// testTimeout bounds each test's waits for the informer to catch up; on a
// quiet machine they take well under a second.
const testTimeout = 2 * time.Minute

// TestPodInformerConvergesWithServer runs the factory's pod informer
// against the real server: it lists the pods that exist before it starts,
// follows creates, updates and deletes, and ends up holding exactly what a
// fresh LIST returns.
func TestPodInformerConvergesWithServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)

	want := resourceVersions{}
	for i := range 5 {
		want.set(createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i)))
	}

	pods, changed := startPodInformer(ctx, t, informer.FactoryOptions{})
	// Synced means the initial list is in the cache: no waiting here.
	if diff := cmp.Diff(want, cachedVersions(pods, ns)); diff != "" {
		t.Fatalf("cache after sync (-want +got):\n%s", diff)
	}

	for i := range 20 {
		want.set(createPod(ctx, t, client, ns, fmt.Sprintf("new-%d", i)))
	}
	for _, name := range []string{"pre-0", "pre-1", "pre-2", "new-0", "new-1", "new-2", "new-3"} {
		want.set(relabelPod(ctx, t, client, ns, name, "1"))
	}
	// A second update of the same pods: the cache must hold the latest.
	for _, name := range []string{"pre-0", "new-0"} {
		want.set(relabelPod(ctx, t, client, ns, name, "2"))
	}
	for _, name := range []string{"pre-3", "new-1", "new-4", "new-5"} {
		deletePod(ctx, t, client, ns, name)
		delete(want, ns+"/"+name)
	}

	expectConverged(ctx, t, pods, changed, ns, want)

	// Every write above has been seen and nothing else writes pods in
	// this cluster (no controllers, tests run one at a time), so the
	// whole cache must now equal a fresh LIST of every namespace.
	listed := listPods(ctx, t, client, metav1.NamespaceAll)
	if diff := cmp.Diff(listed, cachedVersions(pods, metav1.NamespaceAll)); diff != "" {
		t.Errorf("cache differs from a fresh LIST (-list +cache):\n%s", diff)
	}
}

// TestInitialListStreamedOrListed checks that the reflector really gets its
// initial state from the server as a streaming list (a watch with
// sendInitialEvents) by default, and with a LIST when DisableWatchList is
// set; either way the synced cache equals a LIST.
func TestInitialListStreamedOrListed(t *testing.T) {
	for _, tc := range []struct {
		name             string
		disableWatchList bool
		want             informer.ReflectorRequestStats
	}{
		{"streaming list", false, informer.ReflectorRequestStats{StreamingLists: informer.ListReasons{Initial: 1}}},
		{"list", true, informer.ReflectorRequestStats{Lists: informer.ListReasons{Initial: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithTimeout(ctx, testTimeout)
			defer cancel()
			client := newClientset(t)
			ns := newNamespace(ctx, t, client)
			want := resourceVersions{}
			for i := range 5 {
				want.set(createPod(ctx, t, client, ns, fmt.Sprintf("pod-%d", i)))
			}
			lw, err := informer.NewRESTListerWatcher[*corev1.Pod](restConfig, informer.RESTOptions{Namespace: ns})
			if err != nil {
				t.Fatalf("NewRESTListerWatcher: %v", err)
			}
			metrics := &snapshotProvider{}
			pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
				Metrics: metrics, DisableWatchList: tc.disableWatchList,
			})
			if err != nil {
				t.Fatal(err)
			}
			runInformer(ctx, t, pods)
			if !cache.WaitFor(ctx, "pods", pods.HasSyncedChecker()) {
				t.Fatal("informer did not sync")
			}
			if diff := cmp.Diff(want, cachedVersions(pods, ns)); diff != "" {
				t.Errorf("cache after sync (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, metrics.requests()); diff != "" {
				t.Errorf("requests for the initial state (-want +got):\n%s", diff)
			}
		})
	}
}
