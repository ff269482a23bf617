package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// informerUnderTest is one implementation's informer, built over fake
// lister-watchers, with counting handlers registered, not yet running.
type informerUnderTest struct {
	// watches serves the informer's watch; the harness releases it.
	watches   *watchScript
	run       func(ctx context.Context)
	hasSynced func() bool
	storeLen  func() int
}

// newInformerFunc builds one implementation's informer with the namespace
// index: its list holds pods 0..listPods-1 at listRV and its first watch
// delivers events once released. Building includes generating the list, so
// callers start timing only after it returns.
type newInformerFunc func(listPods int, listRV string, events []watch.Event, handlers []*countingHandler) (*informerUnderTest, error)

// start runs the informer in a goroutine; the returned stop cancels it and
// waits until Run has returned. stop may be called more than once.
func (it *informerUnderTest) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		it.run(ctx)
	}()
	return func() {
		it.watches.release() // a Watch call still waiting must return
		cancel()
		<-done
	}
}

// waitFor polls cond until it holds, or fails after timeout.
func waitFor(what string, cond func() bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// newClientGoInformer builds client-go's shared index informer.
func newClientGoInformer(listPods int, listRV string, events []watch.Event, handlers []*countingHandler) (*informerUnderTest, error) {
	watches := newWatchScript(events)
	return buildClientGoInformer(newClientGoListerWatcher(newPodList(listPods, listRV), watches), watches, nil, handlers)
}

// buildClientGoInformer builds client-go's shared index informer over lw,
// whose watches come from watches, with the namespace index, transform
// (when not nil) and handlers.
func buildClientGoInformer(lw cache.ListerWatcher, watches *watchScript, transform cache.TransformFunc, handlers []*countingHandler) (*informerUnderTest, error) {
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			return nil, fmt.Errorf("client-go: setting the transform: %w", err)
		}
	}
	for _, h := range handlers {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { h.onAdd() },
			UpdateFunc: func(_, _ any) { h.onUpdate() },
			DeleteFunc: func(any) { h.onDelete() },
		})
		if err != nil {
			return nil, fmt.Errorf("client-go: adding a handler: %w", err)
		}
	}
	return &informerUnderTest{
		watches:   watches,
		run:       inf.RunWithContext,
		hasSynced: inf.HasSynced,
		storeLen:  func() int { return len(inf.GetStore().ListKeys()) },
	}, nil
}

// newOurInformer builds our informer.
func newOurInformer(listPods int, listRV string, events []watch.Event, handlers []*countingHandler) (*informerUnderTest, error) {
	watches := newWatchScript(events)
	return buildOurInformer(newOurListerWatcher(newPods(listPods), listRV, watches), watches, nil, false, handlers)
}

// buildOurInformer builds our informer over lw, whose watches come from
// watches, with the namespace index, transform (when not nil), deduplication
// (Deduplicate) and handlers.
func buildOurInformer(lw informer.ListerWatcher[*corev1.Pod], watches *watchScript, transform informer.TransformFunc[*corev1.Pod], dedup bool, handlers []*countingHandler) (*informerUnderTest, error) {
	inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
		Indexers:    map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
		Resource:    corev1.SchemeGroupVersion.WithResource("pods"),
		Transform:   transform,
		Deduplicate: new(dedup),
	})
	if err != nil {
		return nil, err
	}
	for _, h := range handlers {
		_, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod, bool) { h.onAdd() },
			UpdateFunc: func(_, _ *corev1.Pod) { h.onUpdate() },
			DeleteFunc: func(informer.DeletedObject[*corev1.Pod]) { h.onDelete() },
		})
		if err != nil {
			return nil, fmt.Errorf("ours: adding a handler: %w", err)
		}
	}
	return &informerUnderTest{
		watches:   watches,
		run:       inf.Run,
		hasSynced: inf.HasSynced,
		storeLen:  func() int { objs, _ := inf.Lister().List(nil); return len(objs) },
	}, nil
}
