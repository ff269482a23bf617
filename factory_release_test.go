package informer_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer"
)

func TestFactoryReleaseStopsOneInformer(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(corev1.SchemeGroupVersion.WithResource("nodes"), corev1.SchemeGroupVersion.WithKind("Node"), true)
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	nodes := must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{}))
	var podEvents atomic.Int64
	_, err := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(*corev1.Pod, bool) { podEvents.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	if err := informer.Release(f, pods); err != nil {
		t.Fatal(err)
	}
	if !pods.IsStopped() || nodes.IsStopped() {
		t.Errorf("after Release: pods stopped %v (want true), nodes stopped %v (want false)", pods.IsStopped(), nodes.IsStopped())
	}
	if err := informer.Release(f, pods); err == nil {
		t.Error("a second Release of the same informer succeeded")
	}
	// Released: its handlers get nothing more.
	srv.Create(podsResource, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}})
	// A later For builds a new informer, which runs at the next Start and
	// sees the pod.
	again := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	if again == pods {
		t.Fatal("For returned the released informer")
	}
	f.Start(ctx)
	synced, err := f.WaitForCacheSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodeKey := informer.InformerKey{Type: nodeType, Resource: corev1.SchemeGroupVersion.WithResource("nodes")}
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: true, nodeKey: true}, synced); diff != "" {
		t.Errorf("WaitForCacheSync after Release and For (-want +got):\n%s", diff)
	}
	if _, err := again.Lister().Get("ns/p1"); err != nil {
		t.Errorf("the new informer: %v", err)
	}
	if n := podEvents.Load(); n != 0 {
		t.Errorf("the released informer's handler got %d adds after Release", n)
	}

	// An informer never started is stopped by Release.
	unstarted := must[*informer.Informer[*corev1.ConfigMap]](t)(informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{}))
	if err := informer.Release(f, unstarted); err != nil {
		t.Fatal(err)
	}
	if !unstarted.IsStopped() {
		t.Error("Release left an unstarted informer startable")
	}
	f.Shutdown()
	checkGoroutines()
}

func TestFactoryReleaseEndsAWaitForCacheSync(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true) // nodes are not served: never synced
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	nodes := must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{}))
	f.Start(ctx)
	type result struct {
		synced map[informer.InformerKey]bool
		err    error
	}
	waited := make(chan result, 1)
	go func() {
		synced, err := f.WaitForCacheSync(ctx)
		waited <- result{synced, err}
	}()
	if err := informer.Release(f, nodes); err != nil {
		t.Fatal(err)
	}
	r := <-waited // would wait forever for the node informer
	nodeKey := informer.InformerKey{Type: nodeType, Resource: corev1.SchemeGroupVersion.WithResource("nodes")}
	if r.synced[nodeKey] || !r.synced[podKey] && r.err == nil {
		t.Errorf("WaitForCacheSync = %v, %v", r.synced, r.err)
	}
	// Without the released informer, the factory is synced.
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	f.Shutdown()
	checkGoroutines()
}

func TestReleaseAndForRejectNilArguments(t *testing.T) {
	f := newFactory(t, offline, informer.FactoryOptions{})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	_, forErr := informer.For((*informer.Factory)(nil), informer.InformerOptions[*corev1.Pod]{})
	got := []string{
		informer.ErrText(informer.Release(f, (*informer.Informer[*corev1.Pod])(nil))),
		informer.ErrText(informer.Release(nil, pods)),
		informer.ErrText(forErr),
	}
	want := []string{
		"release: the informer is nil",
		"release: the factory is nil",
		"informer for *v1.Pod: the factory is nil",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Release errors (-want +got):\n%s", diff)
	}
	if pods.IsStopped() {
		t.Error("a rejected Release stopped the informer")
	}
}

// blockingTransport holds every request until unblock is closed, then
// fails it; requests receives each request as it arrives.
type blockingTransport struct {
	requests chan *http.Request
	unblock  chan struct{}
}

func (b *blockingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case b.requests <- req:
	default:
	}
	<-b.unblock
	return nil, errors.New("blocked")
}

// doneWatcher is a context that says when its Done method is first called:
// a call that selects on it has started waiting.
type doneWatcher struct {
	context.Context
	once   sync.Once
	called chan struct{}
}

func newDoneWatcher(ctx context.Context) *doneWatcher {
	return &doneWatcher{Context: ctx, called: make(chan struct{})}
}

func (w *doneWatcher) Done() <-chan struct{} {
	w.once.Do(func() { close(w.called) })
	return w.Context.Done()
}

func TestFactoryReleaseSaysAWaitEndedBecauseOfIt(t *testing.T) {
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	// The list never answers until the end, so the informer neither syncs
	// nor fails before it is released.
	transport := &blockingTransport{requests: make(chan *http.Request, 1), unblock: make(chan struct{})}
	f := newFactory(t, offline, informer.FactoryOptions{HTTPClient: &http.Client{Transport: transport}})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(context.Background())
	<-transport.requests
	type result struct {
		synced map[informer.InformerKey]bool
		err    error
	}
	waited := make(chan result, 1)
	ctx := newDoneWatcher(context.Background())
	go func() {
		synced, err := f.WaitForCacheSync(ctx)
		waited <- result{synced, err}
	}()
	<-ctx.called // WaitForCacheSync is waiting for the informer
	released := make(chan error, 1)
	go func() { released <- informer.Release(f, pods) }()
	r := <-waited // ends once the informer is released, before its Run returns
	close(transport.unblock)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: false}, r.synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("informers not synced: *v1.Pod v1/pods (released)", informer.ErrText(r.err)); diff != "" {
		t.Errorf("WaitForCacheSync error (-want +got):\n%s", diff)
	}
	var wrapped interface{ Unwrap() []error }
	if errors.As(r.err, &wrapped) && slices.Contains(wrapped.Unwrap(), nil) {
		t.Errorf("WaitForCacheSync error wraps nil: %#v", wrapped.Unwrap())
	}
	f.Shutdown()
	checkGoroutines()
}
