package informer

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/internal/wire"
)

// queueOp says what a queued record asks the informer to do.
type queueOp uint8

const (
	// opAdd and opUpdate store the object (an add of a cached key is an
	// update and vice versa, as in client-go).
	opAdd queueOp = iota + 1
	opUpdate
	// opDelete removes the object.
	opDelete
	// opReplace atomically replaces the cache with a complete list.
	opReplace
	// opResync re-delivers every cached object to the handlers due for a
	// resync.
	opResync
	// opBookmark sets the cache's resource version.
	opBookmark
)

// isWrite reports whether the operation stores or deletes one object.
func (op queueOp) isWrite() bool {
	return op == opAdd || op == opUpdate || op == opDelete
}

// String returns the name of the operation, for logs.
func (op queueOp) String() string {
	switch op {
	case opAdd:
		return "add"
	case opUpdate:
		return "update"
	case opDelete:
		return "delete"
	case opReplace:
		return "replace"
	case opResync:
		return "resync"
	case opBookmark:
		return "bookmark"
	default:
		return "unknown"
	}
}

// queueRecord is one entry of the queue, held by value. Watch events, the
// bulk of the traffic, use obj and prep; the rarer replace and bookmark
// records carry their payload behind a pointer.
type queueRecord[T Object] struct {
	obj  T
	bulk *bulkRecord[T]
	op   queueOp
	// firstList marks the first complete list: the queue is synced once the
	// informer has processed it.
	firstList bool
	// prep is the cache's part of an add, update or delete, computed when
	// the record is queued (writePreparer), opaque to the queue; its
	// slices point into the chunk's arena. Unset when the queue has no
	// cache.
	prep writePrep
}

// bulkRecord is the payload of a replace, resync or bookmark record.
type bulkRecord[T Object] struct {
	list            []T
	resourceVersion string
	// within, if set, limits a replace or resync to the objects it accepts
	// (the ranges of one reflector of a dynamic shard): a replace leaves
	// the other cached objects alone.
	within func(T) bool
	// moved marks a replace that drops the objects within because they
	// moved to another member of the shard group.
	moved bool
	// applied, if set, is called by the dispatcher once the record is
	// applied and its notifications are handed to the listeners.
	applied func()
}

// A queue's chunks start at firstQueueChunkSize records, and whenever a
// chain of pending records fills its last chunk, the queue's chunk size
// doubles, up to queueChunkSize; it stays there while traffic keeps the
// queue busy, and falls back to the first size once the queue is idle
// (releaseIdleChunks). A queue that sees a trickle of events holds one
// chunk of 16 records (2.7 KB), not one of 1,024 (172 KB; a record is
// 168 B): a fleet has a queue per cluster, and at 1,000 small clusters that
// chunk was larger than everything else a cluster costs, and most of its
// start's peak heap (E6's edge fleet, docs/fleet.md). Under steady traffic
// the chunks are those of the fixed 1,024-record size before
// (BenchmarkDispatch).
const (
	firstQueueChunkSize = 16
	queueChunkSize      = 1024
)

// maxFreeChunks bounds the emptied chunks the queue keeps for reuse: enough
// for steady traffic, while the memory of a burst goes back to the GC. An
// informer's queue also lets them all go once idle (releaseIdleChunks).
const maxFreeChunks = 8

// queueChunk is a block of records of a size fixed when it is made. The
// queue stores its records in a chain of chunks rather than in one growing
// slice, so that a backlog costs its size in memory, without the copies and
// the doubled capacity of slice growth.
type queueChunk[T Object] struct {
	records []queueRecord[T] // its length is the chunk's size
	n       int
	next    *queueChunk[T]
	// arena holds the memory of the records' preps (see prepArena).
	arena prepArena
}

// items returns the chunk's records.
func (c *queueChunk[T]) items() []queueRecord[T] { return c.records[:c.n] }

// eventQueue is the in-order queue between the reflector and the informer,
// with the semantics of client-go's RealFIFO under its default feature gates
// (atomic events, bookmarks, batch pop, unlocked processing):
//
//   - every event is kept, in the order it arrived (no per-key merging);
//   - a complete list is one record, applied atomically by the consumer;
//   - a resync is one record;
//   - a bookmark is a record, so the cache's resource version advances in
//     order with the events;
//   - the transform runs once per object, when it is queued;
//   - the consumer takes everything pending under one lock acquisition, and
//     producers can queue more while it processes.
//
// It implements [ReflectorStore]. The producer methods may be called from
// any goroutine; next and recycle must be called from a single consumer.
type eventQueue[T Object] struct {
	mu    sync.Mutex
	ready sync.Cond // signalled when records arrive or the queue closes
	// head and tail delimit the chain of pending records; nil when empty.
	head, tail *queueChunk[T]
	pending    int
	// free holds emptied chunks for reuse (freeCount of them), each of
	// chunkSize records; chunkSize is the size of the chunks the queue
	// makes now (0: firstQueueChunkSize).
	free      *queueChunk[T]
	freeCount int
	chunkSize int
	// freeReused is set when a chunk is taken from free, and cleared by
	// releaseIdleChunks.
	freeReused bool
	waiting    bool // the consumer is blocked in next
	closed     bool
	// populated is set by the first record: a first list makes the queue
	// synced once processed, any other first record makes it synced at once.
	populated bool

	transform TransformFunc[T]
	// interns and intern, when set, intern the strings of every object
	// queued for the cache, after the transform (see internal/wire).
	interns         *wire.InternTable
	intern          wire.InternFunc[T]
	logger          klog.Logger
	transformErrors atomic.Int64
	// store prepares the cache's part of each event (nil: no preparation),
	// with prep, its preparer.
	store writeStore[T]
	prep  writePreparer[T]
	// reuseCached makes prepareListed keep the cached object for an item
	// listed at the cached resource version; on unless a test compares
	// object identity with client-go's (difftest).
	reuseCached bool

	synced     atomic.Bool
	syncedOnce sync.Once
	syncedCh   chan struct{}
}

var _ queueFeed[*metav1.PartialObjectMetadata] = (*eventQueue[*metav1.PartialObjectMetadata])(nil)

// errTransformReturnedNothing reports a transform that returned the zero
// value (a nil pointer) without an error.
var errTransformReturnedNothing = errors.New("transform returned no object")

// newEventQueue returns an empty queue whose events are prepared for store
// (see writePrep). store and transform may be nil.
func newEventQueue[T Object](store writeStore[T], transform TransformFunc[T], logger klog.Logger) *eventQueue[T] {
	q := &eventQueue[T]{
		store:       store,
		reuseCached: store != nil,
		transform:   transform,
		logger:      logger,
		syncedCh:    make(chan struct{}),
	}
	if store != nil {
		q.prep = store.preparer()
	}
	q.ready.L = &q.mu
	return q
}

// Add queues an Added event for obj.
func (q *eventQueue[T]) Add(obj T) error { return q.addEvent(opAdd, obj) }

// Update queues a Modified event for obj.
func (q *eventQueue[T]) Update(obj T) error { return q.addEvent(opUpdate, obj) }

// Delete queues a Deleted event for obj.
func (q *eventQueue[T]) Delete(obj T) error { return q.addEvent(opDelete, obj) }

// errNilObject rejects an event without an object.
var errNilObject = errors.New("event without an object")

// addEvent transforms obj, prepares its cache write and queues it. A
// transform error is logged and counted and the event is dropped: returning
// it would only make the reflector log it again.
func (q *eventQueue[T]) addEvent(op queueOp, obj T) error {
	var zero T
	if obj == zero {
		return errNilObject
	}
	var rec queueRecord[T]
	var values prepValues
	if !q.prepareEvent(op, obj, &rec, &values) {
		return nil
	}
	q.appendEvent(&rec, &values)
	return nil
}

// prepareEvent transforms and interns obj and prepares its cache write
// into rec, and the index values beside it into values (both zero); it
// reports false
// if the transform failed (logged and counted). It runs the transform and
// the index functions, which are user code: the caller must hold no lock.
// The record is filled in place and handed on by pointer, so that it is
// copied once, into its chunk, rather than at each step: a record is about
// 250 bytes.
func (q *eventQueue[T]) prepareEvent(op queueOp, obj T, rec *queueRecord[T], values *prepValues) bool {
	obj, ok := q.transformed(op, obj)
	if !ok {
		return false
	}
	if q.intern != nil && op != opDelete {
		wire.InternObject(q.interns, q.intern, obj)
	}
	rec.op, rec.obj = op, obj
	if q.store != nil {
		q.prep.prepare(obj, op != opDelete, &rec.prep, values)
	}
	return true
}

// appendEvent queues an event prepared by prepareEvent.
func (q *eventQueue[T]) appendEvent(rec *queueRecord[T], values *prepValues) {
	q.mu.Lock()
	if !q.populated {
		// As in RealFIFO: an event before any list means there is no
		// initial list to wait for.
		q.populated = true
		q.markSynced()
	}
	q.appendPreparedLocked(rec, values)
	q.mu.Unlock()
}

// appendPreparedLocked queues rec, its prepared write keeping its memory
// (values, labels) in the chunk's arena. q.mu must be held.
func (q *eventQueue[T]) appendPreparedLocked(rec *queueRecord[T], values *prepValues) {
	c := q.appendLocked(rec)
	if c == nil || q.store == nil || rec.op == opDelete {
		return
	}
	c.arena.keep(&c.records[c.n-1].prep, values)
}

// Replace queues a complete list at resourceVersion as one record. The queue
// takes ownership of list and prepares its items in place (see
// prepareListed); items whose transform fails are logged, counted and left
// out of the list.
func (q *eventQueue[T]) Replace(list []T, resourceVersion string) error {
	return q.replacePrepared(q.prepareListed(list, nil), resourceVersion)
}

// prepareListed prepares listed objects for the cache, in place, and
// returns those kept (a prefix of items, whose tail it clears). An item the
// cache holds at the same resource version is replaced by the cached
// object, and the listed copy let go: so a relist of an unchanged cache
// holds little more than the cache, provided the reflector prepares each
// page or streamed object as it arrives (the listedPreparer interface).
// The objects of reused, which cachedListed returned for items (in their
// order), are kept as they are, even if the cache has moved on since. The
// other items are transformed and interned. A cached object kept has been
// transformed already; it is not transformed again.
func (q *eventQueue[T]) prepareListed(items, reused []T) []T {
	// An empty store (the first list) has nothing to reuse: asking it about
	// every object cost a name hash and a lookup each (W2).
	reuseCached := q.reuseCached && q.store.size() > 0
	if !reuseCached && len(reused) == 0 && q.transform == nil && q.intern == nil {
		// Nothing would change an item: leave the list as it is, without
		// the pointer writes (each with a write barrier while the
		// collector marks, which it does during a large list; W2).
		return items
	}
	kept := items[:0]
	for _, obj := range items {
		if len(reused) > 0 && obj == reused[0] {
			reused = reused[1:]
			kept = append(kept, obj)
			continue
		}
		if reuseCached {
			if cached, ok := q.store.cachedAt(obj); ok {
				kept = append(kept, cached)
				continue
			}
		}
		obj, ok := q.transformed(opReplace, obj)
		if !ok {
			continue
		}
		if q.intern != nil {
			wire.InternObject(q.interns, q.intern, obj)
		}
		kept = append(kept, obj)
	}
	clear(items[len(kept):])
	return kept
}

// cachedListed returns the cached object under name at resourceVersion,
// which prepareListed would keep in place of an item listed so (see
// cachedLookup).
func (q *eventQueue[T]) cachedListed(name ObjectName, resourceVersion string) (T, bool) {
	if !q.reuseCached {
		var zero T
		return zero, false
	}
	return q.store.cachedUnder(name, resourceVersion)
}

// replacePrepared queues a complete list whose items prepareListed
// returned.
func (q *eventQueue[T]) replacePrepared(list []T, resourceVersion string) error {
	return q.queueReplace(list, &bulkRecord[T]{resourceVersion: resourceVersion})
}

// queueReplace queues bulk as a replace record with list, whose items are
// prepared.
func (q *eventQueue[T]) queueReplace(list []T, bulk *bulkRecord[T]) error {
	bulk.list = list
	q.mu.Lock()
	first := !q.populated
	q.populated = true
	q.appendLocked(&queueRecord[T]{op: opReplace, bulk: bulk, firstList: first})
	q.mu.Unlock()
	return nil
}

// Resync queues one record asking for every cached object to be re-delivered.
func (q *eventQueue[T]) Resync() error { return q.resyncWithin(nil) }

// resyncWithin queues a resync of the cached objects within accepts (all
// if nil).
func (q *eventQueue[T]) resyncWithin(within func(T) bool) error {
	rec := queueRecord[T]{op: opResync}
	if within != nil {
		rec.bulk = &bulkRecord[T]{within: within}
	}
	q.mu.Lock()
	q.appendLocked(&rec)
	q.mu.Unlock()
	return nil
}

// Bookmark queues a record that sets the cache's resource version, in order
// with the events.
func (q *eventQueue[T]) Bookmark(resourceVersion string) error {
	var zero T
	return q.appendBookmark(zero, resourceVersion)
}

// bookmarkObject queues a bookmark with the object the watch carried it in
// (an empty object with the resource version), which the dispatcher hands to
// the handlers that have a BookmarkFunc.
func (q *eventQueue[T]) bookmarkObject(obj T) error {
	return q.appendBookmark(obj, obj.GetResourceVersion())
}

// appendBookmark queues a bookmark record; obj may be the zero T.
func (q *eventQueue[T]) appendBookmark(obj T, resourceVersion string) error {
	bulk := &bulkRecord[T]{resourceVersion: resourceVersion}
	q.mu.Lock()
	q.appendLocked(&queueRecord[T]{op: opBookmark, obj: obj, bulk: bulk})
	q.mu.Unlock()
	return nil
}

// dropWithin implements queueFeed.
func (q *eventQueue[T]) dropWithin(within func(T) bool, moved bool) {
	_ = q.queueReplace(nil, &bulkRecord[T]{within: within, moved: moved})
}

// partStore implements queueFeed.
func (q *eventQueue[T]) partStore(part cachePart[T]) ReflectorStore[T] {
	return partStore[T]{q: q, part: part}
}

// partStore is the ReflectorStore of a part of the cache (see
// queueFeed.partStore). It prepares what it is given before it holds the
// part: the transform and the index functions are user code, which may call
// back into the informer (Stats, say), and would deadlock against a change
// of the part waiting for its holders.
type partStore[T Object] struct {
	q    *eventQueue[T]
	part cachePart[T]
}

// event queues obj as an op event if the part holds it.
func (s partStore[T]) event(op queueOp, obj T) error {
	var zero T
	if obj == zero {
		return errNilObject
	}
	var rec queueRecord[T]
	var values prepValues
	if !s.q.prepareEvent(op, obj, &rec, &values) {
		return nil
	}
	// The part's objects are as the cache holds them: transformed.
	s.part.hold()
	defer s.part.release()
	if s.part.holds(rec.obj) {
		s.q.appendEvent(&rec, &values)
	}
	return nil
}

func (s partStore[T]) Add(obj T) error    { return s.event(opAdd, obj) }
func (s partStore[T]) Update(obj T) error { return s.event(opUpdate, obj) }
func (s partStore[T]) Delete(obj T) error { return s.event(opDelete, obj) }

// Replace replaces the cached objects of the part with those of list it
// holds.
func (s partStore[T]) Replace(list []T, resourceVersion string) error {
	list = s.q.prepareListed(list, nil)
	s.part.hold()
	defer s.part.release()
	within := s.part.within()
	kept := list[:0]
	for _, obj := range list {
		if within(obj) {
			kept = append(kept, obj)
		}
	}
	clear(list[len(kept):])
	return s.q.queueReplace(kept, &bulkRecord[T]{resourceVersion: resourceVersion, within: within, applied: s.part.listed})
}

// Resync re-delivers the cached objects of the part.
func (s partStore[T]) Resync() error {
	s.part.hold()
	defer s.part.release()
	return s.q.resyncWithin(s.part.within())
}

// Bookmark sets the cache's resource version, as the queue's does.
func (s partStore[T]) Bookmark(resourceVersion string) error {
	return s.q.Bookmark(resourceVersion)
}

// transformed applies the transform to obj. It reports false, after logging
// and counting, if the transform failed, panicked or returned no object.
func (q *eventQueue[T]) transformed(op queueOp, obj T) (T, bool) {
	if q.transform == nil {
		return obj, true
	}
	out, err := q.callTransform(obj)
	var zero T
	if err == nil && out == zero {
		err = errTransformReturnedNothing
	}
	if err != nil {
		q.transformErrors.Add(1)
		q.logger.Error(err, "Transform failed, dropping the object", "event", op.String(), "object", klog.KObj(obj))
		return zero, false
	}
	return out, true
}

// callTransform runs the transform, turning a panic into an error so that a
// bad object cannot take the reflector down.
func (q *eventQueue[T]) callTransform(obj T) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transform panicked: %v", r)
		}
	}()
	return q.transform(obj)
}

// appendLocked adds rec at the end of the queue, wakes the consumer if it
// is waiting and returns the chunk holding rec (nil if the queue is
// closed). q.mu must be held.
func (q *eventQueue[T]) appendLocked(rec *queueRecord[T]) *queueChunk[T] {
	if q.closed {
		return nil
	}
	if q.tail == nil || q.tail.n == len(q.tail.records) {
		if q.tail != nil && q.chunkSize < queueChunkSize {
			q.growChunksLocked()
		}
		c := q.free
		if c != nil {
			q.free, c.next = c.next, nil
			q.freeCount--
			q.freeReused = true
		} else {
			size := max(q.chunkSize, firstQueueChunkSize)
			c = &queueChunk[T]{records: make([]queueRecord[T], size)}
			c.arena.records = size
		}
		if q.tail == nil {
			q.head = c
		} else {
			q.tail.next = c
		}
		q.tail = c
	}
	q.tail.records[q.tail.n] = *rec
	q.tail.n++
	q.pending++
	if q.waiting {
		q.ready.Signal()
	}
	return q.tail
}

// growChunksLocked doubles the queue's chunk size (a chain filled a
// chunk) and lets the emptied chunks of the old size go. q.mu must be held.
func (q *eventQueue[T]) growChunksLocked() {
	q.chunkSize = min(2*max(q.chunkSize, firstQueueChunkSize), queueChunkSize)
	q.free, q.freeCount = nil, 0
}

// next blocks until records are pending and returns all of them, oldest
// first, as a chain of chunks taken in one lock acquisition. It returns
// false once the queue is closed; records still pending then are dropped,
// as client-go's informer stops processing when it is stopped. The caller
// owns the chain until it hands it back with recycle.
func (q *eventQueue[T]) next() (*queueChunk[T], bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == nil && !q.closed {
		q.waiting = true
		q.ready.Wait()
		q.waiting = false
	}
	if q.closed {
		return nil, false
	}
	batch := q.head
	q.head, q.tail, q.pending = nil, nil, 0
	return batch, true
}

// recycle takes back a chain returned by next once it has been processed,
// keeping up to maxFreeChunks emptied chunks of the current chunk size for
// reuse (a chunk of another size, made before the size changed, goes).
func (q *eventQueue[T]) recycle(batch *queueChunk[T]) {
	for c := batch; c != nil; {
		next := c.next
		clear(c.items())
		c.arena.reset()
		c.n, c.next = 0, nil
		q.mu.Lock()
		if q.freeCount < maxFreeChunks && len(c.records) == max(q.chunkSize, firstQueueChunkSize) {
			c.next = q.free
			q.free = c
			q.freeCount++
		}
		q.mu.Unlock()
		c = next
	}
}

// releaseIdleChunks lets the emptied chunks kept for reuse go, and the
// chunk size fall back to the first, if none was reused since its previous
// call: an informer calls it after each garbage collection
// (gcwork.AfterEachGC). The chunks are there for the speed of steady
// traffic, which reuses them between two collections; an idle queue would
// hold them (up to maxFreeChunks of 172 KB) for nothing, until traffic
// resumes and allocates new ones. It runs on the runtime's cleanup
// goroutine, so it does not wait for mu: a queue whose mu is held is busy
// anyway.
func (q *eventQueue[T]) releaseIdleChunks() {
	if !q.mu.TryLock() {
		return
	}
	if !q.freeReused {
		q.free, q.freeCount, q.chunkSize = nil, 0, 0
	}
	q.freeReused = false
	q.mu.Unlock()
}

// close wakes the consumer and makes next return false from now on.
func (q *eventQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.head, q.tail, q.pending = nil, nil, 0
	q.free, q.freeCount = nil, 0
	q.ready.Broadcast()
	q.mu.Unlock()
}

// len returns the number of records waiting for the consumer.
func (q *eventQueue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}

// markSynced records that the initial list has been processed.
func (q *eventQueue[T]) markSynced() {
	q.syncedOnce.Do(func() {
		q.synced.Store(true)
		close(q.syncedCh)
	})
}

// hasSynced reports whether the initial list has been processed.
func (q *eventQueue[T]) hasSynced() bool { return q.synced.Load() }
