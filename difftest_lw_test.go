package informer

// The fake API server of the informer harness, as each side's
// ListerWatcher: an informertest.FakeListerWatcher behind an adapter that hands out new
// objects on every list, and client-go's interface for client-go's side.

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer/informertest"
)

// diffListerWatcher serves one side from an informertest.FakeListerWatcher. Like an API
// server, every List and every streamed list returns new objects, so that a
// transform that changes objects in place never sees one twice. It declares
// streaming lists unsupported unless streaming is set, for both sides alike.
type diffListerWatcher struct {
	fake      *informertest.FakeListerWatcher[*corev1.Pod]
	streaming bool
}

func (lw diffListerWatcher) IsWatchListSemanticsUnSupported() bool { return !lw.streaming }

// List implements this library's ListerWatcher.
func (lw diffListerWatcher) List(ctx context.Context, options metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	res, err := lw.fake.List(ctx, options)
	if err != nil {
		return nil, err
	}
	items := make([]*corev1.Pod, len(res.Items))
	for i, p := range res.Items {
		items[i] = p.DeepCopy()
	}
	return &ListResult[*corev1.Pod]{Items: items, ResourceVersion: res.ResourceVersion, Continue: res.Continue}, nil
}

// Watch implements this library's ListerWatcher.
func (lw diffListerWatcher) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.fake.Watch(ctx, options)
	if err != nil || options.SendInitialEvents == nil || !*options.SendInitialEvents {
		return w, err
	}
	return newDiffCopyingWatch(w), nil
}

// diffCopyingWatch passes on the events of a streamed list with a copy of
// each object: the fake streams the objects of its list themselves.
type diffCopyingWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newDiffCopyingWatch(inner watch.Interface) *diffCopyingWatch {
	w := &diffCopyingWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.pump()
	return w
}

func (w *diffCopyingWatch) pump() {
	defer close(w.out)
	for ev := range w.inner.ResultChan() {
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			ev.Object = pod.DeepCopy()
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *diffCopyingWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch; the pump exits once the fake has closed its side.
func (w *diffCopyingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// diffClientGoLW is diffListerWatcher as client-go's ListerWatcher.
type diffClientGoLW struct{ diffListerWatcher }

var _ cache.ListerWatcherWithContext = diffClientGoLW{}

func (lw diffClientGoLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	res, err := lw.fake.List(ctx, options)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue}}
	for _, p := range res.Items {
		list.Items = append(list.Items, *p.DeepCopy())
	}
	return list, nil
}

func (lw diffClientGoLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return lw.diffListerWatcher.Watch(ctx, options)
}

func (lw diffClientGoLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

func (lw diffClientGoLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}
