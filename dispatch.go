package informer

import (
	"sync"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// The fan-out stage of an informer: its dispatcher goroutine takes the
// queued records in batches, applies them to the cache and hands the
// resulting notifications to the listeners; handlers join it between two
// batches (admission.go), and it signals the sync.

// fanOut is the stage between the queue and the handlers: dispatch,
// handler admission, the processor and the sync signalling in one place.
type fanOut[T Object] struct {
	store   *Indexer[T]
	queue   *eventQueue[T]
	hooks   *observers[T]
	applied *appliedVersion
	proc    processor[T]

	// membersMu serializes the changes of proc's listeners and of joining.
	// It is taken under the informer's mu, never the other way round.
	membersMu sync.Mutex
	// joining holds the handlers added to the running informer that have
	// not received their initial adds yet (guarded by membersMu);
	// joinPending is set while it is not empty.
	joining     []*listener[T]
	joinPending atomic.Bool
	// listeners counts the running listeners' goroutines.
	listeners sync.WaitGroup

	// dispatchMu is held while queued records are applied to the cache and
	// the resulting notifications handed to the listeners, and while joining
	// handlers are admitted with the cached objects. So a new handler sees
	// every change exactly once: in its initial adds or as a notification.
	// Its holder may wait for room in a listener (OverflowBlock), and handlers
	// may call the informer: so it is only ever taken by the dispatcher, or
	// with TryLock, and never while holding the informer's mu (see
	// tryAdmitJoiners).
	dispatchMu sync.Mutex
	// notes is the dispatcher's reusable buffer. It grows on first use,
	// to dispatchChunk at most, so that an informer with nothing to notify
	// holds none: a fleet's idle clusters (E6 (c)) would hold 13 KB each.
	notes []notification[T]
	// filterResync is set while some handler is not due for a resync: only
	// then must resync updates be told apart (dispatcher only).
	filterResync bool
	// listenersToldSynced is set once the listeners have been told that the
	// informer synced (dispatcher only).
	listenersToldSynced bool
	storeErrors         atomic.Int64
	// handlerCount numbers the handlers added without a name (guarded by
	// the informer's mu).
	handlerCount int
}

// dispatchChunk is the number of notifications the dispatcher collects
// before handing them to the listeners.
const dispatchChunk = 512

// dispatch applies queued records to the cache and hands the notifications
// to the listeners until the queue is closed.
func (f *fanOut[T]) dispatch(logger klog.Logger) {
	for {
		batch, ok := f.queue.next()
		if !ok {
			return
		}
		f.process(logger, batch)
		f.queue.recycle(batch)
		// A handler added while the batch was processed, after its last
		// pause, is admitted now.
		f.tryAdmitJoiners()
	}
}

// process applies a batch of records in order. The cache is always updated
// before the listeners receive the corresponding notifications.
func (f *fanOut[T]) process(logger klog.Logger, batch *queueChunk[T]) {
	f.dispatchMu.Lock()
	defer f.dispatchMu.Unlock()
	f.admitJoiners()
	f.filterResync = f.proc.anyNotDueForResync()
	initial := !f.synced()
	for chunk := batch; chunk != nil; chunk = chunk.next {
		initial = f.processChunk(logger, chunk.items(), initial)
	}
	f.flush()
	if !f.listenersToldSynced && f.synced() {
		// The queue becomes synced while the dispatcher processes its first
		// list, or before it takes a first record that is not a list.
		f.listenersToldSynced = true
		for _, l := range f.proc.snapshot() {
			l.sync.note()
		}
	}
}

// processChunk applies records in order and returns whether the next records
// are still part of the initial list. f.dispatchMu must be held. Between
// records, where everything stored has been handed over, it admits the
// handlers waiting to join.
func (f *fanOut[T]) processChunk(logger klog.Logger, records []queueRecord[T], initial bool) bool {
	for k := 0; k < len(records); {
		rec := &records[k]
		switch rec.op {
		case opAdd, opUpdate, opDelete:
			k += f.applyWrites(logger, records[k:min(k+maxWritesPerLock, len(records))], initial)
			f.publishApplied()
		case opReplace:
			f.applyReplace(logger, rec.bulk, initial)
			if !rec.firstList {
				f.publishApplied()
			}
			k++
		case opResync:
			for _, obj := range f.store.List() {
				if rec.bulk == nil || rec.bulk.within(obj) {
					f.note(notification[T]{kind: notifyUpdate, old: obj, obj: obj, resync: true})
				}
			}
			k++
		case opBookmark:
			f.store.Bookmark(rec.bulk.resourceVersion)
			f.publishApplied()
			if rec.obj != *new(T) {
				f.note(notification[T]{kind: notifyBookmark, obj: rec.obj})
			}
			k++
		default:
			k++
		}
		if rec.firstList {
			// Synced only once the listeners hold every initial add, so
			// that a registration cannot report synced too early.
			f.flush()
			f.queue.markSynced() // see synced
			initial = false
			// Published after the sync, so that a caller whose
			// WaitForResourceVersion returned on the first list also sees
			// HasSynced (CheckConsistency relies on it).
			f.publishApplied()
		}
		if rec.bulk != nil && rec.bulk.applied != nil {
			f.flush()
			rec.bulk.applied()
		}
		if len(f.notes) >= dispatchChunk/2 {
			f.flush()
		}
		if f.joinPending.Load() {
			f.flush()
			f.admitJoiners()
			f.filterResync = f.proc.anyNotDueForResync()
		}
	}
	return initial
}

// synced reports whether the informer's first list has been applied and
// handed to the listeners, or its queue's first record was not a list (as
// in client-go's RealFIFO: there is no initial list to wait for). It is the
// one place the sync is decided: the dispatcher marks it after the first
// list (processChunk), the queue on a first record that is not a list, and
// the informer (HasSynced, HasSyncedChecker), its listeners (each then
// waits for its own initial adds, see handlerSync) and the
// dispatcher read it here. An informer whose source has more to deliver
// (a dynamic shard's ranges) adds that in Informer.HasSynced.
func (f *fanOut[T]) synced() bool { return f.queue.hasSynced() }

// handlerSync tracks whether one handler has synced
// ([Registration.HasSynced]): the informer has synced and the handler has
// returned from every initial add queued for it. The fan-out decides it:
// the dispatcher notes the informer's sync (process), admission counts a
// joining handler's initial adds, and the handler's goroutine notes each
// one it delivered.
type handlerSync struct {
	informerSync   func() bool
	pendingInitial atomic.Int64 // initial-list adds not yet delivered
	// synced is closed once hasSynced is true (see note).
	synced chan struct{}
	once   sync.Once
}

// init readies s for a handler of the informer whose sync informerSync
// reports.
func (s *handlerSync) init(informerSync func() bool) {
	s.informerSync = informerSync
	s.synced = make(chan struct{})
}

// hasSynced reports whether the informer has synced and every initial-list
// add queued for this handler has been delivered and has returned.
func (s *handlerSync) hasSynced() bool {
	return s.informerSync() && s.pendingInitial.Load() == 0
}

// note closes s.synced if the handler has synced. It is called after each
// of the two conditions of hasSynced may have become true: by the listener
// after it delivered an initial add (initialDone), and by the dispatcher
// once the informer has synced (and for a handler added to a synced
// informer). Both conditions are atomics that never go back once both
// hold, so whichever side completes the pair sees it.
func (s *handlerSync) note() {
	if s.hasSynced() {
		s.once.Do(func() { close(s.synced) })
	}
}

// initialDone records that one initial add was delivered (or cancelled by
// coalescing).
func (s *handlerSync) initialDone() {
	if s.pendingInitial.Add(-1) == 0 {
		s.note()
	}
}

// syncedChan is closed once synced is true.
func (f *fanOut[T]) syncedChan() <-chan struct{} { return f.queue.syncedCh }

// publishApplied lets the waiters of WaitForResourceVersion see what the
// cache has applied. It runs once per group of records, never per event.
func (f *fanOut[T]) publishApplied() {
	f.applied.set(f.store.LastStoreSyncResourceVersion())
}

// maxWritesPerLock is the most events applied to the cache under one lock:
// enough to amortize the lock, short enough that readers barely wait.
const maxWritesPerLock = 64

// applyWrites applies the leading add, update and delete records of records
// to the cache under one lock, notes their notifications, and returns how
// many it applied. Notes are never handed over here: a listener that blocks
// must not hold the cache's lock. The caller keeps fewer than dispatchChunk
// - maxWritesPerLock notes pending, so the buffer never grows past
// dispatchChunk.
func (f *fanOut[T]) applyWrites(logger klog.Logger, records []queueRecord[T], initial bool) int {
	f.store.beginWrites()
	f.store.warmed(warmWrites(f.store, records))
	n := 0
	for ; n < len(records) && records[n].op.isWrite(); n++ {
		rec := &records[n]
		if rec.op == opDelete {
			f.store.deletePrepared(&rec.prep)
			f.notes = append(f.notes, notification[T]{kind: notifyDelete, obj: rec.obj})
			continue
		}
		old, oldRV, existed, err := f.store.putPrepared(rec.obj, &rec.prep)
		switch {
		case err == errStalePrep:
			// An index was added since the record was queued, or an index
			// function failed then. Index functions are not called under
			// the cache's lock: the values of the records left are
			// computed again without it, and the caller calls again from
			// this record. Checking here rather than in a pass before the
			// lock saves that pass for every run.
			f.store.endWrites()
			f.hooks.writesApplied(records[:n])
			f.refreshPreps(records[n:])
			return n
		case err != nil:
			f.storeFailed(logger, err, rec.op, rec.obj)
		case existed:
			// Only handlers due for a resync get an update that changes
			// nothing (see isResync).
			resync := f.filterResync && oldRV == rec.prep.rv
			f.notes = append(f.notes, notification[T]{kind: notifyUpdate, old: old, obj: rec.obj, resync: resync})
		default:
			f.notes = append(f.notes, notification[T]{kind: notifyAdd, obj: rec.obj, initial: initial})
		}
	}
	f.store.endWrites()
	f.hooks.writesApplied(records[:n])
	return n
}

// refreshPreps computes again, without the cache's lock, the index values
// of the leading stores of records whose values are missing (an index
// function failed) or stale (an index was added).
func (f *fanOut[T]) refreshPreps(records []queueRecord[T]) {
	indexCount := f.store.publishedCount()
	for k := 0; k < len(records) && records[k].op.isWrite(); k++ {
		if rec := &records[k]; rec.op != opDelete && rec.prep.indexCount != indexCount {
			f.store.refreshPrep(rec.obj, &rec.prep)
		}
	}
}

// applyReplace swaps the cache for a complete list, then notes a
// final-state-unknown deletion for every cached object missing from the
// list, and an update or add for each listed object in list order.
func (f *fanOut[T]) applyReplace(logger klog.Logger, bulk *bulkRecord[T], initial bool) {
	var removed, previous []T
	var err error
	if bulk.within != nil {
		removed, previous, err = f.store.replaceWithin(bulk.list, bulk.resourceVersion, bulk.within)
	} else {
		removed, previous, err = f.store.replaceAll(bulk.list, bulk.resourceVersion)
	}
	if err != nil {
		f.storeFailed(logger, err, opReplace, *new(T))
		return
	}
	f.hooks.listApplied(bulk.list)
	for _, obj := range removed {
		f.note(notification[T]{kind: notifyDelete, obj: obj, finalStateUnknown: !bulk.moved, moved: bulk.moved})
	}
	var zero T
	for k, obj := range bulk.list {
		if previous != nil && previous[k] != zero {
			old := previous[k]
			f.note(notification[T]{kind: notifyUpdate, old: old, obj: obj, resync: f.isResync(old, obj)})
			continue
		}
		f.note(notification[T]{kind: notifyAdd, obj: obj, initial: initial})
	}
}

// isResync reports whether an update from old to obj is a resync update
// (same resource version), which only handlers due for a resync receive.
// When every handler is due the answer changes nothing, so it is not
// computed: that saves reading the old object, which is rarely in the CPU
// cache any more.
func (f *fanOut[T]) isResync(old, obj T) bool {
	return f.filterResync && old.GetResourceVersion() == obj.GetResourceVersion()
}

// storeFailed logs and counts a record the cache rejected; its
// notification is dropped, as in client-go.
func (f *fanOut[T]) storeFailed(logger klog.Logger, err error, op queueOp, obj T) {
	f.storeErrors.Add(1)
	var zero T
	if obj == zero {
		logger.Error(err, "Cache update failed, dropping the event", "event", op.String())
		return
	}
	logger.Error(err, "Cache update failed, dropping the event", "event", op.String(), "object", klog.KObj(obj))
}

// note adds a notification to the current chunk, handing the chunk over
// when it is full.
func (f *fanOut[T]) note(n notification[T]) {
	f.notes = append(f.notes, n)
	if len(f.notes) == dispatchChunk {
		f.flush()
	}
}

// flush hands the collected notifications to the listeners.
func (f *fanOut[T]) flush() {
	f.proc.distribute(f.notes)
	clear(f.notes)
	f.notes = f.notes[:0]
}

// warmWrites warms the prepared writes of the leading add, update and
// delete records of records (see Indexer.warm), before applyWrites applies
// any. It must not be inlined, so that the loads are issued as one run.
//
//go:noinline
func warmWrites[T Object](s *Indexer[T], records []queueRecord[T]) int {
	sum := 0
	for k := 0; k < len(records) && records[k].op.isWrite(); k++ {
		sum += s.warm(&records[k].prep)
	}
	return sum
}
