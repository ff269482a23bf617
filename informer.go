package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/internal/gcwork"
)

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
	// cfg is the resolved configuration. Handler registration and the
	// adapter's setters change it before Run, under mu; it is read-only
	// once the informer has started.
	cfg     config[T]
	indexer *Indexer[T]
	lister  *Lister[T]
	queue   *eventQueue[T]
	source  source[T]
	fan     fanOut[T]
	hooks   observers[T]

	// snapshots keeps the snapshot of the cache; nil without one.
	snapshots *snapshotter[T]

	// mu guards life and cfg and serializes handler registration. It is
	// never held while waiting for anything, nor while calling handlers,
	// transforms or index functions (only the MetricsProvider's
	// registration, which must not call the informer).
	mu   sync.Mutex
	life lifecycle
	// applied is the resource version the cache has applied, for
	// WaitForResourceVersion.
	applied     appliedVersion
	consistency consistencyCounters
}

// lifecycle is where an informer is in its single run.
type lifecycle struct {
	started   bool        // guarded by the informer's mu
	runLogger klog.Logger // set when started
	stopped   atomic.Bool
	// ended is closed once the informer has stopped for good and HasSynced
	// can no longer change: Run has applied its last record, or the
	// informer was stopped before it ran. A wait for the sync ends on it, so
	// that an informer that stopped before it synced is not waited for
	// forever.
	ended chan struct{}
}

// NewInformer returns an informer for the objects lw lists and watches. It
// does nothing until Run is called. It fails if lw is nil or opts are
// invalid (a negative ResyncPeriod, DropFields set).
func NewInformer[T Object](lw ListerWatcher[T], opts InformerOptions[T]) (*Informer[T], error) {
	if lw == nil {
		return nil, fmt.Errorf("%s: NewInformer needs a ListerWatcher, got nil", informerNameFor[T](opts.Name))
	}
	cfg := resolveConfig(FactoryOptions{}, opts)
	if err := validateResync("InformerOptions.ResyncPeriod", cfg.ResyncPeriod); err != nil {
		return nil, fmt.Errorf("%s: invalid options: %w", informerNameFor[T](opts.Name), err)
	}
	if len(opts.DropFields) > 0 {
		return nil, fmt.Errorf("%s: invalid options: InformerOptions.DropFields applies to informers made by For; the ListerWatcher of NewInformer decodes the objects: set its RESTOptions.DropFields", informerNameFor[T](opts.Name))
	}
	return newInformer(lw, cfg, opts.Indexers)
}

// newInformer returns an informer of the resolved configuration cfg over
// lw, which already drops cfg's DropFields.
func newInformer[T Object](lw ListerWatcher[T], cfg config[T], indexers map[string]IndexFunc[T]) (*Informer[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%s: invalid options: %w", informerNameFor[T](cfg.Name), err)
	}
	if err := cfg.Snapshot.validate(); err != nil {
		return nil, fmt.Errorf("%s: invalid options: InformerOptions.%w", informerNameFor[T](cfg.Name), err)
	}
	indexer := NewIndexer(indexers)
	i := &Informer[T]{
		cfg:     cfg,
		indexer: indexer,
		lister:  NewLister(indexer, cfg.Resource),
		queue:   newEventQueue(indexer, nil, klog.Background()),
		hooks:   observers[T]{provider: cfg.Metrics},
		life:    lifecycle{ended: make(chan struct{})},
	}
	i.fan = fanOut[T]{store: indexer, queue: i.queue, hooks: &i.hooks, applied: &i.applied}
	i.fan.proc.clock = cfg.clock()
	i.lister.applied, i.lister.name, i.lister.hooks = &i.applied, informerName(i), &i.hooks
	gcwork.AfterEachGC(i.queue, (*eventQueue[T]).releaseIdleChunks)
	if cfg.Deduplicate {
		var err error
		if lw, err = i.deduplicate(lw); err != nil {
			return nil, fmt.Errorf("%s: %w", informerNameFor[T](cfg.Name), err)
		}
	}
	if cfg.DetectMutations {
		i.hooks.detector = newMutationDetector(indexer, cfg.clock())
	}
	i.source = i.newSource(lw)
	i.snapshots = newSnapshotter(cfg, lw)
	if i.snapshots != nil {
		if src, ok := i.source.(*reflectorSource[T]); ok {
			// A restore is where the reflector starts from.
			src.beforeRun = func(logger klog.Logger, r *Reflector[T]) { i.snapshots.start(logger, r, lw, i.queue) }
		}
	}
	return i, nil
}

// newSource returns what feeds the queue from lw: one reflector, through
// a shard's ListerWatcher for a static shard, or a dynamic shard's range
// reflectors. This is the only place that tells them apart.
func (i *Informer[T]) newSource(lw ListerWatcher[T]) source[T] {
	shard := i.cfg.Shard
	switch {
	case shard == nil:
		return &reflectorSource[T]{lw: lw}
	case shard.Group == nil:
		return &reflectorSource[T]{lw: newShardListerWatcher(lw, shard.key(), shard.FilterOnClient, []hashRange{shard.staticRange()})}
	}
	d := newDynamicShard(lw, shard, i.cfg.clock())
	// The group compares the members' object counts under this name.
	d.countName = strings.TrimPrefix(informerName(i), "Informer ")
	d.count = func() (int, bool) { return i.indexer.size(), d.synced() }
	d.storeVersion = i.indexer.LastStoreSyncResourceVersion
	return d
}

// Run starts the informer and blocks until ctx is done and every goroutine
// it started has exited: first the reflector, then the event processing,
// then the handlers (notifications not yet delivered are dropped). Its
// logger comes from ctx. An informer runs once; later calls return at once.
func (i *Informer[T]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if i.cfg.Name != "" {
		logger = klog.LoggerWithValues(logger, "informer", i.cfg.Name)
	}
	i.mu.Lock()
	if i.life.started {
		i.mu.Unlock()
		if i.life.stopped.Load() {
			logger.Info("Warning: the informer was stopped before it ran (its factory was shut down), ignoring Run")
		} else {
			logger.Info("Warning: the informer has already been started, ignoring Run")
		}
		return
	}
	i.life.started = true
	i.applied.start()
	i.life.runLogger = logger
	i.queue.transform = i.cfg.transform()
	i.queue.logger = logger
	reflectorOpts := i.cfg.reflectorOptions(i.fan.proc.shouldResync)
	i.hooks.started(i.cfg.metricsID(), i.metricsSnapshot)
	for _, l := range i.fan.proc.snapshot() {
		l.start(&i.fan.listeners, logger, i.hooks.metrics)
	}
	i.mu.Unlock()

	var dispatching, observing sync.WaitGroup
	dispatching.Go(func() { i.fan.dispatch(logger) })
	if period := i.cfg.ConsistencyCheck.Period; period > 0 && i.cfg.dynamicShard() {
		logger.Info("Warning: not running consistency checks: a dynamic shard's cache has no single resource version to list at", "period", period)
	} else if period > 0 {
		observing.Go(func() {
			i.consistencyCheck().runPeriodic(ctx, logger, i.cfg.clock(), period, i.cfg.ConsistencyCheck.timeout())
		})
	}
	observing.Go(func() { i.hooks.runDetector(ctx, logger) })
	if i.snapshots != nil {
		observing.Go(func() { i.snapshots.runPeriodic(ctx, logger, i.cfg.clock(), i.indexer, i.HasSynced) })
		if i.snapshots.off == "" {
			observing.Go(func() { i.snapshots.identify(ctx, logger, i.cfg.clock()) })
		}
		started := i.cfg.clock().Now()
		observing.Go(func() { i.snapshots.logSynced(ctx, logger, i.cfg.clock(), started, i.fan.syncedChan()) })
	}
	i.source.run(ctx, logger, i.queue, reflectorOpts)
	observing.Wait()

	i.mu.Lock()
	i.life.stopped.Store(true) // no handler can be added from now on
	i.mu.Unlock()
	joiners := i.fan.takeJoiners()
	i.queue.close()
	for _, l := range i.fan.proc.snapshot() {
		l.shutdown()
	}
	for _, l := range joiners {
		l.shutdown()
	}
	dispatching.Wait()
	if i.snapshots.active() && i.HasSynced() {
		// A clean stop: the cache is final, consistent at its version.
		// Unpaced: the process is stopping, and a fast stop matters more.
		i.snapshots.save(logger, i.indexer, nil)
	}
	if i.snapshots != nil {
		i.snapshots.stop(logger)
	}
	close(i.life.ended) // nothing more is applied: HasSynced is final
	i.applied.stop()
	i.fan.listeners.Wait()
	// The handlers have returned: whatever they changed is seen now.
	i.hooks.finalCheck(logger)
	i.hooks.stopped()
}

// HasSynced reports whether the informer's first complete list has been
// applied to the cache (and its notifications handed to the handlers). It
// says nothing about the handlers having processed them: see
// [Registration.HasSynced].
//
// The informer of a dynamic shard has synced when the ranges its member
// holds now are listed and applied: it stops being synced while a range
// it gained is being listed.
func (i *Informer[T]) HasSynced() bool {
	return i.fan.synced() && i.source.synced()
}

// HasSyncedChecker returns a checker whose Done channel is closed once
// HasSynced is true, for waiting without polling, as with client-go's
// informers: cache.WaitFor(ctx, "caches", inf.HasSyncedChecker()). The
// channel stays open if the informer stops before it synced, as client-go's
// does: [Factory.WaitForCacheSync] returns at once in that case. Its Name is
// "Informer <name>", or "Informer <T>" for an informer without a name.
func (i *Informer[T]) HasSyncedChecker() cache.DoneChecker { return informerChecker[T]{i} }

// informerChecker is the DoneChecker of an informer's sync.
type informerChecker[T Object] struct{ inf *Informer[T] }

// Name describes the informer.
func (c informerChecker[T]) Name() string { return informerName(c.inf) }

// Done is closed once the informer has synced.
func (c informerChecker[T]) Done() <-chan struct{} { return c.inf.fan.syncedChan() }

// informerName describes the informer in DoneChecker names.
func informerName[T Object](inf *Informer[T]) string {
	return informerNameFor[T](inf.cfg.Name)
}

// informerNameFor is informerName for an informer of T named name.
func informerNameFor[T Object](name string) string {
	if name != "" {
		return "Informer " + name
	}
	var zero T
	return fmt.Sprintf("Informer %T", zero)
}

// LastSyncResourceVersion returns the resource version the reflector last
// saw, or "" before Run. It is not kept in step with the handlers (nor is
// client-go's): a handler may hear of an event before
// LastSyncResourceVersion reaches the event's version. Safe for concurrent
// use.
func (i *Informer[T]) LastSyncResourceVersion() string {
	return i.source.lastSyncResourceVersion()
}

// WaitForResourceVersion blocks until the informer's cache has applied
// resourceVersion or a later one, so that the Lister sees a write the
// caller made: pass the resource version of the object the write returned
// (obj.GetResourceVersion()). It returns nil at once if the cache is there
// already, and otherwise an error wrapping context.Cause(ctx) when ctx ends
// first, an error when the informer stops first, and one wrapping
// [ErrResourceVersionNotComparable] when resourceVersion or the cache's
// version is not comparable.
//
// The cache advances with every event, relist and bookmark of its own
// resource. Resource versions are global to the cluster, so a wait for a
// write to another resource ends at the next bookmark (the API server sends
// one about every minute) or event. A wait on an informer that has not
// started waits for it to start and catch up; if ctx ends first, the error
// says that the informer has not started.
//
// Safe for concurrent use, from any goroutine including event handlers (a
// handler that waits delays its own later notifications, not the cache).
func (i *Informer[T]) WaitForResourceVersion(ctx context.Context, resourceVersion string) error {
	return i.applied.wait(ctx, informerName(i), resourceVersion)
}

// IsStopped reports whether Run has stopped (or is stopping) the informer,
// or its [Factory] was shut down before starting it. A stopped informer
// accepts no handlers and is never started again.
func (i *Informer[T]) IsStopped() bool { return i.life.stopped.Load() }

// stopUnstarted stops an informer that has not been started, so that it
// never runs and refuses handlers, which it could never notify. A started
// informer is left to its Run.
func (i *Informer[T]) stopUnstarted() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.life.started {
		i.life.started = true
		i.life.stopped.Store(true)
		close(i.life.ended)
		i.applied.stop()
	}
}

// endedChan returns a channel closed once the informer has stopped for
// good: after it, HasSynced never changes (see Informer.ended).
func (i *Informer[T]) endedChan() <-chan struct{} { return i.life.ended }

// lastError returns the error of the last failed list or watch since the
// cache last received the server's full state, or nil (also before Run).
func (i *Informer[T]) lastError() error { return i.source.lastError() }

// syncBlocked returns a channel closed when the informer cannot sync until
// something outside it changes (lastError says what); nil, which blocks
// forever, when it has no such reason.
func (i *Informer[T]) syncBlocked() <-chan struct{} { return i.source.syncBlocked() }

// errStarted is returned by setters that only work before Run.
var errStarted = errors.New("informer has already started")

// setTransform replaces InformerOptions.Transform, for the client-go
// adapter's SetTransform. It fails once Run has been called.
func (i *Informer[T]) setTransform(transform TransformFunc[T]) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.life.started {
		return errStarted
	}
	// It replaces the whole transform, the factory's included, as
	// client-go's SetTransform does.
	i.cfg.Transform, i.cfg.factoryTransform = transform, nil
	return nil
}

// setWatchErrorHandler replaces InformerOptions.WatchErrorHandler, for the
// client-go adapter's SetWatchErrorHandler. It fails once Run has been
// called.
func (i *Informer[T]) setWatchErrorHandler(handler WatchErrorHandler) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.life.started {
		return errStarted
	}
	i.cfg.WatchErrorHandler = handler
	return nil
}

// AddIndexers adds indexes to the cache, before or after Run; cached objects
// are indexed at once. It fails once the informer has stopped, or if an
// index name is already in use.
func (i *Informer[T]) AddIndexers(indexers map[string]IndexFunc[T]) error {
	if i.life.stopped.Load() {
		// client-go's wording, which callers match on.
		return errors.New("indexer was not added because it has stopped already")
	}
	return i.indexer.AddIndexers(indexers)
}

// Lister returns a read-only view of the informer's cache: gets, label
// queries and index queries. The cache itself is written only by the
// informer, so that it stays in step with the notifications.
func (i *Informer[T]) Lister() *Lister[T] { return i.lister }

// Stats returns the informer's counters.
func (i *Informer[T]) Stats() InformerStats {
	dropped := i.source.stats()
	mutatedObjects, mutatedValues := i.hooks.mutated()
	return InformerStats{
		InvalidListItems: int64(dropped.InvalidListItems),
		DroppedEvents:    int64(dropped.droppedEvents()),
		Queued:           i.queue.len(),
		TransformErrors:  i.queue.transformErrors.Load(),
		StoreErrors:      i.fan.storeErrors.Load(),
		MutatedObjects:   mutatedObjects,
		MutatedValues:    mutatedValues,
		Consistency:      i.consistency.load(),
		// Counted by the ListerWatchers built from a rest.Config.
		DropFieldsFailures: dropFieldsFailures(i.source.listerWatcher()),
		ShardWatches:       i.source.watches(),
		Snapshot:           i.snapshots.stats(),
	}
}

// CheckConsistency compares the cache with the server: it takes the cached
// objects and the resource version the cache has reached (under the cache's
// read lock, which blocks only the informer's writes, for the copy of one
// pointer per object; its cost, from BenchmarkCheckConsistency, is in
// docs/operations.md), lists the resource
// from the server at exactly that resource version (in pages of 500, so
// served by etcd), and reports every key on which they differ. The
// differences are also logged (one line at default verbosity when there
// are any) and counted in [InformerStats].Consistency, which a
// [MetricsProvider] reads. With [ConsistencyCheckOptions].Repair set in the
// informer's options, differences make the informer relist.
//
// It fails, with nothing counted, if the informer is not running or has not
// synced, or has a dynamic shard (Shard.Group, whose range reflectors each
// reach their own resource version; its periodic checks do not run); it fails and counts a failure if the list fails, for example with
// "410 Gone" when the cache is further behind than the server keeps history
// (then the informer relists anyway). The list goes through the informer's
// ListerWatcher, with its selectors; an object the informer's transform
// rejected is reported Missing, since the cache lacks it. Safe for
// concurrent use; it uses the logger of ctx.
func (i *Informer[T]) CheckConsistency(ctx context.Context) (ConsistencyReport, error) {
	logger := klog.FromContext(ctx)
	if i.cfg.Name != "" {
		logger = klog.LoggerWithValues(logger, "informer", i.cfg.Name)
	}
	return i.consistencyCheck().run(ctx, logger)
}

// consistencyCheck returns what a consistency check of the cache needs.
func (i *Informer[T]) consistencyCheck() consistencyCheck[T] {
	return consistencyCheck[T]{name: informerName(i), informer: i, source: i.source, cache: i.indexer,
		repair: i.cfg.ConsistencyCheck.Repair, counters: &i.consistency}
}

// metricsSnapshot reads the informer's current values.
func (i *Informer[T]) metricsSnapshot() InformerSnapshot {
	return InformerSnapshot{
		Stats:                i.Stats(),
		Reflector:            i.source.stats(),
		Requests:             i.source.requestStats(),
		StoreResourceVersion: i.indexer.LastStoreSyncResourceVersion(),
		Synced:               i.HasSynced(),
	}
}
