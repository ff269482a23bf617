package informer

import "slices"

// Handler admission: a handler added before Run is registered with the
// processor at once; one added to a running informer joins the fan-out
// between two batches, with the cached objects as its initial adds, so that
// it sees every change exactly once (see fanOut.dispatchMu).

// addListener registers l with the processor, before the informer runs.
func (f *fanOut[T]) addListener(l *listener[T]) {
	f.membersMu.Lock()
	defer f.membersMu.Unlock()
	f.proc.add(l)
}

// join queues l, started, to be admitted with the cached objects at the
// dispatcher's next pause.
func (f *fanOut[T]) join(l *listener[T]) {
	// The listener is not synced before it holds its initial adds: this
	// count stands for them until admitJoiners has queued them.
	l.sync.pendingInitial.Add(1)
	f.membersMu.Lock()
	f.joining = append(f.joining, l)
	f.joinPending.Store(true)
	f.membersMu.Unlock()
}

// takeJoiners empties and returns the handlers still waiting to join, for
// Run to shut them down once no handler can be added.
func (f *fanOut[T]) takeJoiners() []*listener[T] {
	f.membersMu.Lock()
	defer f.membersMu.Unlock()
	joiners := f.joining
	f.joining = nil
	return joiners
}

// removeListener unregisters l, whether it has joined or still waits to.
func (f *fanOut[T]) removeListener(l *listener[T]) {
	f.membersMu.Lock()
	defer f.membersMu.Unlock()
	if !f.proc.remove(l) {
		f.joining = slices.DeleteFunc(f.joining, func(j *listener[T]) bool { return j == l })
	}
}

// tryAdmitJoiners admits the handlers waiting to join unless the event
// processing is busy, in which case it admits them itself at its next
// pause. It never waits: that is what lets a handler add handlers while the
// event processing waits for room in that handler's buffer.
func (f *fanOut[T]) tryAdmitJoiners() {
	// Publishing the joiner before TryLock, and the dispatcher checking
	// joinPending after Unlock, leaves no window in which neither admits.
	for f.joinPending.Load() && f.dispatchMu.TryLock() {
		f.admitJoiners()
		f.dispatchMu.Unlock()
	}
}

// admitJoiners registers the handlers waiting to join and queues their
// initial adds: the objects cached now, all of whose notifications have
// been handed to the listeners already. f.dispatchMu must be held.
func (f *fanOut[T]) admitJoiners() {
	if !f.joinPending.Load() {
		return
	}
	f.membersMu.Lock()
	joiners := f.joining
	f.joining = nil
	f.joinPending.Store(false)
	for _, l := range joiners {
		f.proc.add(l)
	}
	f.membersMu.Unlock()
	if len(joiners) == 0 {
		return
	}
	cached := f.store.List()
	notes := make([]notification[T], 0, min(len(cached), dispatchChunk))
	for _, l := range joiners {
		for start := 0; start < len(cached); start += dispatchChunk {
			notes = notes[:0]
			for _, obj := range cached[start:min(start+dispatchChunk, len(cached))] {
				notes = append(notes, notification[T]{kind: notifyAdd, obj: obj, initial: true})
			}
			l.enqueueInitial(notes)
		}
		l.sync.initialDone()
	}
}
