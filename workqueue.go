package informer

import "k8s.io/client-go/util/workqueue"

// Enqueue returns a handler that adds the ObjectName (client-go's
// cache.ObjectName) of every added, updated and deleted object to q: the
// usual glue between an informer and a controller's workers, which then read
// the object's current state from a Lister. A deletion enqueues the name the
// object was stored under, whether or not its final state is known; an
// object that moved to another member of a shard group (DeletedObject.Moved)
// is not enqueued: that member now reconciles it.
//
// Updates are enqueued even when the resource version did not change (the
// periodic resyncs and relists deliver such updates), as client-go's
// sample-controller does, so that a resync re-reconciles every object. To
// skip them, replace UpdateFunc with one that returns when oldObj and newObj
// have the same resource version.
//
// The handler only calls q.Add, which is safe for concurrent use for
// client-go's workqueues (TypedRateLimitingInterface satisfies
// TypedInterface), so the handler may be registered with several informers.
// Adding to a queue that is shutting down does nothing. It keeps no
// reference to the objects. q must not be nil.
func Enqueue[T Object](q workqueue.TypedInterface[ObjectName]) ResourceEventHandlerFuncs[T] {
	return ResourceEventHandlerFuncs[T]{
		AddFunc:    func(obj T, _ bool) { q.Add(NameOf(obj)) },
		UpdateFunc: func(_, newObj T) { q.Add(NameOf(newObj)) },
		DeleteFunc: func(d DeletedObject[T]) {
			if !d.Moved && !d.ClusterRemoved {
				q.Add(d.Name)
			}
		},
	}
}

// EnqueueWithKey returns a handler that adds key(obj) to q for every added
// and updated object (the new state) and every deleted one (its last known
// state, DeletedObject.Object, even when the final state is unknown, but not
// when it moved to another member of a shard group). It
// suits queues of the program's own key type, such as controller-runtime's
// reconcile.Request or the name of an owning object.
//
// As with Enqueue, updates are enqueued even when the resource version did
// not change (resyncs). key is called on the handler's goroutine with the
// object shared with the cache, which it must not modify; a key that holds
// the object itself would leave stale states in the queue. q and key must
// not be nil; q must be safe for concurrent use, as client-go's workqueues
// are.
func EnqueueWithKey[T Object, K comparable](q workqueue.TypedInterface[K], key func(T) K) ResourceEventHandlerFuncs[T] {
	return ResourceEventHandlerFuncs[T]{
		AddFunc:    func(obj T, _ bool) { q.Add(key(obj)) },
		UpdateFunc: func(_, newObj T) { q.Add(key(newObj)) },
		DeleteFunc: func(d DeletedObject[T]) {
			if !d.Moved && !d.ClusterRemoved {
				q.Add(key(d.Object))
			}
		},
	}
}
