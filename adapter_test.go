package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// adEvent is one call of a client-go handler, with the Go type of the value
// it received, comparable with cmp.Diff.
type adEvent struct {
	Op      string // "add", "update" or "delete"
	Type    string // the Go type of the (new or deleted) value
	Key     string // the object's key, or a tombstone's Key
	RV      string // the (new, deleted or tombstoned) object's resource version
	OldRV   string // update only
	Initial bool   // add only
}

// adRecorder records the calls of a cache.ResourceEventHandlerFuncs and the
// objects it received, by key.
type adRecorder struct {
	mu      sync.Mutex
	events  []adEvent
	objects map[string]any
	changed chan struct{}
	// block, if set, is received from before each add returns.
	block chan struct{}
}

func newAdRecorder() *adRecorder {
	return &adRecorder{objects: map[string]any{}, changed: make(chan struct{})}
}

// funcs returns the recorder as client-go's most common handler type, which
// does not see isInInitialList.
func (r *adRecorder) funcs() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.onAdd(obj, false) },
		UpdateFunc: r.onUpdate,
		DeleteFunc: r.onDelete,
	}
}

// detailed returns the recorder as a handler that sees isInInitialList.
func (r *adRecorder) detailed() cache.ResourceEventHandlerDetailedFuncs {
	return cache.ResourceEventHandlerDetailedFuncs{AddFunc: r.onAdd, UpdateFunc: r.onUpdate, DeleteFunc: r.onDelete}
}

func (r *adRecorder) onAdd(obj any, isInInitialList bool) {
	pod := obj.(*corev1.Pod)
	r.record(adEvent{Op: "add", Type: fmt.Sprintf("%T", obj), Key: KeyOf(pod), RV: pod.ResourceVersion, Initial: isInInitialList}, obj)
	if r.block != nil {
		<-r.block
	}
}

func (r *adRecorder) onUpdate(oldObj, newObj any) {
	pod := newObj.(*corev1.Pod)
	r.record(adEvent{Op: "update", Type: fmt.Sprintf("%T", newObj), Key: KeyOf(pod), RV: pod.ResourceVersion, OldRV: oldObj.(*corev1.Pod).ResourceVersion}, newObj)
}

func (r *adRecorder) onDelete(obj any) {
	e := adEvent{Op: "delete", Type: fmt.Sprintf("%T", obj)}
	switch v := obj.(type) {
	case *corev1.Pod:
		e.Key, e.RV = KeyOf(v), v.ResourceVersion
	case cache.DeletedFinalStateUnknown:
		e.Key, e.RV = v.Key, v.Obj.(*corev1.Pod).ResourceVersion
		obj = v.Obj
	}
	r.record(e, obj)
}

func (r *adRecorder) record(e adEvent, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.objects[e.Key] = obj
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor waits until n events were recorded and returns them.
func (r *adRecorder) waitFor(t *testing.T, n int) []adEvent {
	t.Helper()
	ctx := plCtx(t)
	for {
		r.mu.Lock()
		events, changed := slices.Clone(r.events), r.changed
		r.mu.Unlock()
		if len(events) >= n {
			return events
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %d events, got %v", n, events)
		}
	}
}

// expect waits for len(want) events and compares them all.
func (r *adRecorder) expect(t *testing.T, want ...adEvent) {
	t.Helper()
	if diff := cmp.Diff(want, r.waitFor(t, len(want))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// object returns the last object recorded for key.
func (r *adRecorder) object(key string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.objects[key]
}

// adRun runs the adapter with Run(stopCh) and returns a stop function that
// closes stopCh and waits for Run to return (its goroutine check, like plRun's, runs
// at the end of the test too).
func adRun(t *testing.T, sii cache.SharedIndexInformer) (stopCh chan struct{}, stop func()) {
	t.Helper()
	checkGoroutines := ExpectNoGoroutineLeak(t)
	stopCh = make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sii.Run(stopCh)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopCh)
			<-done
			checkGoroutines()
		})
	}
	t.Cleanup(stop)
	return stopCh, stop
}

const podType = "*v1.Pod"

func TestSharedIndexInformerAdapterDeliversAsClientGo(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	a1, b2 := NewPod("ns", "a", "1"), NewPod("ns", "b", "2")
	lw.SetList("10", a1, b2)
	sii := AsSharedIndexInformer(inf)
	rec := newAdRecorder()
	reg, err := sii.AddEventHandler(rec.funcs())
	plMust(t, err)
	stopCh, stop := adRun(t, sii)
	if !cache.WaitForCacheSync(stopCh, sii.HasSynced, reg.HasSynced) {
		t.Fatal("WaitForCacheSync returned false")
	}
	rec.expect(t,
		adEvent{Op: "add", Type: podType, Key: "ns/a", RV: "1"},
		adEvent{Op: "add", Type: podType, Key: "ns/b", RV: "2"})

	ctx := plCtx(t)
	a3, c4, b5 := NewPod("ns", "a", "3"), NewPod("ns", "c", "4"), NewPod("ns", "b", "5")
	plMust(t, lw.Modify(ctx, a3))
	plMust(t, lw.Add(ctx, c4))
	plMust(t, lw.Delete(ctx, b5))
	// A relist that misses c's deletion: c leaves as a tombstone, and the
	// unchanged a is a resync update.
	lw.SetList("20", a3)
	plMust(t, lw.FailWatch(ctx, apierrors.NewResourceExpired("too old resource version")))
	rec.expect(t,
		adEvent{Op: "add", Type: podType, Key: "ns/a", RV: "1"},
		adEvent{Op: "add", Type: podType, Key: "ns/b", RV: "2"},
		adEvent{Op: "update", Type: podType, Key: "ns/a", RV: "3", OldRV: "1"},
		adEvent{Op: "add", Type: podType, Key: "ns/c", RV: "4"},
		adEvent{Op: "delete", Type: podType, Key: "ns/b", RV: "5"},
		adEvent{Op: "delete", Type: "cache.DeletedFinalStateUnknown", Key: "ns/c", RV: "4"},
		adEvent{Op: "update", Type: podType, Key: "ns/a", RV: "3", OldRV: "3"})

	// The handler got the very object cached, not a copy, and it equals
	// the one sent (the fake lister-watcher hands out copies).
	cached, _, _ := sii.GetStore().GetByKey("ns/a")
	if got := rec.object("ns/a"); got != cached {
		t.Errorf("ns/a: handler got %p, want the cached object, %p", got, cached)
	}
	if diff := cmp.Diff(a3, cached); diff != "" {
		t.Errorf("GetStore().GetByKey(ns/a) differs from the object sent (-sent +cached):\n%s", diff)
	}
	// The reflector records the relist's resource version after it has
	// handed the relist to the informer, so the handler may see the relist
	// first: wait for it.
	Eventually(t, `LastSyncResourceVersion() == "20"`, func() bool { return sii.LastSyncResourceVersion() == "20" })
	if got := sii.GetController().LastSyncResourceVersion(); got != "20" {
		t.Errorf("GetController().LastSyncResourceVersion() = %q, want 20", got)
	}
	if sii.IsStopped() {
		t.Error("IsStopped() = true while running")
	}
	stop()
	if !sii.IsStopped() {
		t.Error("IsStopped() = false after Run returned")
	}
	if _, err := sii.AddEventHandler(rec.funcs()); err == nil {
		t.Error("AddEventHandler on a stopped informer succeeded")
	}
}

func TestSharedIndexInformerAdapterIndexers(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	byNode := func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}
	onNode := func(namespace, name, rv, node string) *corev1.Pod {
		p := NewPod(namespace, name, rv)
		p.Spec.NodeName = node
		return p
	}
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", onNode("ns", "a", "1", "n1"), onNode("ns", "b", "2", "n2"), onNode("other", "c", "3", "n1"))
	sii := AsSharedIndexInformer(inf)
	plMust(t, sii.AddIndexers(cache.Indexers{"node": byNode}))
	stopCh, _ := adRun(t, sii)
	if !cache.WaitForCacheSync(stopCh, sii.HasSynced) {
		t.Fatal("WaitForCacheSync returned false")
	}
	// Indexes added after Run index the cached objects at once.
	plMust(t, sii.AddIndexers(cache.Indexers{"name": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil
	}}))
	if err := sii.AddIndexers(cache.Indexers{"node": byNode}); err == nil {
		t.Error("adding an index name twice succeeded")
	}

	keysOf := func(objs []any, err error) []string {
		t.Helper()
		plMust(t, err)
		keys := make([]string, 0, len(objs))
		for _, obj := range objs {
			keys = append(keys, KeyOf(obj.(*corev1.Pod)))
		}
		slices.Sort(keys)
		return keys
	}
	got := map[string][]string{
		"node=n1":      keysOf(sii.GetIndexer().ByIndex("node", "n1")),
		"node=n2":      keysOf(sii.GetIndexer().ByIndex("node", "n2")),
		"name=c":       keysOf(sii.GetIndexer().ByIndex("name", "c")),
		"namespace=ns": keysOf(sii.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")),
	}
	want := map[string][]string{
		"node=n1":      {"ns/a", "other/c"},
		"node=n2":      {"ns/b"},
		"name=c":       {"other/c"},
		"namespace=ns": {"ns/a", "ns/b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ByIndex (-want +got):\n%s", diff)
	}
	names := sii.GetIndexer().GetIndexers()
	gotNames := make([]string, 0, len(names))
	for name := range names {
		gotNames = append(gotNames, name)
	}
	slices.Sort(gotNames)
	if diff := cmp.Diff([]string{"name", "namespace", "node"}, gotNames); diff != "" {
		t.Errorf("GetIndexers names (-want +got):\n%s", diff)
	}
}

func TestSharedIndexInformerAdapterSetters(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Name: "pods", DisableWatchList: true})
	a := NewPod("ns", "a", "1")
	a.Annotations = map[string]string{"big": "value"}
	lw.SetList("10", a, NewPod("ns", "not-a-pod", "1"))
	errList := errors.New("list failed")
	lw.FailNextList(errList)
	sii := AsSharedIndexInformer(inf)

	plMust(t, sii.SetTransform(func(obj any) (any, error) {
		pod := obj.(*corev1.Pod)
		if pod.Name == "not-a-pod" {
			return &corev1.ConfigMap{}, nil
		}
		pod.Annotations = nil
		return pod, nil
	}))
	type watchError struct {
		Handler, Reflector, Type string
		IsListError              bool
	}
	var mu sync.Mutex
	var watchErrors []watchError
	record := func(handler string, r *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		watchErrors = append(watchErrors, watchError{handler, r.Name(), r.TypeDescription(), errors.Is(err, errList)})
	}
	plMust(t, sii.SetWatchErrorHandler(func(r *cache.Reflector, err error) { record("plain", r, err) }))
	// The last handler set wins, as in client-go; client-go's default
	// handler accepts the stand-in reflector.
	plMust(t, sii.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		record("with context", r, err)
	}))

	stopCh, _ := adRun(t, sii)
	if !cache.WaitForCacheSync(stopCh, sii.HasSynced) {
		t.Fatal("WaitForCacheSync returned false")
	}
	mu.Lock()
	gotErrors := slices.Clone(watchErrors)
	mu.Unlock()
	want := []watchError{{"with context", "pods", podType, true}}
	if diff := cmp.Diff(want, gotErrors); diff != "" {
		t.Errorf("watch errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a"}, sii.GetStore().ListKeys()); diff != "" {
		t.Errorf("cached keys (-want +got):\n%s", diff)
	}
	cached, _, _ := sii.GetStore().GetByKey("ns/a")
	if got := cached.(*corev1.Pod).Annotations; got != nil {
		t.Errorf("cached annotations = %v, want none (transformed)", got)
	}
	if got := inf.Stats().TransformErrors; got != 1 {
		t.Errorf("TransformErrors = %d, want 1 (the transform's ConfigMap)", got)
	}
	if err := sii.SetTransform(nil); err == nil {
		t.Error("SetTransform after Run succeeded")
	}
	if err := sii.SetWatchErrorHandler(nil); err == nil {
		t.Error("SetWatchErrorHandler after Run succeeded")
	}
	if err := sii.SetWatchErrorHandlerWithContext(nil); err == nil {
		t.Error("SetWatchErrorHandlerWithContext after Run succeeded")
	}
	// A second Run returns at once, and the controller view runs nothing.
	sii.Run(stopCh)
	sii.RunWithContext(context.Background())
	sii.GetController().Run(stopCh)
	sii.GetController().RunWithContext(context.Background())
}
