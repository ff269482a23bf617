package informer

import "fmt"

// Replace records a complete list of the resource. Every listed object gets
// a DeltaReplaced delta (DeltaSync unless EmitDeltaTypeReplaced). Every queued or known
// key missing from list gets a DeltaDeleted delta flagged FinalStateUnknown that
// holds the last known object: the newest queued one, else the known one.
//
// Unlike client-go, Replace is all or nothing: if an item is invalid or
// fails the transform, nothing is queued and the error names the item.
// The queue takes ownership of list. The resource version is not used.
func (f *DeltaFIFO[T]) Replace(list []T, _ string) error {
	keys := make([]string, len(list))
	for i, obj := range list {
		key, err := fifoKeyOf(obj)
		if err != nil {
			return fmt.Errorf("%s: replace: item %d: %w", f.name, i, err)
		}
		keys[i] = key
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	for i, obj := range list {
		out, err := f.transformLocked(keys[i], obj)
		if err != nil {
			return fmt.Errorf("%s: replace: item %d: %w", f.name, i, err)
		}
		list[i] = out
	}

	action := DeltaSync
	if f.emitReplaced {
		action = DeltaReplaced
	}
	listed := make(map[string]struct{}, len(list))
	for i, obj := range list {
		listed[keys[i]] = struct{}{}
		f.appendLocked(keys[i], Delta[T]{Type: action, Object: obj})
	}

	deletions := 0
	// Appending to a queued key changes neither the map's keys nor the
	// queue's order, so the map order of this loop does not show.
	for key, deltas := range f.items {
		if _, ok := listed[key]; ok {
			continue
		}
		f.appendLocked(key, Delta[T]{Type: DeltaDeleted, Object: newestDelta(deltas).Object, FinalStateUnknown: true})
		deletions++
	}
	if f.knownObjects != nil {
		for _, key := range f.knownObjects.ListKeys() {
			if _, ok := listed[key]; ok {
				continue
			}
			if _, queued := f.items[key]; queued {
				continue
			}
			obj, ok := f.knownLocked(key)
			if !ok {
				continue
			}
			f.appendLocked(key, Delta[T]{Type: DeltaDeleted, Object: obj, FinalStateUnknown: true})
			deletions++
		}
	}

	if !f.populated {
		f.populated = true
		f.initialPopulationCount = len(listed) + deletions
		f.checkSyncedLocked()
	}
	return nil
}

// Resync records a DeltaSync delta for every known object whose key has no
// pending deltas: a queued change is newer than the known object, so
// syncing the known one would go back in time. Without KnownObjects it does
// nothing. It always returns nil; lookup failures are logged.
func (f *DeltaFIFO[T]) Resync() error {
	if f.knownObjects == nil {
		return nil
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	for _, key := range f.knownObjects.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		if obj, ok := f.knownLocked(key); ok {
			f.appendLocked(key, Delta[T]{Type: DeltaSync, Object: obj})
		}
	}
	return nil
}

// knownLocked looks key up in KnownObjects. An object that cannot be
// returned is logged and skipped: without an object, a typed delta has no
// key. (client-go queues a deletion record without an object instead.)
func (f *DeltaFIFO[T]) knownLocked(key string) (T, bool) {
	var zero T
	obj, exists, err := f.knownObjects.GetByKey(key)
	switch {
	case err != nil:
		f.logger.Error(err, "Looking up a known object failed; skipping it", "key", key)
	case !exists || obj == zero:
		f.logger.Info("Key listed by the known objects has no object; skipping it", "key", key)
	default:
		return obj, true
	}
	return zero, false
}
