package informer

import (
	"context"

	"k8s.io/klog/v2"
)

// The house plan: the contracts between the informer's stages, each an
// unexported interface saying what its side owns and guarantees. A watch
// event flows source → queue → store → fan-out; the sections below are in
// that order. Each implementation lives in a file of its own and asserts
// that it satisfies its contract, so that `go doc` and the compiler show
// where a new stage or kind plugs in.

// ---------------------------------------------------------------------------
// The source.

// source is what feeds an informer's queue: the reflector of its
// ListerWatcher (reflectorSource), the range reflectors of a dynamic shard
// (dynamicShard); a snapshot restore is not a source of its own but the
// reflector's starting point (reflectorSource.beforeRun). It owns the
// goroutines that list and watch, and what they know of the server: their
// errors, counters and resource version. It never touches the store: everything it
// learns goes through the queue, in order.
type source[T Object] interface {
	// run feeds the queue through feed until ctx is done, with each
	// reflector it needs made with opts (derived from the informer's
	// resolved configuration), and returns once every goroutine it started
	// has returned. It is called once.
	run(ctx context.Context, logger klog.Logger, feed queueFeed[T], opts ReflectorOptions)
	// synced reports whether the source has queued all it must before the
	// informer counts as synced, beyond the queue's first list: true for a
	// single reflector, the current assignment's lists for a dynamic shard.
	synced() bool
	// lastError returns why the source cannot sync now (the last failed
	// list or watch since it last received the server's full state), or
	// nil.
	lastError() error
	// syncBlocked returns a channel closed when the source cannot sync
	// until something outside it changes; nil (blocking forever) when it
	// has no such reason.
	syncBlocked() <-chan struct{}
	// lastSyncResourceVersion is Informer.LastSyncResourceVersion.
	lastSyncResourceVersion() string
	// stats adds up the bad input its reflectors dropped, stopped ones
	// included, so that it never goes down.
	stats() ReflectorStats
	// requestStats counts its reflector's requests; zero when it has no
	// single reflector.
	requestStats() ReflectorRequestStats
	// watches is the number of list+watch streams of a dynamic shard, 0
	// for any other source.
	watches() int
	// listerWatcher is what lists the resource: consistency checks list
	// through it and Stats reads its DropFields counter.
	listerWatcher() ListerWatcher[T]
	// relister returns what makes the source relist after a consistency
	// check found differences: nil before it runs; an error (wrapping
	// errDynamicShard) when its cache has no single resource version to
	// check at.
	relister() (relist func(), err error)
}

// ---------------------------------------------------------------------------
// The queue's feed.

// queueFeed is the queue as the sources feed it: a ReflectorStore for a
// source's one reflector, and the stores of the parts of the cache that the
// reflectors of a dynamic shard each hold. It transforms what it is given
// and prepares its cache writes (see below) before it queues it, in order.
// Every method may be called from any goroutine; none calls user code with
// a lock held. *eventQueue implements it.
type queueFeed[T Object] interface {
	ReflectorStore[T]
	// partStore returns the ReflectorStore of part: it queues the events
	// of the objects part holds (as transformed) and drops the others; its
	// Replace and Resync replace and resync only the cached objects part
	// holds, leaving the others alone. It holds part (cachePart.hold)
	// while it decides and queues, never while it runs the transform or
	// the index functions.
	partStore(part cachePart[T]) ReflectorStore[T]
	// dropWithin queues the removal of the cached objects within accepts,
	// their deletions saying whether they moved to another member of the
	// shard group. It is a replace by no object: queued first, it is the
	// informer's first list.
	dropWithin(within func(T) bool, moved bool)
}

// cachePart is the part of the cache one producer holds, which its store
// (queueFeed.partStore) feeds: the slots of one range reflector of a
// dynamic shard. What it holds changes only while nobody holds it.
type cachePart[T Object] interface {
	// hold keeps what the part holds from changing until release: so that
	// once a change has queued its drop (dropWithin), no event of an object
	// dropped can follow. Holders hold it briefly, calling no user code.
	hold()
	release()
	// holds reports whether the part holds obj (as the cache would store
	// it), between hold and release.
	holds(obj T) bool
	// within returns what accepts the objects the part holds now, which a
	// replace or resync record keeps; called between hold and release.
	within() func(T) bool
	// listed is called once the part's list is applied and its
	// notifications handed to the listeners.
	listed()
}

// ---------------------------------------------------------------------------
// The store's prepared write.
//
// Storing or deleting one object is split in two, so that the goroutine that
// applies events to the cache (the informer's bottleneck) does nothing that
// depends on the object alone, and never runs user code under the store's
// lock:
//
//   - prepare runs on the goroutine that queues the event, without any lock:
//     it reads the object (name, resource version, labels) and calls the index
//     functions, and fills in everything the write needs: a writePrep and the
//     index values beside it (writeprep.go);
//   - apply runs under the store's write lock, for a run of records at once
//     (beginWrites, warm for each, putPrepared or deletePrepared for each,
//     endWrites; writeprep.go): it files the object from the writePrep
//     alone. Values stale or missing since prepare (an index added, an index
//     function failed) are refused (errStalePrep): the run stops there, and
//     they are computed again without the lock (refreshPrep) before it goes
//     on.
//
// The queue holds the store only through writeStore, and the writePreparer
// the store hands it: it treats the writePrep as opaque, and keeps its
// memory in a prepArena per chunk of records, which the prepared write owns
// and fills (writeprep.go).

// writeStore is the store as the queue sees it: it prepares writes and
// answers the relist's question "is this object cached at this version?".
// Every method may be called from any goroutine, without any lock held; the
// store takes its own. *Indexer implements it.
type writeStore[T Object] interface {
	// preparer returns what computes, without the store's lock, the part
	// of storing or deleting an object that depends on the object alone
	// (writePreparer.prepare), into a record the caller owns: the writePrep
	// and, beside it, the index values in a prepValues the caller hands to
	// prepArena.keep, so that nothing needs a heap allocation of its own.
	// The result is applied later by the store's apply side. An index
	// function that fails leaves the values uncomputed: apply computes them
	// again, and reports the error. It is called once, when the queue is
	// made; the preparer always uses the store's current indexes.
	preparer() writePreparer[T]
	// cachedAt returns the stored object with obj's name if it is at obj's
	// (non-empty) resource version.
	cachedAt(obj T) (T, bool)
	// cachedUnder returns the object stored under name if it is at
	// resourceVersion (non-empty).
	cachedUnder(name ObjectName, resourceVersion string) (T, bool)
	// size returns the number of stored objects. A list into an empty
	// store, such as the first one, has nothing to reuse, so the queue
	// asks once per list instead of once per object (cachedAt).
	size() int
}

// ---------------------------------------------------------------------------
// The store's index kinds.
//
// Besides its slab of every object, the store keeps posting lists (the
// numbers of the entries filed under one value, contents.go) for each
// index kind, in a listColumn per index. A kind is a stateless description
// shared by every contents the store builds; the lists themselves live in
// the contents. The store holds its kinds in order: the namespace kind at
// position ownerNamespace, the label kind at ownerLabel, then one function
// kind per user index whose function is not MetaNamespaceIndexFunc.
//
// The kinds are:
//
//   - namespaceKind (index_namespace.go): one list per namespace; also
//     serves every user index whose function is MetaNamespaceIndexFunc;
//   - labelKind (index_label.go): one list per label key and value, which
//     the Lister's selectors read (selection.go);
//   - funcKind (index_func.go): one user index, one list per value its
//     IndexFunc returns.
//
// The store's write loop calls the kinds directly (the namespace and label
// kinds, which every plan holds at their positions) or through a type
// switch (the kinds after them; the functions beside indexPlan, indexes.go),
// not through the interface: an interface call makes the compiler move the
// prepared write of every Indexer.Add and Replace item to the heap, an
// allocation per write. A new kind is one file implementing indexKind and
// one case in each of those switches. The values of the function kinds travel beside the
// writePrep, not in it, for the same reason: the compiler does not tell a
// writePrep's fields apart, and the strings a write stores make its content
// escape, so values reached through it would be moved to the heap too.

// indexKind is one kind of index. Its methods other than prepare run under
// the store's write lock; none calls user code there.
type indexKind[T Object] interface {
	// prepare computes, without any lock, what filing obj needs and that
	// writePrep does not already hold (a user index's values, appended to
	// v). It may call user code.
	prepare(obj T, name ObjectName, v *prepValues) error
	// file puts the new entry numbered id on its lists for p and values.
	file(c *contents[T], id int32, p *writePrep, values [][]string)
	// refile moves the stored entry numbered id to its lists for p and
	// values, touching only the lists that changed.
	refile(c *contents[T], id int32, p *writePrep, values [][]string)
}
