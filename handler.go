package informer

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
// so that the handler sees a consistent sequence. Both fields must be set.
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
