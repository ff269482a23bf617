package informer

// The two implementations the informer harness compares, behind one
// interface: client-go's SharedIndexInformer and this library's Informer,
// each fed by its own informertest.FakeListerWatcher and observed by recording handlers.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/informertest"
)

// diffNote is one handler call as the harness compares it.
type diffNote struct {
	Callback string // "add", "update" or "delete"
	Key      string
	UID      string
	RV       string
	// OldUID and OldRV are the old state of an update.
	OldUID, OldRV   string
	IsInInitialList bool
	// FinalStateUnknown marks a deletion inferred from a relist.
	FinalStateUnknown bool
	// SameObject marks an update whose old and new object are one object:
	// a periodic resync.
	SameObject bool
	// Transformed is the transform mark of the (new) object.
	Transformed string
}

func diffNoteOf(callback, key string, obj *corev1.Pod) diffNote {
	n := diffNote{Callback: callback, Key: key}
	if obj == nil {
		n.UID = "<no object>"
		return n
	}
	n.UID, n.RV, n.Transformed = string(obj.UID), obj.ResourceVersion, obj.Annotations[diffTransformMark]
	return n
}

func diffUpdateNote(oldObj, newObj *corev1.Pod) diffNote {
	n := diffNoteOf("update", KeyOf(newObj), newObj)
	n.OldUID, n.OldRV, n.SameObject = string(oldObj.UID), oldObj.ResourceVersion, oldObj == newObj
	return n
}

// diffRecorder records the calls one handler receives. When a gate is
// armed, the next call is recorded and then blocks until the gate is
// released: a handler busy in a call while events pile up.
type diffRecorder struct {
	mu    sync.Mutex
	notes []diffNote
	gate  chan struct{}
}

func (r *diffRecorder) record(n diffNote) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	gate := r.gate
	r.gate = nil
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

// arm makes the next call block until the returned channel is closed.
func (r *diffRecorder) arm() chan struct{} {
	gate := make(chan struct{})
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()
	return gate
}

func (r *diffRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes)
}

func (r *diffRecorder) recorded() []diffNote {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notes)
}

// diffOurHandler is a recorder as this library's handler.
type diffOurHandler struct{ *diffRecorder }

func (h diffOurHandler) OnAdd(obj *corev1.Pod, isInInitialList bool) {
	n := diffNoteOf("add", KeyOf(obj), obj)
	n.IsInInitialList = isInInitialList
	h.record(n)
}

func (h diffOurHandler) OnUpdate(oldObj, newObj *corev1.Pod) {
	h.record(diffUpdateNote(oldObj, newObj))
}

func (h diffOurHandler) OnDelete(d DeletedObject[*corev1.Pod]) {
	n := diffNoteOf("delete", d.Name.String(), d.Object)
	n.FinalStateUnknown = d.FinalStateUnknown
	h.record(n)
}

// diffClientGoHandler is a recorder as client-go's handler.
type diffClientGoHandler struct{ *diffRecorder }

func (h diffClientGoHandler) OnAdd(obj any, isInInitialList bool) {
	pod := obj.(*corev1.Pod)
	n := diffNoteOf("add", KeyOf(pod), pod)
	n.IsInInitialList = isInInitialList
	h.record(n)
}

func (h diffClientGoHandler) OnUpdate(oldObj, newObj any) {
	h.record(diffUpdateNote(oldObj.(*corev1.Pod), newObj.(*corev1.Pod)))
}

func (h diffClientGoHandler) OnDelete(obj any) {
	switch d := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		pod, _ := d.Obj.(*corev1.Pod)
		n := diffNoteOf("delete", d.Key, pod)
		n.FinalStateUnknown = true
		h.record(n)
	case *corev1.Pod:
		h.record(diffNoteOf("delete", KeyOf(d), d))
	default:
		h.record(diffNote{Callback: "delete", Key: "<unexpected object>"})
	}
}

// diffInformerConfig is what both informers are built with.
type diffInformerConfig struct {
	ResyncPeriod time.Duration
	Transform    bool
	// Streaming makes both sides use streaming lists (watch-list) instead
	// of list+watch.
	Streaming bool
}

// diffInformerSide is one implementation under test.
type diffInformerSide interface {
	// fake is the side's scripted API server.
	fake() *informertest.FakeListerWatcher[*corev1.Pod]
	// run runs the informer until ctx is done.
	run(ctx context.Context)
	addHandler(r *diffRecorder, resync *time.Duration) (handle any, err error)
	removeHandler(handle any, shutdown bool) error
	handlerSynced(handle any) bool
	hasSynced() bool
	lastSyncResourceVersion() string
	storeResourceVersion() string
	stored() []diffStored
	// errors returns (and forgets) the errors the informer reported to its
	// watch error handler.
	errors() *diffErrorLog
}

// diffErrorLog records the errors a reflector reports to its watch error
// handler, by HTTP status code. Setting a handler also keeps client-go's
// default one away: it reports through utilruntime.HandleError, whose rate
// limiter sleeps for a time computed from a process-wide timestamp, which in
// a synctest bubble (whose clock starts in 2000) is arbitrary.
type diffErrorLog struct {
	mu    sync.Mutex
	codes []string
}

func (l *diffErrorLog) add(err error) {
	code := "not an API error"
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code = strconv.Itoa(int(status.Status().Code))
	}
	l.mu.Lock()
	l.codes = append(l.codes, code)
	l.mu.Unlock()
}

// take returns the errors recorded since the last call.
func (l *diffErrorLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	codes := l.codes
	l.codes = nil
	return codes
}

// diffOurSide is this library's Informer.
type diffOurSide struct {
	lw   *informertest.FakeListerWatcher[*corev1.Pod]
	inf  *Informer[*corev1.Pod]
	errs diffErrorLog
}

func newDiffOurSide(t testing.TB, cfg diffInformerConfig) *diffOurSide {
	fake := informertest.NewFakeListerWatcher[*corev1.Pod]()
	opts := InformerOptions[*corev1.Pod]{ResyncPeriod: new(cfg.ResyncPeriod), Name: "difftest"}
	if cfg.Transform {
		opts.Transform = diffTransformPod
	}
	o := &diffOurSide{lw: fake, inf: MustNewInformer(t, diffListerWatcher{fake, cfg.Streaming}, opts)}
	// Handlers compare object identity here, and on a relist this library
	// passes an unchanged object's cached copy as both old and new, where
	// client-go passes the new copy (docs/semantics.md; tested in
	// relist_reuse_test.go): off here, so that the rest is compared.
	o.inf.queue.reuseCached = false
	_ = o.inf.setWatchErrorHandler(func(_ context.Context, err error) { o.errs.add(err) })
	return o
}

func (o *diffOurSide) errors() *diffErrorLog { return &o.errs }

func (o *diffOurSide) fake() *informertest.FakeListerWatcher[*corev1.Pod] { return o.lw }
func (o *diffOurSide) run(ctx context.Context)                            { o.inf.Run(ctx) }
func (o *diffOurSide) hasSynced() bool                                    { return o.inf.HasSynced() }
func (o *diffOurSide) lastSyncResourceVersion() string                    { return o.inf.LastSyncResourceVersion() }
func (o *diffOurSide) storeResourceVersion() string {
	return o.inf.indexer.LastStoreSyncResourceVersion()
}

func (o *diffOurSide) addHandler(r *diffRecorder, resync *time.Duration) (any, error) {
	return o.inf.AddEventHandlerWithOptions(diffOurHandler{r}, HandlerOptions{ResyncPeriod: resync, Logger: diffQuietLogger()})
}

func (o *diffOurSide) removeHandler(handle any, shutdown bool) error {
	if shutdown {
		return o.inf.ShutDownEventHandler(handle.(*Registration))
	}
	return o.inf.RemoveEventHandler(handle.(*Registration))
}

func (o *diffOurSide) handlerSynced(handle any) bool { return handle.(*Registration).HasSynced() }

func (o *diffOurSide) stored() []diffStored {
	return diffSortStored(o.inf.indexer.List())
}

// diffClientGoSide is client-go's SharedIndexInformer with its default
// feature gates.
type diffClientGoSide struct {
	lw   *informertest.FakeListerWatcher[*corev1.Pod]
	inf  cache.SharedIndexInformer
	errs diffErrorLog
}

func newDiffClientGoSide(cfg diffInformerConfig) *diffClientGoSide {
	fake := informertest.NewFakeListerWatcher[*corev1.Pod]()
	inf := cache.NewSharedIndexInformerWithOptions(diffClientGoLW{diffListerWatcher{fake, cfg.Streaming}}, &corev1.Pod{},
		cache.SharedIndexInformerOptions{ResyncPeriod: cfg.ResyncPeriod})
	if cfg.Transform {
		_ = inf.SetTransform(func(obj any) (any, error) { return diffTransformPod(obj.(*corev1.Pod)) })
	}
	c := &diffClientGoSide{lw: fake, inf: inf}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { c.errs.add(err) })
	return c
}

func (c *diffClientGoSide) errors() *diffErrorLog { return &c.errs }

func (c *diffClientGoSide) fake() *informertest.FakeListerWatcher[*corev1.Pod] { return c.lw }
func (c *diffClientGoSide) run(ctx context.Context)                            { c.inf.RunWithContext(ctx) }
func (c *diffClientGoSide) hasSynced() bool                                    { return c.inf.HasSynced() }
func (c *diffClientGoSide) lastSyncResourceVersion() string                    { return c.inf.LastSyncResourceVersion() }
func (c *diffClientGoSide) storeResourceVersion() string {
	return c.inf.GetIndexer().LastStoreSyncResourceVersion()
}

func (c *diffClientGoSide) addHandler(r *diffRecorder, resync *time.Duration) (any, error) {
	return c.inf.AddEventHandlerWithOptions(diffClientGoHandler{r}, cache.HandlerOptions{ResyncPeriod: resync, Logger: diffQuietLogger()})
}

func (c *diffClientGoSide) removeHandler(handle any, shutdown bool) error {
	if shutdown {
		return cache.ShutDownEventHandler(c.inf, handle.(cache.ResourceEventHandlerRegistration))
	}
	return c.inf.RemoveEventHandler(handle.(cache.ResourceEventHandlerRegistration))
}

func (c *diffClientGoSide) handlerSynced(handle any) bool {
	return handle.(cache.ResourceEventHandlerRegistration).HasSynced()
}

func (c *diffClientGoSide) stored() []diffStored {
	items := c.inf.GetIndexer().List()
	pods := make([]*corev1.Pod, len(items))
	for i, obj := range items {
		pods[i] = obj.(*corev1.Pod)
	}
	return diffSortStored(pods)
}

func diffSortStored(pods []*corev1.Pod) []diffStored {
	out := make([]diffStored, len(pods))
	for i, p := range pods {
		out[i] = diffStored{Key: KeyOf(p), UID: string(p.UID), RV: p.ResourceVersion, Transformed: p.Annotations[diffTransformMark]}
	}
	slices.SortFunc(out, func(a, b diffStored) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// diffQuietContext returns ctx with a logger that discards everything.
func diffQuietContext(ctx context.Context) context.Context {
	return klog.NewContext(ctx, *diffQuietLogger())
}
