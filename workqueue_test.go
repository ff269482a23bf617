package informer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// wqTake gets n items from q, marking each done, and returns them sorted:
// the items one change enqueued, in no particular order.
func wqTake[K comparable](t *testing.T, q workqueue.TypedInterface[K], n int, less func(a, b K) int) []K {
	t.Helper()
	items := make([]K, 0, n)
	for range n {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatalf("queue shut down after %v", items)
		}
		q.Done(item)
		items = append(items, item)
	}
	slices.SortFunc(items, less)
	return items
}

func compareNames(a, b informer.ObjectName) int { return strings.Compare(a.String(), b.String()) }

// wqInformer runs a pod informer over a fake with items listed at "10",
// with immediate relists, until the test ends.
//
// It returns once the handler has returned from its initial adds, so that
// what they enqueued is in the queue.
func wqInformer(t *testing.T, h informer.ResourceEventHandler[*corev1.Pod], items ...*corev1.Pod) *informertest.FakeListerWatcher[*corev1.Pod] {
	t.Helper()
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("10", items...)
	inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
		Backoff: &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	return lw
}

// wqRelistWithout makes the informer relist at "20" and find only items:
// the missing objects leave as deletions whose final state is unknown.
func wqRelistWithout(t *testing.T, lw *informertest.FakeListerWatcher[*corev1.Pod], items ...*corev1.Pod) {
	t.Helper()
	lw.SetList("20", items...)
	if err := lw.FailWatch(context.Background(), apierrors.NewResourceExpired("too old resource version")); err != nil {
		t.Fatal(err)
	}
}

func TestEnqueueAddsObjectNames(t *testing.T) {
	t.Cleanup(informer.ExpectNoGoroutineLeak(t)) // runs last, once everything stopped
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[informer.ObjectName]())
	t.Cleanup(q.ShutDown)
	lw := wqInformer(t, informer.Enqueue[*corev1.Pod](q), informer.NewPod("ns", "a", "1", informer.PodLabels(map[string]string{"owner": ""})), informer.NewPod("ns", "b", "2", informer.PodLabels(map[string]string{"owner": ""})))
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := informer.ObjectName{Namespace: "ns", Name: "a"}, informer.ObjectName{Namespace: "ns", Name: "b"}, informer.ObjectName{Namespace: "ns", Name: "c"}

	got := map[string][]informer.ObjectName{"initial list": wqTake(t, q, 2, compareNames)}
	must(lw.Modify(ctx, informer.NewPod("ns", "a", "3", informer.PodLabels(map[string]string{"owner": ""}))))
	got["update"] = wqTake(t, q, 1, compareNames)
	must(lw.Add(ctx, informer.NewPod("ns", "c", "4", informer.PodLabels(map[string]string{"owner": ""}))))
	got["add"] = wqTake(t, q, 1, compareNames)
	must(lw.Delete(ctx, informer.NewPod("ns", "b", "5", informer.PodLabels(map[string]string{"owner": ""}))))
	got["delete"] = wqTake(t, q, 1, compareNames)
	// The relist deletes c (final state unknown) and re-delivers a,
	// unchanged: a resync update, enqueued too.
	wqRelistWithout(t, lw, informer.NewPod("ns", "a", "3", informer.PodLabels(map[string]string{"owner": ""})))
	got["relist"] = wqTake(t, q, 2, compareNames)

	want := map[string][]informer.ObjectName{
		"initial list": {a, b},
		"update":       {a},
		"add":          {c},
		"delete":       {b},
		"relist":       {a, c},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enqueued names (-want +got):\n%s", diff)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items left in the queue", n)
	}
}

// ownerKey is a controller's own key: the object that owns a pod.
type ownerKey struct{ Namespace, Owner string }

func compareOwners(a, b ownerKey) int {
	return strings.Compare(a.Namespace+"/"+a.Owner, b.Namespace+"/"+b.Owner)
}

func TestEnqueueWithKeyUsesTheLastKnownObject(t *testing.T) {
	t.Cleanup(informer.ExpectNoGoroutineLeak(t)) // runs last, once everything stopped
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ownerKey]())
	t.Cleanup(q.ShutDown)
	byOwner := func(pod *corev1.Pod) ownerKey { return ownerKey{pod.Namespace, pod.Labels["owner"]} }
	// a and b share an owner: the queue holds their key once.
	lw := wqInformer(t, informer.EnqueueWithKey[*corev1.Pod](q, byOwner),
		informer.NewPod("ns", "a", "1", informer.PodLabels(map[string]string{"owner": "x"})), informer.NewPod("ns", "b", "2", informer.PodLabels(map[string]string{"owner": "x"})), informer.NewPod("ns", "c", "3", informer.PodLabels(map[string]string{"owner": "y"})))
	ctx := context.Background()
	x, y, z := ownerKey{"ns", "x"}, ownerKey{"ns", "y"}, ownerKey{"ns", "z"}

	got := map[string][]ownerKey{"initial list": wqTake(t, q, 2, compareOwners)}
	// An update enqueues the new state's key.
	if err := lw.Modify(ctx, informer.NewPod("ns", "a", "4", informer.PodLabels(map[string]string{"owner": "z"}))); err != nil {
		t.Fatal(err)
	}
	got["update"] = wqTake(t, q, 1, compareOwners)
	// A deletion with an unknown final state enqueues the key of the last
	// state the cache held (owner y), as a watch deletion does with the
	// state it carries.
	wqRelistWithout(t, lw, informer.NewPod("ns", "a", "4", informer.PodLabels(map[string]string{"owner": "z"})), informer.NewPod("ns", "b", "2", informer.PodLabels(map[string]string{"owner": "x"})))
	got["relist"] = wqTake(t, q, 3, compareOwners)
	if err := lw.Delete(ctx, informer.NewPod("ns", "b", "5", informer.PodLabels(map[string]string{"owner": "x"}))); err != nil {
		t.Fatal(err)
	}
	got["delete"] = wqTake(t, q, 1, compareOwners)

	want := map[string][]ownerKey{
		"initial list": {x, y},
		"update":       {z},
		"relist":       {x, y, z}, // c's tombstone, then a and b unchanged
		"delete":       {x},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enqueued keys (-want +got):\n%s", diff)
	}
}

func TestEnqueueCallsDirectly(t *testing.T) {
	// The handler funcs work without an informer, on any TypedInterface.
	q := workqueue.NewTyped[informer.ObjectName]()
	defer q.ShutDown()
	h := informer.Enqueue[*corev1.Pod](q)
	h.OnAdd(informer.NewPod("ns", "a", "1", informer.PodLabels(map[string]string{"owner": ""})), true)
	h.OnUpdate(informer.NewPod("ns", "b", "1", informer.PodLabels(map[string]string{"owner": ""})), informer.NewPod("ns", "b", "2", informer.PodLabels(map[string]string{"owner": ""})))
	h.OnDelete(informer.DeletedObject[*corev1.Pod]{
		Name: informer.ObjectName{Namespace: "ns", Name: "c"}, Object: informer.NewPod("ns", "c", "3", informer.PodLabels(map[string]string{"owner": ""})), FinalStateUnknown: true,
	})
	got := wqTake(t, q, 3, compareNames)
	want := []informer.ObjectName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}, {Namespace: "ns", Name: "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enqueued names (-want +got):\n%s", diff)
	}
	// Adding to a queue that shut down does nothing.
	q.ShutDown()
	h.OnAdd(informer.NewPod("ns", "d", "1", informer.PodLabels(map[string]string{"owner": ""})), false)
	if n := q.Len(); n != 0 {
		t.Errorf("queue length after ShutDown and an add = %d, want 0", n)
	}
}
