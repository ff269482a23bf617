package informer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// InformerOptions configures an [Informer].
type InformerOptions[T Object] struct {
	// ResyncPeriod is the default resync period of handlers (0 = none) and
	// the informer's initial resync check period, as client-go's
	// defaultEventHandlerResyncPeriod.
	ResyncPeriod time.Duration
	// Indexers are the cache's secondary indexes.
	Indexers Indexers[T]
	// Transform, if set, is applied once to every object received from the
	// API server before it is cached (see [TransformFunc]).
	Transform TransformFunc[T]
	// Name identifies the informer in logs.
	Name string
	// Resource names the resource in the Lister's NotFound errors.
	Resource schema.GroupResource
	// Clock drives resync scheduling and the reflector's timers. Nil means
	// the real clock; tests pass a fake one.
	Clock clock.WithTicker
	// Backoff, if set, replaces the reflector's backoff between failed list
	// and watch attempts (see [ReflectorOptions]).
	Backoff *wait.Backoff
	// DisableWatchList makes the reflector use list+watch instead of a
	// streaming initial list (see [ReflectorOptions]).
	DisableWatchList bool
}

// Informer lists and watches one resource type, keeps the objects in an
// [Indexer], and notifies every registered [ResourceEventHandler].
//
// It follows client-go's shared informer with its default feature gates:
// events reach the cache and then the handlers in watch order, a relist is
// applied atomically, each handler has its own goroutine and buffer. See
// docs/semantics.md for the deliberate differences (recovered handler
// panics, optional bounds on a handler's buffer).
//
// All methods are safe for concurrent use. Objects in the cache and in
// notifications are shared and must not be modified.
type Informer[T Object] struct {
	lw            ListerWatcher[T]
	name          string
	indexer       *Indexer[T]
	lister        *Lister[T]
	clock         clock.WithTicker
	defaultResync time.Duration
	backoff       *wait.Backoff
	noWatchList   bool
	queue         *eventQueue[T]
	proc          processor[T]

	// mu guards the fields below and serializes handler registration.
	mu                sync.Mutex
	started           bool
	resyncCheckPeriod time.Duration
	transform         TransformFunc[T]
	watchErrorHandler WatchErrorHandler
	runLogger         klog.Logger
	handlerCount      int
	listenersWG       sync.WaitGroup

	stopped   atomic.Bool
	reflector atomic.Pointer[Reflector[T]]

	// dispatchMu is held while queued records are applied to the cache and
	// the resulting notifications handed to the listeners, and while a
	// handler added to a running informer receives the cached objects. So a
	// new handler sees every change exactly once: in its initial adds or as a
	// notification.
	dispatchMu sync.Mutex
	notes      []notification[T] // dispatcher's reusable buffer
	// filterResync is set while some handler is not due for a resync: only
	// then must resync updates be told apart (dispatcher only).
	filterResync bool
	storeErrors  atomic.Int64
	// warmed accumulates what warmWrites returns, so that its loads are
	// used (dispatcher only).
	warmed int
}

// dispatchChunk is the number of notifications the dispatcher collects
// before handing them to the listeners.
const dispatchChunk = 512

// NewInformer returns an informer for the objects lw lists and watches. It
// does nothing until Run is called.
func NewInformer[T Object](lw ListerWatcher[T], opts InformerOptions[T]) *Informer[T] {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	indexer := NewIndexer(opts.Indexers)
	i := &Informer[T]{
		lw:                lw,
		name:              opts.Name,
		indexer:           indexer,
		lister:            NewLister(indexer, opts.Resource),
		clock:             clk,
		defaultResync:     opts.ResyncPeriod,
		backoff:           opts.Backoff,
		noWatchList:       opts.DisableWatchList,
		resyncCheckPeriod: opts.ResyncPeriod,
		transform:         opts.Transform,
		queue:             newEventQueue(indexer, nil, klog.Background()),
		notes:             make([]notification[T], 0, dispatchChunk),
	}
	i.proc.clock = clk
	return i
}

// Run starts the informer and blocks until ctx is done and every goroutine
// it started has exited: first the reflector, then the event processing,
// then the handlers (notifications not yet delivered are dropped). Its
// logger comes from ctx. An informer runs once; later calls return at once.
func (i *Informer[T]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if i.name != "" {
		logger = klog.LoggerWithValues(logger, "informer", i.name)
	}
	i.mu.Lock()
	if i.started {
		i.mu.Unlock()
		logger.Info("Warning: the informer has already been started, ignoring Run")
		return
	}
	i.started = true
	i.runLogger = logger
	i.queue.transform = i.transform
	i.queue.logger = logger
	r := NewReflector(i.lw, ReflectorStore[T](i.queue), ReflectorOptions{
		Name:              i.name,
		ResyncPeriod:      i.resyncCheckPeriod,
		ShouldResync:      i.proc.shouldResync,
		WatchErrorHandler: i.watchErrorHandler,
		Clock:             i.clock,
		Backoff:           i.backoff,
		DisableWatchList:  i.noWatchList,
	})
	i.reflector.Store(r)
	for _, l := range i.proc.snapshot() {
		l.start(&i.listenersWG, logger)
	}
	i.mu.Unlock()

	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		i.dispatch(logger)
	}()
	r.Run(ctx)

	i.mu.Lock()
	i.stopped.Store(true) // no handler can be added from now on
	i.mu.Unlock()
	i.queue.close()
	for _, l := range i.proc.snapshot() {
		l.shutdown()
	}
	<-dispatched
	i.listenersWG.Wait()
}

// dispatch applies queued records to the cache and hands the notifications
// to the listeners until the queue is closed.
func (i *Informer[T]) dispatch(logger klog.Logger) {
	for {
		batch, ok := i.queue.next()
		if !ok {
			return
		}
		i.process(logger, batch)
		i.queue.recycle(batch)
	}
}

// process applies a batch of records in order. The cache is always updated
// before the listeners receive the corresponding notifications.
func (i *Informer[T]) process(logger klog.Logger, batch *queueChunk[T]) {
	i.dispatchMu.Lock()
	defer i.dispatchMu.Unlock()
	i.filterResync = i.proc.anyNotDueForResync()
	initial := !i.queue.hasSynced()
	for chunk := batch; chunk != nil; chunk = chunk.next {
		initial = i.processChunk(logger, chunk.items(), initial)
	}
	i.flush()
}

// processChunk applies records in order and returns whether the next records
// are still part of the initial list. i.dispatchMu must be held; it is
// released and retaken between records when notifications were handed over.
func (i *Informer[T]) processChunk(logger klog.Logger, records []queueRecord[T], initial bool) bool {
	for k := 0; k < len(records); {
		rec := &records[k]
		switch rec.op {
		case opAdd, opUpdate, opDelete:
			k += i.applyWrites(logger, records[k:min(k+maxWritesPerLock, len(records))], initial)
		case opReplace:
			i.applyReplace(logger, rec.bulk, initial)
			k++
		case opResync:
			for _, obj := range i.indexer.List() {
				i.note(notification[T]{kind: notifyUpdate, old: obj, obj: obj, resync: true})
			}
			k++
		case opBookmark:
			i.indexer.Bookmark(rec.bulk.resourceVersion)
			k++
		default:
			k++
		}
		if rec.firstList {
			// Synced only once the listeners hold every initial add, so
			// that a registration cannot report synced too early.
			i.flush()
			i.queue.markSynced()
			initial = false
		}
		if len(i.notes) >= dispatchChunk/2 {
			// Between records everything stored has been handed over: let
			// a handler that is being added join here.
			i.flush()
			i.dispatchMu.Unlock()
			i.dispatchMu.Lock()
			i.filterResync = i.proc.anyNotDueForResync()
		}
	}
	return initial
}

// maxWritesPerLock is the most events applied to the cache under one lock:
// enough to amortize the lock, short enough that readers barely wait.
const maxWritesPerLock = 64

// applyWrites applies the leading add, update and delete records of records
// to the cache under one lock, notes their notifications, and returns how
// many it applied. Notes are never handed over here: a listener that blocks
// must not hold the cache's lock. The caller keeps fewer than dispatchChunk
// - maxWritesPerLock notes pending, so the buffer never grows.
func (i *Informer[T]) applyWrites(logger klog.Logger, records []queueRecord[T], initial bool) int {
	i.indexer.beginWrites()
	i.warmed += i.indexer.warmWrites(records)
	n := 0
	for ; n < len(records) && records[n].op.isWrite(); n++ {
		rec := &records[n]
		if rec.op == opDelete {
			i.indexer.deletePrepared(&rec.prep)
			i.notes = append(i.notes, notification[T]{kind: notifyDelete, obj: rec.obj})
			continue
		}
		old, oldRV, existed, err := i.indexer.putPrepared(rec.obj, &rec.prep)
		switch {
		case err != nil:
			i.storeFailed(logger, err, rec.op, rec.obj)
		case existed:
			// Only handlers due for a resync get an update that changes
			// nothing (see isResync).
			resync := i.filterResync && oldRV == rec.prep.rv
			i.notes = append(i.notes, notification[T]{kind: notifyUpdate, old: old, obj: rec.obj, resync: resync})
		default:
			i.notes = append(i.notes, notification[T]{kind: notifyAdd, obj: rec.obj, initial: initial})
		}
	}
	i.indexer.endWrites()
	return n
}

// applyReplace swaps the cache for a complete list, then notes a
// final-state-unknown deletion for every cached object missing from the
// list, and an update or add for each listed object in list order.
func (i *Informer[T]) applyReplace(logger klog.Logger, bulk *bulkRecord[T], initial bool) {
	removed, previous, err := i.indexer.replaceAll(bulk.list, bulk.resourceVersion)
	if err != nil {
		i.storeFailed(logger, err, opReplace, *new(T))
		return
	}
	for _, obj := range removed {
		i.note(notification[T]{kind: notifyDelete, obj: obj, finalStateUnknown: true})
	}
	var zero T
	for k, obj := range bulk.list {
		if previous != nil && previous[k] != zero {
			old := previous[k]
			i.note(notification[T]{kind: notifyUpdate, old: old, obj: obj, resync: i.isResync(old, obj)})
			continue
		}
		i.note(notification[T]{kind: notifyAdd, obj: obj, initial: initial})
	}
}

// isResync reports whether an update from old to obj is a resync update
// (same resource version), which only handlers due for a resync receive.
// When every handler is due the answer changes nothing, so it is not
// computed: that saves reading the old object, which is rarely in the CPU
// cache any more.
func (i *Informer[T]) isResync(old, obj T) bool {
	return i.filterResync && old.GetResourceVersion() == obj.GetResourceVersion()
}

// storeFailed logs and counts a record the cache rejected; its
// notification is dropped, as in client-go.
func (i *Informer[T]) storeFailed(logger klog.Logger, err error, op queueOp, obj T) {
	i.storeErrors.Add(1)
	var zero T
	if obj == zero {
		logger.Error(err, "Cache update failed, dropping the event", "event", op.String())
		return
	}
	logger.Error(err, "Cache update failed, dropping the event", "event", op.String(), "object", klog.KObj(obj))
}

// note adds a notification to the current chunk, handing the chunk over
// when it is full.
func (i *Informer[T]) note(n notification[T]) {
	i.notes = append(i.notes, n)
	if len(i.notes) == dispatchChunk {
		i.flush()
	}
}

// flush hands the collected notifications to the listeners.
func (i *Informer[T]) flush() {
	i.proc.distribute(i.notes)
	clear(i.notes)
	i.notes = i.notes[:0]
}

// HasSynced reports whether the informer's first complete list has been
// applied to the cache (and its notifications handed to the handlers). It
// says nothing about the handlers having processed them: see
// [Registration.HasSynced].
func (i *Informer[T]) HasSynced() bool { return i.queue.hasSynced() }

// LastSyncResourceVersion returns the resource version the reflector last
// saw, or "" before Run.
func (i *Informer[T]) LastSyncResourceVersion() string {
	if r := i.reflector.Load(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

// IsStopped reports whether Run has stopped (or is stopping) the informer.
// A stopped informer accepts no handlers and is never started again.
func (i *Informer[T]) IsStopped() bool { return i.stopped.Load() }

// errStarted is returned by setters that only work before Run.
var errStarted = errors.New("informer has already started")

// SetTransform sets the transform applied to every object before it is
// cached, replacing InformerOptions.Transform. It fails once Run has been
// called.
func (i *Informer[T]) SetTransform(transform TransformFunc[T]) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errStarted
	}
	i.transform = transform
	return nil
}

// SetWatchErrorHandler sets the function the reflector calls whenever a list
// or watch fails, before it backs off and retries. It fails once Run has
// been called.
func (i *Informer[T]) SetWatchErrorHandler(handler WatchErrorHandler) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errStarted
	}
	i.watchErrorHandler = handler
	return nil
}

// AddIndexers adds indexes to the cache, before or after Run; cached objects
// are indexed at once. It fails once the informer has stopped, or if an
// index name is already in use.
func (i *Informer[T]) AddIndexers(indexers Indexers[T]) error {
	if i.stopped.Load() {
		return errors.New("indexers were not added because the informer has stopped")
	}
	return i.indexer.AddIndexers(indexers)
}

// Indexer returns the informer's cache. It is read-only for callers:
// writing to it would desynchronize the cache from the notifications.
func (i *Informer[T]) Indexer() *Indexer[T] { return i.indexer }

// Lister returns a lister over the informer's cache.
func (i *Informer[T]) Lister() *Lister[T] { return i.lister }

// InformerStats are counters of an informer, from [Informer.Stats].
type InformerStats struct {
	// Queued is the number of records (events, lists, resyncs, bookmarks)
	// waiting to be applied to the cache.
	Queued int
	// TransformErrors counts objects dropped because the transform failed.
	TransformErrors int64
	// StoreErrors counts events dropped because the cache rejected them (an
	// index function failed).
	StoreErrors int64
}

// Stats returns the informer's counters.
func (i *Informer[T]) Stats() InformerStats {
	return InformerStats{
		Queued:          i.queue.len(),
		TransformErrors: i.queue.transformErrors.Load(),
		StoreErrors:     i.storeErrors.Load(),
	}
}
