package informer

import "k8s.io/klog/v2"

// The informer's dispatcher goroutine: it takes the queued records in
// batches, applies them to the cache and hands the resulting notifications
// to the listeners.

// dispatchChunk is the number of notifications the dispatcher collects
// before handing them to the listeners.
const dispatchChunk = 512

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
		// A handler added while the batch was processed, after its last
		// pause, is admitted now.
		i.tryAdmitJoiners()
	}
}

// process applies a batch of records in order. The cache is always updated
// before the listeners receive the corresponding notifications.
func (i *Informer[T]) process(logger klog.Logger, batch *queueChunk[T]) {
	i.dispatchMu.Lock()
	defer i.dispatchMu.Unlock()
	i.admitJoiners()
	i.filterResync = i.proc.anyNotDueForResync()
	initial := !i.queue.hasSynced()
	for chunk := batch; chunk != nil; chunk = chunk.next {
		initial = i.processChunk(logger, chunk.items(), initial)
	}
	i.flush()
	if !i.listenersToldSynced && i.queue.hasSynced() {
		// The queue becomes synced while the dispatcher processes its first
		// list, or before it takes a first record that is not a list.
		i.listenersToldSynced = true
		for _, l := range i.proc.snapshot() {
			l.noteSynced()
		}
	}
}

// processChunk applies records in order and returns whether the next records
// are still part of the initial list. i.dispatchMu must be held. Between
// records, where everything stored has been handed over, it admits the
// handlers waiting to join.
func (i *Informer[T]) processChunk(logger klog.Logger, records []queueRecord[T], initial bool) bool {
	for k := 0; k < len(records); {
		rec := &records[k]
		switch rec.op {
		case opAdd, opUpdate, opDelete:
			k += i.applyWrites(logger, records[k:min(k+maxWritesPerLock, len(records))], initial)
			i.publishApplied()
		case opReplace:
			i.applyReplace(logger, rec.bulk, initial)
			if !rec.firstList {
				i.publishApplied()
			}
			k++
		case opResync:
			for _, obj := range i.indexer.List() {
				if rec.bulk == nil || rec.bulk.within(obj) {
					i.note(notification[T]{kind: notifyUpdate, old: obj, obj: obj, resync: true})
				}
			}
			k++
		case opBookmark:
			i.indexer.Bookmark(rec.bulk.resourceVersion)
			i.publishApplied()
			if rec.obj != *new(T) {
				i.note(notification[T]{kind: notifyBookmark, obj: rec.obj})
			}
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
			// Published after the sync, so that a caller whose
			// WaitForResourceVersion returned on the first list also sees
			// HasSynced (CheckConsistency relies on it).
			i.publishApplied()
		}
		if rec.bulk != nil && rec.bulk.applied != nil {
			i.flush()
			rec.bulk.applied()
		}
		if len(i.notes) >= dispatchChunk/2 {
			i.flush()
		}
		if i.joinPending.Load() {
			i.flush()
			i.admitJoiners()
			i.filterResync = i.proc.anyNotDueForResync()
		}
	}
	return initial
}

// publishApplied lets the waiters of WaitForResourceVersion see what the
// cache has applied. It runs once per group of records, never per event.
func (i *Informer[T]) publishApplied() {
	i.applied.set(i.indexer.LastStoreSyncResourceVersion())
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
	// Index functions are not called under the cache's lock: values that
	// are missing (an index function failed) or stale (an index was added)
	// are computed first.
	indexCount := i.indexer.publishedCount()
	for k := 0; k < len(records) && records[k].op.isWrite(); k++ {
		if rec := &records[k]; rec.op != opDelete && rec.prep.indexCount != indexCount {
			i.indexer.refreshPrep(rec.obj, &rec.prep)
		}
	}
	i.indexer.beginWrites()
	i.indexer.warmed(warmWrites(i.indexer, records))
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
		case err == errStalePrep:
			// An index was added since refreshPrep: the caller calls
			// again from this record.
			i.indexer.endWrites()
			if i.detector != nil {
				i.detector.trackWrites(records[:n])
			}
			return n
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
	if i.detector != nil {
		i.detector.trackWrites(records[:n])
	}
	return n
}

// applyReplace swaps the cache for a complete list, then notes a
// final-state-unknown deletion for every cached object missing from the
// list, and an update or add for each listed object in list order.
func (i *Informer[T]) applyReplace(logger klog.Logger, bulk *bulkRecord[T], initial bool) {
	var removed, previous []T
	var err error
	if bulk.within != nil {
		removed, previous, err = i.indexer.replaceWithin(bulk.list, bulk.resourceVersion, bulk.within)
	} else {
		removed, previous, err = i.indexer.replaceAll(bulk.list, bulk.resourceVersion)
	}
	if err != nil {
		i.storeFailed(logger, err, opReplace, *new(T))
		return
	}
	if i.detector != nil {
		i.detector.track(bulk.list...)
	}
	for _, obj := range removed {
		i.note(notification[T]{kind: notifyDelete, obj: obj, finalStateUnknown: !bulk.moved, moved: bulk.moved})
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
