package informer

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// WatchErrorHandler is called whenever a Reflector's list-and-watch cycle
// fails: a list fails, or a watch cannot be started for a reason that is not
// retried in place. The reflector then backs off and lists again. ctx carries
// the reflector's logger. It must return quickly.
type WatchErrorHandler func(ctx context.Context, err error)

// DefaultWatchErrorHandler logs err at a level that fits it: an expired
// resource version at V(4), an unexpected end of stream at V(1), a normal end
// of stream not at all, anything else as an error.
func DefaultWatchErrorHandler(ctx context.Context, err error) {
	logger := klog.FromContext(ctx)
	switch {
	case isExpiredError(err):
		logger.V(4).Info("Watch closed", "err", err)
	case err == io.EOF:
	case err == io.ErrUnexpectedEOF:
		logger.V(1).Info("Watch closed with unexpected EOF", "err", err)
	default:
		logger.Error(err, "Failed to watch")
	}
}

// ReflectorOptions configures a Reflector. The zero value is usable.
type ReflectorOptions struct {
	// Name is used in logs; default: the Go type of the objects.
	Name string
	// ResyncPeriod is how often ShouldResync is consulted while watching;
	// 0 = never.
	ResyncPeriod time.Duration
	// ShouldResync decides whether a due resync calls the store's Resync;
	// nil = always.
	ShouldResync func() bool
	// WatchErrorHandler is called when a list-and-watch cycle fails;
	// nil = DefaultWatchErrorHandler.
	WatchErrorHandler WatchErrorHandler
	// Clock drives backoff, resync and watch durations; nil = real clock.
	Clock clock.WithTicker
	// PageSize, if non-zero, is the page size of every list (client-go's
	// WatchListPageSize). When zero, lists at resource version "" or "0" are
	// paginated by 500, and later lists at a known resource version are not
	// paginated (so that the API server's watch cache can serve them) unless
	// the first list showed that the server paginates.
	PageSize int64
	// DisableWatchList turns off the streaming initial list, which is used
	// by default (like client-go's WatchListClient feature gate) unless the
	// ListerWatcher has a method IsWatchListSemanticsUnSupported() bool that
	// returns true.
	DisableWatchList bool
	// Backoff, if set, replaces the default backoff between failed cycles
	// and retried watches (0.8 s doubling to 30 s, jitter 1.0). The backoff
	// resets every 2 minutes.
	Backoff *wait.Backoff
	// MissingResourceRetry, if positive, changes what happens when the
	// server does not serve the resource (a list or watch fails with "404
	// Not Found": a deleted or not yet installed CRD): instead of the
	// backoff, the reflector retries every MissingResourceRetry, logs one
	// line when the resource goes missing and one when it is served again
	// (the failures in between only at V(4)), and does not call the
	// WatchErrorHandler for them. The store keeps its content meanwhile.
	MissingResourceRetry time.Duration
	// ExpectedGVK, if set, makes the reflector drop watch events whose
	// object's apiVersion/kind differ. Only meaningful for types that carry
	// their kind, such as *unstructured.Unstructured.
	ExpectedGVK *schema.GroupVersionKind
}

// ReflectorStats counts the bad input a Reflector dropped. Each dropped item
// is also logged.
type ReflectorStats struct {
	// WrongTypeEvents counts watch events whose object is not a T (or has an
	// unexpected GVK or is an unstructured Table).
	WrongTypeEvents uint64
	// NilObjectEvents counts watch events without an object.
	NilObjectEvents uint64
	// NamelessEvents counts Added, Modified and Deleted events whose object
	// has no name.
	NamelessEvents uint64
	// UnknownTypeEvents counts watch events of an unknown event type.
	UnknownTypeEvents uint64
	// ErrorEvents counts watch Error events (each ends its watch).
	ErrorEvents uint64
	// InvalidListItems counts listed objects that are nil or have no name.
	InvalidListItems uint64
	// StoreErrors counts store calls that failed for a single event.
	StoreErrors uint64
}

// plus returns the sums of s's and o's counters.
func (s ReflectorStats) plus(o ReflectorStats) ReflectorStats {
	return ReflectorStats{
		WrongTypeEvents:   s.WrongTypeEvents + o.WrongTypeEvents,
		NilObjectEvents:   s.NilObjectEvents + o.NilObjectEvents,
		NamelessEvents:    s.NamelessEvents + o.NamelessEvents,
		UnknownTypeEvents: s.UnknownTypeEvents + o.UnknownTypeEvents,
		ErrorEvents:       s.ErrorEvents + o.ErrorEvents,
		InvalidListItems:  s.InvalidListItems + o.InvalidListItems,
		StoreErrors:       s.StoreErrors + o.StoreErrors,
	}
}

// droppedEvents counts the watch events dropped as bad input: of the wrong
// type, without an object or a name, or of an unknown event type.
func (s ReflectorStats) droppedEvents() uint64 {
	return s.WrongTypeEvents + s.NilObjectEvents + s.NamelessEvents + s.UnknownTypeEvents
}

// reflectorCounters holds ReflectorStats as atomics, so Stats can be read
// while Run writes.
type reflectorCounters struct {
	wrongType, nilObject, nameless, unknownType, errorEvents, invalidListItems, storeErrors atomic.Uint64
}

// Reflector keeps a ReflectorStore in step with the API server: it lists
// (or stream-lists) the resource, then watches it from the list's resource
// version, and lists again when the watch cannot be resumed. It behaves like
// client-go v0.37's tools/cache Reflector, except that:
//   - every store call, periodic Resync included, comes from Run's
//     goroutine, one at a time (client-go resyncs from another goroutine);
//   - all waiting, including the pause between cycles, uses the configured
//     clock;
//   - listed objects that are nil or have no name are dropped and counted
//     rather than stored, and events of unknown type carry no progress;
//   - internal errors during a watch are not retried in place (client-go's
//     MaxInternalErrorRetryDuration, off by default).
//
// Objects handed to the store come from the ListerWatcher unchanged.
type Reflector[T Object] struct {
	lw    ListerWatcher[T]
	store ReflectorStore[T]
	// preparer is store when it prepares listed objects as they arrive.
	preparer          listedPreparer[T]
	name              string
	typeDescription   string
	resyncPeriod      time.Duration
	shouldResync      func() bool
	watchErrorHandler WatchErrorHandler
	clock             clock.WithTicker
	delay             wait.DelayFunc
	pageSize          int64
	useWatchList      bool
	expectedGVK       *schema.GroupVersionKind
	// missingResourceRetry is ReflectorOptions.MissingResourceRetry.
	missingResourceRetry time.Duration
	running              atomic.Bool
	counters             reflectorCounters
	requests             requestCounters

	// checkKind says that watch events' objects must have their kind
	// checked: against expectedGVK if set, and for the Table kind if T is
	// *unstructured.Unstructured. Decoding a kind costs a string parse per
	// event, so it is skipped when neither applies.
	checkKind bool

	// paginatedResult records that the first list (at "0") came back in
	// pages: the server does not serve lists from its watch cache, so later
	// lists keep paginating. Only Run's goroutine uses it.
	paginatedResult bool
	// nextListReason is why the next request for the full state is made
	// (see countFullStateRequest). Only Run's goroutine uses it.
	nextListReason listReason
	// failures tracks failed requests (see reflector_failures.go). Only
	// Run's goroutine uses it.
	failures failures
	// resume, set before Run by a restored informer, makes the first cycle
	// start from a snapshot's objects (see resumeWatch); restored holds
	// them while a list that follows a failed resume may reuse them. Only
	// Run's goroutine uses them after Run starts.
	resume, restored *resumePoint[T]
	// relist, with room for one request, asks the running watch to end so
	// that the reflector lists again (see requestRelist). Each cycle takes
	// a pending request away before it lists, and only a watch reads it
	// (not a streaming list's initial events).
	relist chan struct{}

	mu sync.RWMutex
	// lastSyncResourceVersion is the last resource version seen.
	lastSyncResourceVersion string
	// resourceVersionUnavailable records that the last list or watch at
	// lastSyncResourceVersion failed as expired or too large; the next one
	// then asks for the latest data (resource version "").
	resourceVersionUnavailable bool
	// lastErr is the last failure since the store last got the full state
	// (see lastError).
	lastErr error
}

// NewReflector returns a Reflector that fills store from lw. Nothing
// happens until Run.
func NewReflector[T Object](lw ListerWatcher[T], store ReflectorStore[T], opts ReflectorOptions) *Reflector[T] {
	var zero T
	r := &Reflector[T]{
		lw:                lw,
		store:             store,
		name:              opts.Name,
		typeDescription:   fmt.Sprintf("%T", zero),
		resyncPeriod:      opts.ResyncPeriod,
		shouldResync:      opts.ShouldResync,
		watchErrorHandler: opts.WatchErrorHandler,
		clock:             opts.Clock,
		pageSize:          opts.PageSize,
		useWatchList:      !opts.DisableWatchList,
		expectedGVK:       opts.ExpectedGVK,

		missingResourceRetry: opts.MissingResourceRetry,
		relist:               make(chan struct{}, 1),
	}
	r.preparer, _ = store.(listedPreparer[T])
	if r.name == "" {
		r.name = r.typeDescription
	}
	_, unstructuredT := any(zero).(*unstructured.Unstructured)
	r.checkKind = unstructuredT || r.expectedGVK != nil
	if r.watchErrorHandler == nil {
		r.watchErrorHandler = DefaultWatchErrorHandler
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if declarer, ok := lw.(watchListSemanticsDeclarer); ok && declarer.IsWatchListSemanticsUnSupported() {
		r.useWatchList = false
	}
	r.delay = newReflectorDelay(opts.Backoff, r.clock)
	return r
}

// Run lists and watches until ctx is done, backing off between failed
// cycles. It blocks, starts no goroutine, and returns once ctx is done. A
// Reflector runs at most once at a time: a concurrent second Run logs an
// error and returns at once.
func (r *Reflector[T]) Run(ctx context.Context) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "reflector", r.name, "type", r.typeDescription)
	ctx = klog.NewContext(ctx, logger)
	if !r.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Reflector is already running")
		return
	}
	defer r.running.Store(false)
	defer func() {
		if p := r.resume; p != nil {
			// Not resumed from (ctx ended first): its objects may still be
			// decoding.
			p.discard()
		}
	}()
	logger.V(3).Info("Starting reflector", "resyncPeriod", r.resyncPeriod)
	defer logger.V(3).Info("Stopping reflector")
	for ctx.Err() == nil {
		missing := false
		if err := r.listAndWatch(ctx); err != nil {
			r.noteFailure(err)
			if missing = r.retryMissing(ctx, err); !missing {
				r.watchErrorHandler(ctx, err)
			}
		}
		delay := r.missingResourceRetry
		if !missing {
			delay = r.delay()
		}
		if r.sleep(ctx, delay, nil) != nil {
			return
		}
	}
}

// requestRelist asks the reflector to end its watch and list again, to
// replace a cache found inconsistent with the server. A request is served
// by the first list (or streaming list) that starts after it. A list in
// progress started before the request, from a state the requester did not
// compare, so it does not count: the reflector finishes it and lists once
// more (one list after the current one, never two). A request made between
// cycles (during a backoff) is served by the next list alone. Requests made
// while one is pending are merged into it. Safe for concurrent use.
func (r *Reflector[T]) requestRelist() {
	select {
	case r.relist <- struct{}{}:
	default:
	}
}

// LastSyncResourceVersion returns the last resource version the reflector
// has seen (from a list, a watch event or a bookmark). It moves after the
// store call that hands over the list or event has returned (as in
// client-go), so whoever the store passes the event to may see it first.
// Safe for concurrent use.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastSyncResourceVersion
}

// Stats returns the counts of bad input dropped so far. Safe for concurrent
// use.
func (r *Reflector[T]) Stats() ReflectorStats {
	c := &r.counters
	return ReflectorStats{
		WrongTypeEvents:   c.wrongType.Load(),
		NilObjectEvents:   c.nilObject.Load(),
		NamelessEvents:    c.nameless.Load(),
		UnknownTypeEvents: c.unknownType.Load(),
		ErrorEvents:       c.errorEvents.Load(),
		InvalidListItems:  c.invalidListItems.Load(),
		StoreErrors:       c.storeErrors.Load(),
	}
}

func (r *Reflector[T]) setLastSyncResourceVersion(rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastSyncResourceVersion = rv
}

func (r *Reflector[T]) setResourceVersionUnavailable(unavailable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resourceVersionUnavailable = unavailable
}

// relistResourceVersion is the resource version to list at: "" (latest,
// consistent) after an expired or too-large resource version, "0" (any, from
// the watch cache) before anything was seen, else the last seen one.
func (r *Reflector[T]) relistResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case r.resourceVersionUnavailable:
		return ""
	case r.lastSyncResourceVersion == "":
		return "0"
	default:
		return r.lastSyncResourceVersion
	}
}

// rewatchResourceVersion is the resource version a streaming list starts
// at: "" (latest) at first or after an expired one, else the last seen one.
func (r *Reflector[T]) rewatchResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.resourceVersionUnavailable {
		return ""
	}
	return r.lastSyncResourceVersion
}

// listAndWatch gets the full state once (streaming list, or list as the
// fallback), then watches until the watch cannot be resumed. It returns an
// error when the list failed or a watch could not be started; errors of a
// running watch are handled (logged) here, as in client-go.
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	logger.V(3).Info("Listing and watching")
	// The list starting now serves every relist requested so far.
	select {
	case <-r.relist:
	default:
	}
	var w watch.Interface
	synced := false
	if p := r.resume; p != nil {
		r.resume = nil
		accept, err := r.acceptResume(ctx, p)
		if err != nil {
			r.resume = p // the next cycle checks again
			return err
		}
		if accept {
			if synced, err = r.resumeOrList(ctx, p); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	if !synced && r.useWatchList {
		var err error
		w, err = r.streamList(ctx)
		if ctx.Err() != nil {
			if w != nil {
				w.Stop()
			}
			return nil
		}
		if err != nil {
			logger.V(4).Info("Streaming list failed, falling back to a regular list; expected if the API server does not support it", "err", err)
		}
	}
	if !synced && w == nil {
		if err := r.list(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	logger.V(2).Info("Caches populated")
	resync := r.newResyncTimer(ctx)
	defer resync.stop()
	return r.watch(ctx, w, resync)
}
