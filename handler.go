package informer

import (
	"errors"
	"time"

	"k8s.io/klog/v2"
)

// ResourceEventHandler receives the notifications of an [Informer] for one
// resource type.
//
// The informer calls the methods of one handler from a single goroutine, one
// at a time and in the order the events happened; different handlers run
// concurrently and independently. The objects are shared with the cache and
// with every other handler: a handler must not modify them (DeepCopy first).
// A handler should return quickly; slow work belongs in a workqueue.
type ResourceEventHandler[T Object] interface {
	// OnAdd is called for an object that entered the cache. isInInitialList
	// is true for the objects of the informer's first list and for the
	// objects already cached when the handler was added to a running
	// informer.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called when a cached object changed, and on resync and
	// relist with oldObj and newObj carrying the same resource version.
	// oldObj is the state the cache held before newObj replaced it.
	OnUpdate(oldObj, newObj T)
	// OnDelete is called when an object left the cache.
	OnDelete(obj DeletedObject[T])
}

// DeletedObject describes an object that left the cache.
//
// Unlike client-go, which passes either the object or a
// cache.DeletedFinalStateUnknown tombstone, it always carries both the name
// and a typed object.
type DeletedObject[T Object] struct {
	// Name is the namespace and name the object was stored under; always set.
	Name ObjectName
	// Object is the last known state of the object; always set. For a watch
	// deletion it is the object the server sent with the event. When
	// FinalStateUnknown is true it is the state last seen in the cache, which
	// may be older than the state the object had when it was deleted.
	Object T
	// FinalStateUnknown is true when the deletion was inferred from a relist
	// that no longer contained the object (the watch missed the deletion).
	FinalStateUnknown bool
	// Moved is true when the object was not deleted but left the informer's
	// dynamic shard, or its cluster left a [Fleet]'s replica: another member
	// of the [ShardGroup] holds it now.
	// Object is its last state seen here. A controller should forget the
	// object rather than clean up after a deletion; [Enqueue] and
	// [EnqueueWithKey] do not enqueue it.
	Moved bool
	// ClusterRemoved is true when the object was not deleted but its
	// cluster was removed from a [Fleet] (see [Fleet.RemoveCluster]).
	// Object is its last state cached. As for Moved, a controller should
	// forget the object rather than clean up after a deletion; [Enqueue],
	// [EnqueueWithKey] and [EnqueueFleet] do not enqueue it.
	ClusterRemoved bool
}

// ResourceEventHandlerFuncs adapts up to three functions to a
// [ResourceEventHandler]. A nil function ignores its notifications. It is
// safe to copy.
type ResourceEventHandlerFuncs[T Object] struct {
	// AddFunc handles OnAdd.
	AddFunc func(obj T, isInInitialList bool)
	// UpdateFunc handles OnUpdate.
	UpdateFunc func(oldObj, newObj T)
	// DeleteFunc handles OnDelete.
	DeleteFunc func(obj DeletedObject[T])
}

// OnAdd calls AddFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if it is set.
func (f ResourceEventHandlerFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// FilteringResourceEventHandler passes to Handler only the notifications
// about objects accepted by FilterFunc, and turns updates that cross the
// filter into adds and deletes, as client-go's FilteringResourceEventHandler
// does:
//
//   - an update from a rejected to an accepted state is OnAdd(newObj, false);
//   - an update from an accepted to a rejected state is OnDelete of the old
//     state (FinalStateUnknown false);
//   - an update between two rejected states is dropped.
//
// FilterFunc must not modify the object and must be a pure function of it,
// so that the handler sees a consistent sequence. Both fields must be set:
// AddEventHandler rejects a FilteringResourceEventHandler without them.
type FilteringResourceEventHandler[T Object] struct {
	// FilterFunc reports whether the handler is interested in obj.
	FilterFunc func(obj T) bool
	// Handler receives the filtered notifications.
	Handler ResourceEventHandler[T]
}

// OnAdd forwards the notification if FilterFunc accepts obj.
func (f FilteringResourceEventHandler[T]) OnAdd(obj T, isInInitialList bool) {
	if f.FilterFunc(obj) {
		f.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards an update, an add or a delete depending on whether
// FilterFunc accepts the old and the new state.
func (f FilteringResourceEventHandler[T]) OnUpdate(oldObj, newObj T) {
	wasAccepted, isAccepted := f.FilterFunc(oldObj), f.FilterFunc(newObj)
	switch {
	case wasAccepted && isAccepted:
		f.Handler.OnUpdate(oldObj, newObj)
	case isAccepted:
		f.Handler.OnAdd(newObj, false)
	case wasAccepted:
		f.Handler.OnDelete(DeletedObject[T]{Name: NameOf(oldObj), Object: oldObj})
	}
}

// OnDelete forwards the notification if FilterFunc accepts the deleted
// object's last known state.
func (f FilteringResourceEventHandler[T]) OnDelete(obj DeletedObject[T]) {
	if f.FilterFunc(obj.Object) {
		f.Handler.OnDelete(obj)
	}
}

// HandlerOptions configures one handler added with
// [Informer.AddEventHandlerWithOptions]. The zero value gives client-go's
// behaviour, except that a panicking handler is recovered (see
// CrashOnPanic).
type HandlerOptions struct {
	// Name identifies the handler in logs. Default: the handler's Go type
	// and a sequence number.
	Name string
	// ResyncPeriod requests periodic resyncs for this handler; zero means
	// none, negative is an error. Nil uses the informer's ResyncPeriod. As
	// in client-go, it is raised to one second, and to the informer's resync
	// check period when the handler is added after the informer started.
	// Unlike client-go, which ignores it, a period given to an informer
	// without resync of its own works when the handler is added before Run,
	// and is an error after.
	ResyncPeriod *time.Duration
	// Logger receives the handler's log messages. Default: the logger of the
	// context given to Run, with the handler's name.
	Logger *klog.Logger
	// MaxPending bounds the notifications waiting for this handler; zero
	// means unbounded, as in client-go. What happens at the bound is chosen
	// by Overflow.
	MaxPending int
	// Overflow is the policy applied once MaxPending notifications are
	// pending. Ignored when MaxPending is zero.
	Overflow OverflowPolicy
	// CrashOnPanic restores client-go's behaviour of crashing the process
	// when the handler panics. By default the panic is recovered and
	// counted, the notification counts as delivered, and the handler
	// receives the next notification. The handler's first panic is logged
	// with its name and stack; after it, one line at most every 10 seconds
	// gives the count since the last line, so that a handler panicking on
	// every event does not flood the log.
	CrashOnPanic bool
	// BookmarkFunc, if set, is called with the resource version of each
	// bookmark the informer's watch receives (KEP-5647's bookmark callback),
	// from the handler's goroutine, in order with its notifications: when it
	// is called, the handler has been given every change up to that
	// resource version. The API server sends a bookmark about once a minute
	// and before it ends a watch. Bookmark calls count in
	// [HandlerStats].Delivered, and with MaxPending they count as pending
	// notifications (they are never coalesced).
	BookmarkFunc func(resourceVersion string)
}

// OverflowPolicy says what an informer does when a handler has
// HandlerOptions.MaxPending notifications waiting.
type OverflowPolicy int

const (
	// OverflowBlock makes the informer wait until the handler has returned
	// from enough calls: the cache and every other handler stop advancing
	// with it (the cache may be ahead by the batch being handed over, at
	// most a few hundred events), and events accumulate in the informer's
	// queue. Nothing is lost.
	OverflowBlock OverflowPolicy = iota
	// OverflowCoalesce keeps the informer running and merges notifications
	// per object. Once the bound is reached, and until the handler has
	// drained everything pending, a new notification about an object that
	// already has a pending notification is merged into the latest one:
	//
	//   - add(a) then update(a→b) becomes add(b) (keeping isInInitialList);
	//   - update(a→b) then update(b→c) becomes update(a→c);
	//   - add(a) then delete cancels both: the handler hears nothing;
	//   - update(a→b) then delete(c) becomes delete(c);
	//   - a pending delete is never merged: a later add queues behind it.
	//
	// Other notifications are queued. So the handler still sees, per object,
	// a valid sequence of states ending in the latest one, but may miss
	// intermediate states; a merged notification keeps the position of the
	// one it was merged into, so order across objects is not preserved.
	// While coalescing, at most two notifications per object are added beyond
	// the bound.
	OverflowCoalesce
)

// HandlerStats are counters of one handler, from [Registration.Stats].
type HandlerStats struct {
	// Pending is the number of notifications queued for the handler and not
	// yet delivered.
	Pending int64
	// Delivered is the number of handler calls that have returned, including
	// calls that panicked.
	Delivered int64
	// Panics is the number of handler calls that panicked, every one,
	// whether or not it was logged on its own.
	Panics int64
	// Coalesced is the number of notifications not delivered on their own
	// because of OverflowCoalesce.
	Coalesced int64
	// Dropped is the number of notifications discarded because the handler
	// was removed or the informer stopped before delivering them.
	Dropped int64
}

// validateHandler rejects a handler that could only fail on every
// notification: a FilteringResourceEventHandler missing a field.
func validateHandler[T Object](h ResourceEventHandler[T]) error {
	var f FilteringResourceEventHandler[T]
	switch h := h.(type) {
	case FilteringResourceEventHandler[T]:
		f = h
	case *FilteringResourceEventHandler[T]:
		if h == nil {
			return errors.New("the handler is a nil *FilteringResourceEventHandler")
		}
		f = *h
	default:
		return nil
	}
	switch {
	case f.FilterFunc == nil && f.Handler == nil:
		return errors.New("the FilteringResourceEventHandler has neither a FilterFunc nor a Handler")
	case f.FilterFunc == nil:
		return errors.New("the FilteringResourceEventHandler has no FilterFunc")
	case f.Handler == nil:
		return errors.New("the FilteringResourceEventHandler has no Handler")
	}
	return validateHandler(f.Handler)
}
