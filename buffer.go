package informer

import (
	"sync"
	"sync/atomic"
)

// listenerRingSize is the normal capacity of a listener's ring.
const listenerRingSize = 1024

// handlerBuffer holds the notifications waiting for one handler, in its
// ring, with the bound on them (HandlerOptions.MaxPending) and what
// happens at the bound (OverflowBlock: the dispatcher waits for room;
// OverflowCoalesce: notifications about one object merge). The dispatcher
// appends to it and the handler's goroutine takes from it, each under mu;
// roomWanted is read without it.
type handlerBuffer[T Object] struct {
	mu   sync.Mutex
	ring ring[notification[T]]
	room sync.Cond // signalled when a delivery makes room below maxPending
	// stopping is set once the listener stops accepting notifications.
	stopping bool
	// queued counts notifications accepted minus those cancelled.
	queued int64
	// popped is the absolute position of the ring's oldest element.
	popped uint64
	// latest maps an object to the absolute position of its latest pending
	// notification while coalescing; nil otherwise.
	latest     map[ObjectName]uint64
	maxPending int
	overflow   OverflowPolicy
	// roomWanted is set while the dispatcher waits for room (OverflowBlock).
	roomWanted atomic.Bool
	// counts are the listener's: the buffer reads what was delivered and
	// counts what it coalesces and drops.
	counts *handlerCounts
}

// init readies an empty buffer bounded by opts, counting in counts.
func (b *handlerBuffer[T]) init(opts HandlerOptions, counts *handlerCounts) {
	b.ring = newRing[notification[T]](listenerRingSize)
	b.maxPending = max(opts.MaxPending, 0)
	b.overflow = opts.Overflow
	b.counts = counts
	b.room.L = &b.mu
}

// pushAll appends notes in bulk, the common case: no bound, nothing
// filtered. b.mu must be held.
func (b *handlerBuffer[T]) pushAll(notes []notification[T]) {
	b.ring.pushAll(notes)
	b.queued += int64(len(notes))
}

// push appends n to the ring. b.mu must be held.
func (b *handlerBuffer[T]) push(n *notification[T]) {
	if b.latest != nil && n.kind != notifyBookmark {
		b.latest[NameOf(n.obj)] = b.popped + uint64(b.ring.len())
	}
	b.queued++
	b.ring.push(*n)
}

// full reports whether the bound applies to the next notification: the
// buffer holds maxPending, or is coalescing. b.mu must be held.
func (b *handlerBuffer[T]) full() bool {
	return b.maxPending > 0 && (b.latest != nil || b.pendingLocked() >= int64(b.maxPending))
}

// waitForRoom blocks until fewer than maxPending notifications are pending
// (OverflowBlock); signal wakes the handler's goroutine so that it makes
// room. It reports false if the listener stopped meanwhile. b.mu must be
// held; it is released while waiting.
func (b *handlerBuffer[T]) waitForRoom(signal func()) bool {
	for !b.stopping {
		// Announce the wait before checking, so that a delivery either is
		// seen by the check or sees the announcement and signals.
		b.roomWanted.Store(true)
		if b.pendingLocked() < int64(b.maxPending) {
			break
		}
		signal()
		b.room.Wait()
	}
	b.roomWanted.Store(false)
	return !b.stopping
}

// pendingLocked returns the number of notifications queued and not yet
// delivered, including the ones the goroutine has taken from the ring.
// b.mu must be held.
func (b *handlerBuffer[T]) pendingLocked() int64 {
	return b.queued - b.counts.delivered.Load()
}

// madeRoom wakes a dispatcher waiting for room (OverflowBlock) after a
// delivery. It is called once per delivered notification: the check is
// kept apart from the wake-up (signalRoom) so that it inlines into the
// delivery loop.
func (b *handlerBuffer[T]) madeRoom() {
	if b.maxPending > 0 && b.roomWanted.Load() {
		b.signalRoom()
	}
}

// signalRoom wakes a dispatcher waiting for room.
func (b *handlerBuffer[T]) signalRoom() {
	b.mu.Lock()
	b.room.Signal()
	b.mu.Unlock()
}

// coalesce merges n into the latest pending notification about the same
// object when the rules of OverflowCoalesce allow it, and reports whether it
// did, and whether that cancelled an initial add. Otherwise the caller
// queues n, and it becomes the object's latest notification. b.mu must be
// held.
func (b *handlerBuffer[T]) coalesce(n *notification[T]) (merged, cancelledInitial bool) {
	if b.latest == nil {
		b.latest = make(map[ObjectName]uint64)
	}
	name := NameOf(n.obj)
	pos, ok := b.latest[name]
	if !ok || pos < b.popped {
		return false, false
	}
	e := b.ring.at(int(pos - b.popped))
	switch {
	case e.kind == notifyAdd && n.kind == notifyUpdate,
		e.kind == notifyUpdate && n.kind == notifyUpdate:
		e.obj = n.obj
		e.resync = e.resync && n.resync
		b.counts.coalesced.Add(1)
	case e.kind == notifyUpdate && n.kind == notifyDelete:
		*e = *n
		b.counts.coalesced.Add(1)
	case e.kind == notifyAdd && n.kind == notifyDelete:
		cancelledInitial = e.initial
		*e = notification[T]{}
		delete(b.latest, name)
		b.queued--
		b.counts.coalesced.Add(2)
	default:
		return false, false
	}
	return true, cancelledInitial
}

// take moves up to n notifications from the ring to batch.
func (b *handlerBuffer[T]) take(batch []notification[T], n int) []notification[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return batch
	}
	batch = b.ring.popInto(batch, n)
	b.popped += uint64(len(batch))
	if b.ring.len() == 0 {
		b.latest = nil // everything pending was taken: stop coalescing
	}
	return batch
}

// stop makes the buffer refuse notifications from now on and releases a
// dispatcher waiting for room.
func (b *handlerBuffer[T]) stop() {
	b.mu.Lock()
	b.stopping = true
	b.room.Broadcast()
	b.mu.Unlock()
}

// drop stops the buffer and drops what is left, counting it.
func (b *handlerBuffer[T]) drop() {
	b.mu.Lock()
	b.stopping = true
	b.ring.reset()
	b.latest = nil
	b.counts.dropped.Store(max(b.queued-b.counts.delivered.Load(), 0))
	b.room.Broadcast()
	b.mu.Unlock()
}

// queuedCount returns queued, under mu.
func (b *handlerBuffer[T]) queuedCount() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}
