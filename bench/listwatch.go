package main

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer"
)

// scriptedWatch is a watch.Interface over a channel that the harness fills
// before the watch is handed out. The channel is never closed: the informer
// stops watching when its context ends.
type scriptedWatch struct {
	events   chan watch.Event
	stopOnce sync.Once
	stopped  chan struct{}
}

// newScriptedWatch returns a watch whose channel already holds events.
func newScriptedWatch(events []watch.Event) *scriptedWatch {
	w := &scriptedWatch{events: make(chan watch.Event, len(events)), stopped: make(chan struct{})}
	for _, e := range events {
		w.events <- e
	}
	return w
}

// Stop implements watch.Interface.
func (w *scriptedWatch) Stop() { w.stopOnce.Do(func() { close(w.stopped) }) }

// ResultChan implements watch.Interface.
func (w *scriptedWatch) ResultChan() <-chan watch.Event { return w.events }

// watchScript serves the watches of one informer: the first Watch call
// waits until the harness releases it and then returns the pre-filled watch;
// any later call (a re-watch) gets a watch that stays idle.
type watchScript struct {
	first    *scriptedWatch
	opened   atomic.Bool
	started  chan struct{} // closed when the first Watch call arrives
	released chan struct{} // closed by release
	once     sync.Once
}

// newWatchScript returns a script whose first watch delivers events.
func newWatchScript(events []watch.Event) *watchScript {
	return &watchScript{
		first:    newScriptedWatch(events),
		started:  make(chan struct{}),
		released: make(chan struct{}),
	}
}

// release lets the first Watch call return. It may be called more than once.
func (s *watchScript) release() { s.once.Do(func() { close(s.released) }) }

// open serves one Watch call.
func (s *watchScript) open(ctx context.Context) (watch.Interface, error) {
	if s.opened.Swap(true) {
		return newScriptedWatch(nil), nil
	}
	close(s.started)
	select {
	case <-s.released:
		return s.first, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// clientGoListerWatcher is a cache.ListerWatcher for client-go's informer:
// the first list hands over a PodList, later lists are empty at the same
// resource version, and watches come from a watchScript.
type clientGoListerWatcher struct {
	mu      sync.Mutex
	list    *corev1.PodList
	rv      string
	watches *watchScript
}

// newClientGoListerWatcher takes ownership of list.
func newClientGoListerWatcher(list *corev1.PodList, watches *watchScript) *clientGoListerWatcher {
	return &clientGoListerWatcher{list: list, rv: list.ResourceVersion, watches: watches}
}

// List implements cache.Lister.
func (lw *clientGoListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// ListWithContext implements cache.ListerWithContext. The list is handed
// over on the first call, so that the harness keeps no reference to it.
func (lw *clientGoListerWatcher) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	list := lw.list
	lw.list = nil
	if list == nil {
		list = &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: lw.rv}}
	}
	return list, nil
}

// Watch implements cache.Watcher.
func (lw *clientGoListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *clientGoListerWatcher) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return lw.watches.open(ctx)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that this
// source cannot stream an initial list, so that it lists and then watches
// (with the WatchListClient gate on by default it would otherwise wait for
// an initial-events bookmark that never comes).
func (lw *clientGoListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }

// ourListerWatcher is an informer.ListerWatcher for our informer with the
// same behaviour as clientGoListerWatcher.
type ourListerWatcher struct {
	mu      sync.Mutex
	items   []*corev1.Pod
	rv      string
	watches *watchScript
}

// newOurListerWatcher takes ownership of items.
func newOurListerWatcher(items []*corev1.Pod, resourceVersion string, watches *watchScript) *ourListerWatcher {
	return &ourListerWatcher{items: items, rv: resourceVersion, watches: watches}
}

// List implements informer.ListerWatcher. The items are handed over on the
// first call, so that the harness keeps no reference to them.
func (lw *ourListerWatcher) List(context.Context, metav1.ListOptions) (*informer.ListResult[*corev1.Pod], error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	items := lw.items
	lw.items = nil
	return &informer.ListResult[*corev1.Pod]{Items: items, ResourceVersion: lw.rv}, nil
}

// Watch implements informer.ListerWatcher.
func (lw *ourListerWatcher) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return lw.watches.open(ctx)
}

// IsWatchListSemanticsUnSupported makes our reflector list and then watch,
// as client-go's does with its fake.
func (lw *ourListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }
