package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/gcwork"
	"github.com/kubetyped/informer/internal/wire"
)

// InformerOptions configures an [Informer], made by [NewInformer] over a
// ListerWatcher or by [For] from a [Factory]. The zero value is valid.
type InformerOptions[T Object] struct {
	// Name identifies the informer in logs and metrics. A factory's
	// informer is named after its resource by default (see [For]).
	Name string
	// Resource is the resource the informer lists and watches. For an
	// informer made by [For] it says what to list and watch: it is required
	// for *metav1.PartialObjectMetadata and *unstructured.Unstructured, and
	// for a typed object it may be left zero (see [RESTOptions].Resource).
	// For [NewInformer], whose ListerWatcher decides what is listed, it only
	// names the resource. Either way the Lister's NotFound errors and the
	// metrics name its group and resource.
	Resource schema.GroupVersionResource
	// ClusterScoped makes an informer made by [For] list and watch across
	// all namespaces whatever [FactoryOptions].Namespace says, as a
	// cluster-scoped CRD, or a metadata-only or unstructured informer of any
	// cluster-scoped resource, needs in a namespaced factory. The typed
	// informers of built-in cluster-scoped resources (*corev1.Node...) need
	// not set it: For knows their scope, as client-go's factory does.
	// [NewInformer] ignores it: its ListerWatcher decides the namespace.
	ClusterScoped bool
	// ResyncPeriod is the default resync period of handlers (0 = none) and
	// the informer's initial resync check period, as client-go's
	// defaultEventHandlerResyncPeriod. For an informer made by [For], 0
	// means [FactoryOptions].ResyncPeriod. A negative period is rejected:
	// For and NewInformer return an error.
	ResyncPeriod time.Duration
	// Indexers are the cache's secondary indexes.
	Indexers map[string]IndexFunc[T]
	// Transform, if set, is applied once to every object received from the
	// API server before it is cached (see [TransformFunc]). In a factory it
	// runs after [FactoryOptions].Transform.
	Transform TransformFunc[T]
	// WatchErrorHandler, if set, is called whenever a list or watch fails,
	// before the reflector backs off and retries (see [ReflectorOptions]).
	WatchErrorHandler WatchErrorHandler
	// DisableWatchList makes the reflector use list+watch instead of a
	// streaming initial list (see [ReflectorOptions]).
	DisableWatchList bool
	// Backoff, if set, replaces the reflector's backoff between failed list
	// and watch attempts (see [ReflectorOptions]).
	Backoff *wait.Backoff
	// MissingResourceRetry, if positive, makes the informer wait quietly
	// for a resource the server does not serve (a deleted CRD), retrying
	// every MissingResourceRetry and logging one line when it goes missing
	// and one when it returns (see [ReflectorOptions]). For an informer made
	// by [For], 0 means [FactoryOptions].MissingResourceRetry.
	MissingResourceRetry time.Duration
	// Clock drives resync scheduling and the reflector's timers. Nil means
	// the real clock; tests pass a fake one.
	Clock clock.WithTicker
	// Metrics, if set, receives the informer's metrics while it runs (see
	// [MetricsProvider]). Nil means no metrics, at no cost. For an informer
	// made by [For], nil means [FactoryOptions].Metrics.
	Metrics MetricsProvider
	// ConsistencyCheck configures the checks that compare the cache with
	// the server: periodic checks and repair (see
	// [Informer.CheckConsistency]). For an informer made by [For], the zero
	// value means [FactoryOptions].ConsistencyCheck.
	ConsistencyCheck ConsistencyCheckOptions
	// Deduplicate makes equal values of different cached objects share one
	// copy: each string repeated across cached objects (label and
	// annotation keys and values, images, env vars, node names…), equal
	// managed fields' FieldsV1.Raw bytes and, in a pod, each sub-object
	// equal to one already cached (labels and annotations maps, resource
	// lists, env, port, mount and toleration lists, probes, security
	// contexts, volume sources…). It changes no value, but CACHED OBJECTS
	// THEN SHARE MUTABLE MAPS, SLICES, STRUCTS AND BYTES: writing into one
	// cached object, which the no-mutation rule forbids, may change many
	// others at once. The mutation detector (DetectMutations) reports every
	// object such a write changed; see docs/semantics.md, "Deduplication".
	// That is why it is off by default; strings alone, which are
	// immutable, are shared by default for pods, nodes and the other
	// built-in types decoded from protobuf (see [NewRESTListerWatcher]).
	//
	// Pods (and the other types [NewRESTListerWatcher] interns) decoded
	// from protobuf by the REST ListerWatcher (that of [For]), and the
	// custom resources it decodes from JSON, with no Transform, are
	// deduplicated as they are decoded: a sub-object (for custom resources,
	// any pointer, list or map of 32 bytes of JSON or more) whose bytes were
	// seen before is not decoded at all, so that decoding a
	// production-like pod costs about half as much CPU as without
	// deduplication (BenchmarkDecodePod: 13.7 µs against 25.4 µs, and
	// 27.7 µs for k8s.io/api's Unmarshal, at load 4.7) and a sync of 5,000
	// of them from kube-apiserver uses 1.5–1.8× less CPU than client-go's
	// (E1: 1.51× in docs/benchmarks.md's run, 1.62–1.76× in CI-mode runs).
	// Every other object is passed, after the transform and before it is
	// cached, through a pass that costs 8–13 µs of CPU per production-like
	// pod (BenchmarkDecodePod) and 7–11 µs per small pod of W1 (against
	// 0.6 µs without), and makes W2's initial sync of 100,000 small pods
	// about 7× slower. Either way, 100,000 production-like pods keep
	// 12,600–13,200 B each instead of about 23,200 (W6(a); client-go
	// 22,527). To drop fields and keep deduplicating on decode, use
	// DropFields rather than a Transform. For an informer made by [For],
	// [FactoryOptions].Deduplicate also turns it on.
	Deduplicate bool
	// DetectMutations enables the cache mutation detector, meant for tests
	// and CI; the environment variable KUBE_CACHE_MUTATION_DETECTOR=true
	// enables it in every informer, as in client-go. It keeps a deep copy of
	// every cached object, compares them every second while the informer
	// runs and once when Run ends, and logs each modified object with the
	// handlers and Lister callers it was handed out to; InformerStats counts
	// them. It costs a copy per cached object and a stack capture per Lister
	// call; disabled, nothing.
	DetectMutations bool
	// DropFields are fields dropped from every object on the wire, before
	// it is decoded, for an informer made by [For] (see
	// [RESTOptions].DropFields for the paths and what is guaranteed):
	// they are absent from every cached object and event, and cost neither
	// memory nor decoding. [ManagedFields] is the usual one. In a factory
	// they add to [FactoryOptions].DropFields. [NewInformer], whose
	// ListerWatcher decodes the objects, rejects them: give them to the
	// ListerWatcher's [RESTOptions] instead.
	DropFields []string
	// Shard, if set, restricts the informer to a shard of the resource (see
	// [Shard] and docs/sharding.md): the server sends only the shard's
	// objects. For an informer made by [For], nil means
	// [FactoryOptions].Shard.
	Shard *Shard
	// Snapshot makes the informer keep a snapshot of its cache on disk and
	// restart from it (see [SnapshotOptions] and docs/restart.md). For an
	// informer made by [For], a zero Snapshot.Dir means
	// [FactoryOptions].Snapshot.
	Snapshot SnapshotOptions
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
	missingRetry  time.Duration
	noWatchList   bool
	queue         *eventQueue[T]
	proc          processor[T]

	metricsProvider MetricsProvider
	metricsID       InformerID
	// detector is the cache mutation detector; nil unless enabled.
	detector *mutationDetector[T]
	// dynamic runs the reflectors of a dynamic shard; nil otherwise.
	dynamic *dynamicShard[T]
	// snapshots keeps the snapshot of the cache; nil without one.
	snapshots *snapshotter[T]

	// mu guards the fields below and serializes handler registration. It is
	// never held while waiting for anything, nor while calling handlers,
	// transforms or index functions (only the MetricsProvider's
	// registration, which must not call the informer).
	mu                sync.Mutex
	started           bool
	resyncCheckPeriod time.Duration
	transform         TransformFunc[T]
	watchErrorHandler WatchErrorHandler
	runLogger         klog.Logger
	handlerCount      int
	listenersWG       sync.WaitGroup
	// metrics is set at Run if the informer has a metrics provider.
	metrics InformerMetrics

	stopped atomic.Bool
	// ended is closed once the informer has stopped for good and HasSynced
	// can no longer change: Run has applied its last record, or the
	// informer was stopped before it ran. A wait for the sync ends on it, so
	// that an informer that stopped before it synced is not waited for
	// forever.
	ended     chan struct{}
	reflector atomic.Pointer[Reflector[T]]
	// applied is the resource version the cache has applied, for
	// WaitForResourceVersion.
	applied appliedVersion

	consistencyCheck ConsistencyCheckOptions
	consistency      consistencyCounters

	// joining holds the handlers added to the running informer that have not
	// received their initial adds yet (guarded by mu); joinPending is set
	// while it is not empty.
	joining     []*listener[T]
	joinPending atomic.Bool

	// dispatchMu is held while queued records are applied to the cache and
	// the resulting notifications handed to the listeners, and while joining
	// handlers are admitted with the cached objects. So a new handler sees
	// every change exactly once: in its initial adds or as a notification.
	// Its holder may wait for room in a listener (OverflowBlock), and handlers
	// may call the informer: so it is only ever taken by the dispatcher, or
	// with TryLock, and never while holding mu (see tryAdmitJoiners).
	dispatchMu sync.Mutex
	notes      []notification[T] // dispatcher's reusable buffer
	// filterResync is set while some handler is not due for a resync: only
	// then must resync updates be told apart (dispatcher only).
	filterResync bool
	// listenersToldSynced is set once the listeners have been told that the
	// informer synced (dispatcher only).
	listenersToldSynced bool
	storeErrors         atomic.Int64
}

// NewInformer returns an informer for the objects lw lists and watches. It
// does nothing until Run is called. It fails if lw is nil or opts are
// invalid (a negative ResyncPeriod, DropFields set).
func NewInformer[T Object](lw ListerWatcher[T], opts InformerOptions[T]) (*Informer[T], error) {
	if lw == nil {
		return nil, fmt.Errorf("%s: NewInformer needs a ListerWatcher, got nil", informerNameFor[T](opts.Name))
	}
	if err := validateResync("InformerOptions.ResyncPeriod", opts.ResyncPeriod); err != nil {
		return nil, fmt.Errorf("%s: invalid options: %w", informerNameFor[T](opts.Name), err)
	}
	if len(opts.DropFields) > 0 {
		return nil, fmt.Errorf("%s: invalid options: InformerOptions.DropFields applies to informers made by For; the ListerWatcher of NewInformer decodes the objects: set its RESTOptions.DropFields", informerNameFor[T](opts.Name))
	}
	if opts.Shard != nil {
		if err := opts.Shard.validate(); err != nil {
			return nil, fmt.Errorf("%s: invalid options: InformerOptions.%w", informerNameFor[T](opts.Name), err)
		}
	}
	if err := opts.Snapshot.validate(); err != nil {
		return nil, fmt.Errorf("%s: invalid options: InformerOptions.%w", informerNameFor[T](opts.Name), err)
	}
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
		missingRetry:      opts.MissingResourceRetry,
		consistencyCheck:  opts.ConsistencyCheck,
		noWatchList:       opts.DisableWatchList,
		resyncCheckPeriod: opts.ResyncPeriod,
		transform:         opts.Transform,
		watchErrorHandler: opts.WatchErrorHandler,
		queue:             newEventQueue(indexer, nil, klog.Background()),
		notes:             make([]notification[T], 0, dispatchChunk),
		metricsProvider:   opts.Metrics,
		metricsID:         metricsID(opts),
		ended:             make(chan struct{}),
	}
	i.proc.clock = clk
	i.lister.applied, i.lister.name = &i.applied, informerName(i)
	gcwork.AfterEachGC(i.queue, (*eventQueue[T]).releaseIdleChunks)
	if opts.Deduplicate {
		if err := i.deduplicate(opts.Transform); err != nil {
			return nil, fmt.Errorf("%s: %w", informerNameFor[T](opts.Name), err)
		}
	}
	if mutationDetectionRequested(opts.DetectMutations) {
		i.detector = newMutationDetector(indexer, clk)
		indexer.detector = i.detector
	}
	if opts.Shard != nil {
		i.shardOn(opts.Shard)
	}
	i.snapshots = newSnapshotter(opts)
	if rest, ok := lw.(*restListerWatcher[T]); ok && i.snapshots != nil {
		i.snapshots.scope.Namespace = rest.namespace
		i.snapshots.scope.LabelSelector, i.snapshots.scope.FieldSelector = selectorsOf(rest.tweak)
	}
	return i, nil
}

// deduplicate turns deduplication on (see InformerOptions.Deduplicate).
// Objects decoded by a REST or dynamic ListerWatcher that interns on decode are
// deduplicated by its decoder, as they are decoded, when there is no
// transform (which might write into what the decoder shares): the informer
// then lists and watches through a copy of the ListerWatcher that shares
// sub-objects too. Otherwise the queue's pass deduplicates every object
// after the transform, with the decoder's table if there is one, so that
// the strings it interned are the ones the pass finds.
func (i *Informer[T]) deduplicate(transform TransformFunc[T]) error {
	interns := wire.NewInternTable()
	if lw, ok := any(i.lw).(*dynamicListerWatcher); ok {
		if transform == nil {
			shared, err := lw.sharingSubObjects()
			if err != nil {
				return fmt.Errorf("deduplicating on decode: %w", err)
			}
			i.lw = any(shared).(ListerWatcher[T])
			return nil
		}
		interns = lw.interns
	}
	if lw, ok := i.lw.(*restListerWatcher[T]); ok && lw.interns != nil {
		if transform == nil && lw.sharesOnDecode {
			shared, err := lw.sharingSubObjects()
			if err != nil {
				return fmt.Errorf("deduplicating on decode: %w", err)
			}
			i.lw = shared
			return nil
		}
		interns = lw.interns
	}
	i.queue.interns, i.queue.intern = interns, wire.InternFuncFor[T]()
	return nil
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
		if i.stopped.Load() {
			logger.Info("Warning: the informer was stopped before it ran (its factory was shut down), ignoring Run")
		} else {
			logger.Info("Warning: the informer has already been started, ignoring Run")
		}
		return
	}
	i.started = true
	i.applied.start()
	i.runLogger = logger
	i.queue.transform = i.transform
	i.queue.logger = logger
	newReflector := func(lw ListerWatcher[T], store ReflectorStore[T]) *Reflector[T] {
		return NewReflector(lw, store, ReflectorOptions{
			Name:              i.name,
			ResyncPeriod:      i.resyncCheckPeriod,
			ShouldResync:      i.proc.shouldResync,
			WatchErrorHandler: i.watchErrorHandler,
			Clock:             i.clock,
			Backoff:           i.backoff,
			DisableWatchList:  i.noWatchList,

			MissingResourceRetry: i.missingRetry,
		})
	}
	var r *Reflector[T]
	if i.dynamic == nil {
		r = newReflector(i.lw, i.queue)
		i.reflector.Store(r)
	}
	saving := i.snapshots != nil && i.snapshots.start(logger, r, i.lw, i.queue)
	i.registerMetrics()
	for _, l := range i.proc.snapshot() {
		l.start(&i.listenersWG, logger, i.metrics)
	}
	i.mu.Unlock()

	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		i.dispatch(logger)
	}()
	checked := make(chan struct{})
	if period := i.consistencyCheck.Period; period > 0 && i.dynamic != nil {
		logger.Info("Warning: not running consistency checks: a dynamic shard's cache has no single resource version to list at", "period", period)
		close(checked)
	} else if period > 0 {
		go func() {
			defer close(checked)
			i.runConsistencyChecks(ctx, logger, period, i.consistencyCheck.timeout())
		}()
	} else {
		close(checked)
	}
	saved := make(chan struct{})
	if saving {
		go func() {
			defer close(saved)
			i.snapshots.runPeriodic(ctx, logger, i.clock, i.indexer, i.HasSynced)
		}()
	} else {
		close(saved)
	}
	detected := make(chan struct{})
	if i.detector != nil {
		go func() {
			defer close(detected)
			i.detector.run(ctx.Done(), logger)
		}()
	} else {
		close(detected)
	}
	if r != nil {
		r.Run(ctx)
	} else {
		i.dynamic.run(ctx, logger, i.queue, newReflector)
	}
	<-checked

	i.mu.Lock()
	i.stopped.Store(true) // no handler can be added from now on
	joiners := i.joining
	i.joining = nil
	i.mu.Unlock()
	i.queue.close()
	for _, l := range i.proc.snapshot() {
		l.shutdown()
	}
	for _, l := range joiners {
		l.shutdown()
	}
	<-dispatched
	<-saved
	if saving && i.HasSynced() {
		// A clean stop: the cache is final, consistent at its version.
		i.snapshots.save(logger, i.indexer)
	}
	if i.snapshots != nil {
		i.snapshots.stop(logger)
	}
	close(i.ended) // nothing more is applied: HasSynced is final
	i.applied.stop()
	i.listenersWG.Wait()
	<-detected
	if i.detector != nil {
		// The handlers have returned: whatever they changed is seen now.
		i.detector.check(logger)
	}
	i.unregisterMetrics()
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
	return i.queue.hasSynced() && (i.dynamic == nil || i.dynamic.synced())
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
func (c informerChecker[T]) Done() <-chan struct{} { return c.inf.queue.syncedCh }

// informerName describes the informer in DoneChecker names.
func informerName[T Object](inf *Informer[T]) string {
	return informerNameFor[T](inf.name)
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
	if i.dynamic != nil {
		return i.indexer.LastStoreSyncResourceVersion()
	}
	if r := i.reflector.Load(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

// IsStopped reports whether Run has stopped (or is stopping) the informer,
// or its [Factory] was shut down before starting it. A stopped informer
// accepts no handlers and is never started again.
func (i *Informer[T]) IsStopped() bool { return i.stopped.Load() }

// stopUnstarted stops an informer that has not been started, so that it
// never runs and refuses handlers, which it could never notify. A started
// informer is left to its Run.
func (i *Informer[T]) stopUnstarted() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.started {
		i.started = true
		i.stopped.Store(true)
		close(i.ended)
		i.applied.stop()
	}
}

// endedChan returns a channel closed once the informer has stopped for
// good: after it, HasSynced never changes (see Informer.ended).
func (i *Informer[T]) endedChan() <-chan struct{} { return i.ended }

// lastError returns the error of the last failed list or watch since the
// cache last received the server's full state, or nil (also before Run).
func (i *Informer[T]) lastError() error {
	if i.dynamic != nil {
		return i.dynamic.lastError()
	}
	if r := i.reflector.Load(); r != nil {
		return r.lastError()
	}
	return nil
}

// syncBlocked returns a channel closed when the informer cannot sync until
// something outside it changes (lastError says what); nil, which blocks
// forever, when it has no such reason.
func (i *Informer[T]) syncBlocked() <-chan struct{} {
	if i.dynamic != nil {
		return i.dynamic.syncBlocked()
	}
	return nil
}

// errStarted is returned by setters that only work before Run.
var errStarted = errors.New("informer has already started")

// setTransform replaces InformerOptions.Transform, for the client-go
// adapter's SetTransform. It fails once Run has been called.
func (i *Informer[T]) setTransform(transform TransformFunc[T]) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errStarted
	}
	i.transform = transform
	return nil
}

// setWatchErrorHandler replaces InformerOptions.WatchErrorHandler, for the
// client-go adapter's SetWatchErrorHandler. It fails once Run has been
// called.
func (i *Informer[T]) setWatchErrorHandler(handler WatchErrorHandler) error {
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
func (i *Informer[T]) AddIndexers(indexers map[string]IndexFunc[T]) error {
	if i.stopped.Load() {
		// client-go's wording, which callers match on.
		return errors.New("indexer was not added because it has stopped already")
	}
	return i.indexer.AddIndexers(indexers)
}

// Lister returns a read-only view of the informer's cache: gets, label
// queries and index queries. The cache itself is written only by the
// informer, so that it stays in step with the notifications.
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
	// MutatedObjects counts the cached objects found modified by the
	// mutation detector (see InformerOptions.DetectMutations).
	MutatedObjects int64
	// Consistency counts the consistency checks and the differences they
	// found (see [Informer.CheckConsistency]).
	Consistency ConsistencyStats
	// InvalidListItems counts the listed objects dropped, and logged,
	// because they were nil or had no name (client-go would store them; see
	// docs/semantics.md, "Reflector").
	InvalidListItems int64
	// DroppedEvents counts the watch events dropped, and logged, as bad
	// input: an object that is nil, has no name or is not a T (or not of
	// the expected kind), or an unknown event type.
	// [InformerSnapshot].Reflector tells them apart.
	DroppedEvents int64
	// DropFieldsFailures counts the list responses and watch events from
	// which the ListerWatcher could not drop the fields of DropFields
	// (bytes it could not parse): they were passed on whole, to be decoded
	// or rejected by the client (see [RESTOptions].DropFields).
	DropFieldsFailures int64
	// ShardWatches is the number of list+watch streams of a dynamic shard:
	// one per range gained since they were last merged (see
	// docs/sharding.md); 0 for other informers.
	ShardWatches int
	// Snapshot counts the snapshots written and restored (see
	// [SnapshotOptions]).
	Snapshot SnapshotStats
}

// Stats returns the informer's counters.
func (i *Informer[T]) Stats() InformerStats {
	dropped := i.reflectorStats()
	return InformerStats{
		InvalidListItems: int64(dropped.InvalidListItems),
		DroppedEvents:    int64(dropped.droppedEvents()),
		Queued:           i.queue.len(),
		TransformErrors:  i.queue.transformErrors.Load(),
		StoreErrors:      i.storeErrors.Load(),
		MutatedObjects:   i.mutatedObjects(),
		Consistency:      i.consistency.load(),
		// Counted by the ListerWatchers built from a rest.Config.
		DropFieldsFailures: dropFieldsFailures(i.lw),
		ShardWatches:       i.shardWatches(),
		Snapshot:           i.snapshots.stats(),
	}
}

// reflectorStats returns the counts of bad input the informer's reflector
// dropped; for a dynamic shard, those of all its reflectors, stopped ones
// included.
func (i *Informer[T]) reflectorStats() ReflectorStats {
	if i.dynamic != nil {
		return i.dynamic.reflectorStats()
	}
	if r := i.reflector.Load(); r != nil {
		return r.Stats()
	}
	return ReflectorStats{}
}

// shardWatches returns the number of reflectors of a dynamic shard.
func (i *Informer[T]) shardWatches() int {
	if i.dynamic == nil {
		return 0
	}
	return i.dynamic.watches()
}

// mutatedObjects returns the number of modified objects the mutation
// detector found.
func (i *Informer[T]) mutatedObjects() int64 {
	if i.detector == nil {
		return 0
	}
	return i.detector.mutated.Load()
}
