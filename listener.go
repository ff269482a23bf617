package informer

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// deliveryBatch is the most notifications a listener takes from its ring
// per lock acquisition.
const deliveryBatch = 512

// listenerRingSize is the normal capacity of a listener's ring.
const listenerRingSize = 1024

// panicLogInterval is the shortest time between two log lines about one
// handler's panics after the first, which is logged with its stack. A
// handler that panics on every event would otherwise write a stack per
// event (tens of thousands of lines a second); the count is what matters
// after the first, and HandlerStats.Panics has every one.
const panicLogInterval = 10 * time.Second

// listener delivers notifications to one handler from its own goroutine, so
// that a slow handler delays nobody else. The dispatcher appends batches of
// notifications to the listener's ring under its lock; the goroutine takes
// them out in batches and calls the handler without holding the lock.
type listener[T Object] struct {
	handler      ResourceEventHandler[T]
	bookmark     func(resourceVersion string) // HandlerOptions.BookmarkFunc
	name         string
	logger       klog.Logger // set before the goroutine starts
	hasLogger    bool        // logger came from HandlerOptions
	crashOnPanic bool
	// clock times the panic log lines (see panicLogInterval); set before
	// the goroutine starts.
	clock        clock.PassiveClock
	maxPending   int
	overflow     OverflowPolicy
	informerSync func() bool
	// started is set when the goroutine is launched; guarded by the
	// informer's mu.
	started bool

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
	latest map[ObjectName]uint64

	wake     chan struct{} // capacity 1: "the ring may have notifications"
	stop     chan struct{}
	stopOnce sync.Once
	finished chan struct{} // closed once the goroutine has exited or will never run
	doneOnce sync.Once
	removed  atomic.Bool
	// roomWanted is set while the dispatcher waits for room (OverflowBlock).
	roomWanted atomic.Bool

	// metrics, if set, times the handler's batches; set before the
	// goroutine starts.
	metrics HandlerMetrics
	// hooks, if set, are the informer's observers': the mutation detector
	// records the objects handed to the handler at the places handOuts. Set
	// before the goroutine starts.
	hooks    *observers[T]
	handOuts [notifyDelete + 1]handOutKey

	pendingInitial atomic.Int64 // initial-list adds not yet delivered
	delivered      atomic.Int64
	panics         atomic.Int64
	coalesced      atomic.Int64
	dropped        atomic.Int64

	// The handler's goroutine only: whether a panic was logged, when the
	// last panic line was written, and the panics since then not logged.
	panicLogged    bool
	lastPanicLog   time.Time
	unloggedPanics int64

	// synced is closed once hasSynced is true (see noteSynced).
	synced     chan struct{}
	syncedOnce sync.Once

	// Resync scheduling, guarded by processor.resyncMu; resyncDue is read by
	// the dispatcher without that lock.
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time
	resyncDue       atomic.Bool
}

// newListener returns a listener for h; informerSync reports whether the
// informer has processed its first list.
func newListener[T Object](h ResourceEventHandler[T], name string, opts HandlerOptions, informerSync func() bool) *listener[T] {
	l := &listener[T]{
		handler:      h,
		bookmark:     opts.BookmarkFunc,
		name:         name,
		crashOnPanic: opts.CrashOnPanic,
		clock:        clock.RealClock{},
		maxPending:   max(opts.MaxPending, 0),
		overflow:     opts.Overflow,
		informerSync: informerSync,
		ring:         newRing[notification[T]](listenerRingSize),
		wake:         make(chan struct{}, 1),
		stop:         make(chan struct{}),
		finished:     make(chan struct{}),
		synced:       make(chan struct{}),
	}
	if opts.Logger != nil {
		l.logger, l.hasLogger = *opts.Logger, true
	}
	l.room.L = &l.mu
	return l
}

// enqueue appends notes to the ring, applying the resync filter and the
// overflow policy, then wakes the goroutine. s summarizes notes. Called by
// the dispatcher only.
func (l *listener[T]) enqueue(notes []notification[T], s noteSummary) {
	l.enqueueNotes(notes, s, true)
}

// enqueueInitial appends the initial adds of a handler added to a running
// informer. It never waits for room, even with OverflowBlock: whoever admits
// the handler holds the dispatcher's lock, and the handler's own calls may
// need the informer, so waiting there could deadlock. The dispatcher waits
// for room before it hands the handler anything else.
func (l *listener[T]) enqueueInitial(notes []notification[T]) {
	l.enqueueNotes(notes, noteSummary{initialAdds: len(notes)}, false)
}

// enqueueNotes is enqueue; mayWait false makes OverflowBlock go over the
// bound instead of waiting.
func (l *listener[T]) enqueueNotes(notes []notification[T], s noteSummary, mayWait bool) {
	resyncDue := l.resyncDue.Load()
	l.mu.Lock()
	if l.maxPending == 0 && !l.stopping && (resyncDue || s.resyncs == 0) && (l.bookmark != nil || s.bookmarks == 0) {
		// The common case: every notification goes in, copied in bulk.
		l.ring.pushAll(notes)
		l.queued += int64(len(notes))
		if s.initialAdds > 0 {
			l.pendingInitial.Add(int64(s.initialAdds))
		}
		l.mu.Unlock()
		l.signal()
		return
	}
	for i := range notes {
		n := &notes[i]
		if n.resync && !resyncDue || n.kind == notifyBookmark && l.bookmark == nil {
			continue
		}
		if l.stopping {
			break
		}
		if l.maxPending > 0 && (l.latest != nil || l.pendingLocked() >= int64(l.maxPending)) {
			if l.overflow == OverflowCoalesce {
				if n.kind != notifyBookmark && l.coalesce(n) {
					continue
				}
			} else if mayWait && !l.waitForRoom() {
				break
			}
		}
		l.push(n)
	}
	l.mu.Unlock()
	l.signal()
}

// push appends n to the ring. l.mu must be held.
func (l *listener[T]) push(n *notification[T]) {
	if l.latest != nil && n.kind != notifyBookmark {
		l.latest[NameOf(n.obj)] = l.popped + uint64(l.ring.len())
	}
	if n.kind == notifyAdd && n.initial {
		l.pendingInitial.Add(1)
	}
	l.queued++
	l.ring.push(*n)
}

// signal wakes the goroutine unless a wake-up is already pending.
func (l *listener[T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// waitForRoom blocks until fewer than maxPending notifications are pending
// (OverflowBlock). It reports false if the listener stopped
// meanwhile. l.mu must be held; it is released while waiting.
func (l *listener[T]) waitForRoom() bool {
	for !l.stopping {
		// Announce the wait before checking, so that a delivery either is
		// seen by the check or sees the announcement and signals.
		l.roomWanted.Store(true)
		if l.pendingLocked() < int64(l.maxPending) {
			break
		}
		l.signal()
		l.room.Wait()
	}
	l.roomWanted.Store(false)
	return !l.stopping
}

// pendingLocked returns the number of notifications queued and not yet
// delivered, including the ones the goroutine has taken from the ring.
// l.mu must be held.
func (l *listener[T]) pendingLocked() int64 {
	return l.queued - l.delivered.Load()
}

// countDelivered records a returned handler call and, with OverflowBlock,
// wakes a dispatcher waiting for room.
func (l *listener[T]) countDelivered() {
	l.delivered.Add(1)
	if l.maxPending > 0 && l.roomWanted.Load() {
		l.mu.Lock()
		l.room.Signal()
		l.mu.Unlock()
	}
}

// coalesce merges n into the latest pending notification about the same
// object when the rules of OverflowCoalesce allow it, and reports whether it
// did. Otherwise the caller queues n, and it becomes the object's latest
// notification. l.mu must be held.
func (l *listener[T]) coalesce(n *notification[T]) bool {
	if l.latest == nil {
		l.latest = make(map[ObjectName]uint64)
	}
	name := NameOf(n.obj)
	pos, ok := l.latest[name]
	if !ok || pos < l.popped {
		return false
	}
	e := l.ring.at(int(pos - l.popped))
	switch {
	case e.kind == notifyAdd && n.kind == notifyUpdate,
		e.kind == notifyUpdate && n.kind == notifyUpdate:
		e.obj = n.obj
		e.resync = e.resync && n.resync
		l.coalesced.Add(1)
	case e.kind == notifyUpdate && n.kind == notifyDelete:
		*e = *n
		l.coalesced.Add(1)
	case e.kind == notifyAdd && n.kind == notifyDelete:
		if e.initial {
			if l.pendingInitial.Add(-1) == 0 {
				l.noteSynced()
			}
		}
		*e = notification[T]{}
		delete(l.latest, name)
		l.queued--
		l.coalesced.Add(2)
	default:
		return false
	}
	return true
}

// start launches the listener's goroutine, tracked by wg. logger is the
// informer's logger, used unless the handler has its own; im, if set,
// receives the handler's metrics.
func (l *listener[T]) start(wg *sync.WaitGroup, logger klog.Logger, im InformerMetrics) {
	if !l.hasLogger {
		l.logger = klog.LoggerWithValues(logger, "handler", l.name)
	}
	l.registerMetrics(im)
	l.started = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.run()
	}()
}

// registerMetrics registers a starting listener with its informer's
// metrics, if any. It runs before the listener's goroutine starts.
func (l *listener[T]) registerMetrics(im InformerMetrics) {
	if im != nil {
		l.metrics = im.AddHandler(l.name, l.stats)
	}
}

// deliverTimed delivers batch like deliverAll and reports how long it took.
// Only listeners with metrics use it, so that the others read no clock.
func (l *listener[T]) deliverTimed(batch []notification[T]) {
	start := time.Now()
	l.deliverAll(batch)
	l.metrics.ObserveBatch(time.Since(start))
}

// run delivers notifications until the listener is shut down.
func (l *listener[T]) run() {
	defer l.finish()
	batch := make([]notification[T], 0, deliveryBatch)
	for {
		select {
		case <-l.wake:
		case <-l.stop:
			return
		}
		for {
			batch = l.take(batch[:0])
			if len(batch) == 0 {
				break
			}
			l.hooks.handedOutToHandler(&l.handOuts, batch)
			if l.metrics == nil {
				l.deliverAll(batch)
			} else {
				l.deliverTimed(batch)
			}
			clear(batch)
			if l.removed.Load() {
				return
			}
		}
	}
}

// take moves up to deliveryBatch notifications from the ring to batch.
func (l *listener[T]) take(batch []notification[T]) []notification[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return batch
	}
	batch = l.ring.popInto(batch, deliveryBatch)
	l.popped += uint64(len(batch))
	if l.ring.len() == 0 {
		l.latest = nil // everything pending was taken: stop coalescing
	}
	return batch
}

// deliverAll calls the handler for each notification of batch, going on
// after a recovered panic.
func (l *listener[T]) deliverAll(batch []notification[T]) {
	for i := 0; i < len(batch); {
		i = l.deliverFrom(batch, i)
	}
}

// deliverFrom calls the handler for batch[i:] and returns len(batch), or the
// position after a notification whose handler call panicked. The recovery is
// set up once per call rather than once per notification.
func (l *listener[T]) deliverFrom(batch []notification[T], i int) (next int) {
	defer func() {
		if r := recover(); r != nil {
			l.recovered(r, &batch[next])
			next++
		}
	}()
	for next = i; next < len(batch); next++ {
		if l.removed.Load() {
			return len(batch)
		}
		n := &batch[next]
		switch n.kind {
		case notifyAdd:
			l.handler.OnAdd(n.obj, n.initial)
		case notifyUpdate:
			l.handler.OnUpdate(n.old, n.obj)
		case notifyDelete:
			l.handler.OnDelete(DeletedObject[T]{Name: NameOf(n.obj), Object: n.obj, FinalStateUnknown: n.finalStateUnknown, Moved: n.moved})
		case notifyBookmark:
			l.bookmark(n.obj.GetResourceVersion())
		default:
			continue
		}
		if n.initial {
			if l.pendingInitial.Add(-1) == 0 {
				l.noteSynced()
			}
		}
		l.countDelivered()
	}
	return next
}

// recovered handles a panic of the handler call for n: it is logged and
// counted, n counts as delivered, and with CrashOnPanic the panic goes on.
func (l *listener[T]) recovered(r any, n *notification[T]) {
	l.panics.Add(1)
	if n.initial {
		if l.pendingInitial.Add(-1) == 0 {
			l.noteSynced()
		}
	}
	l.countDelivered()
	l.logPanic(r, n)
	if l.crashOnPanic {
		panic(r)
	}
}

// logPanic logs the handler's first panic with its stack, and then at most
// one line per panicLogInterval: the latest panic, without a stack, and the
// number of panics since the previous line. The panics in between are only
// counted; finish logs the count of those left when the listener stops.
func (l *listener[T]) logPanic(r any, n *notification[T]) {
	now := l.clock.Now()
	switch {
	case !l.panicLogged:
		l.panicLogged, l.lastPanicLog = true, now
		l.logger.Error(fmt.Errorf("%v", r), "Event handler panicked", "handler", l.name,
			"notification", n.kind.String(), "object", klog.KObj(n.obj), "stack", string(debug.Stack()),
			"nextPanicsLoggedEvery", panicLogInterval)
	case now.Sub(l.lastPanicLog) >= panicLogInterval:
		count := l.unloggedPanics + 1
		l.unloggedPanics, l.lastPanicLog = 0, now
		l.logger.Error(fmt.Errorf("%v", r), "Event handler keeps panicking", "handler", l.name,
			"panics", count, "notification", n.kind.String(), "object", klog.KObj(n.obj))
	default:
		l.unloggedPanics++
	}
}

// shutdown stops deliveries: the goroutine exits after the handler call in
// progress, pending notifications are dropped, and a dispatcher blocked on
// this listener is released.
func (l *listener[T]) shutdown() {
	l.removed.Store(true)
	l.stopOnce.Do(func() { close(l.stop) })
	l.mu.Lock()
	l.stopping = true
	l.room.Broadcast()
	l.mu.Unlock()
}

// finish drops what is left and marks the listener finished. It runs when
// the goroutine exits, or at removal for a listener that never started.
func (l *listener[T]) finish() {
	l.mu.Lock()
	l.stopping = true
	l.ring.reset()
	l.latest = nil
	l.dropped.Store(max(l.queued-l.delivered.Load(), 0))
	l.room.Broadcast()
	l.mu.Unlock()
	l.doneOnce.Do(func() {
		if l.unloggedPanics > 0 {
			l.logger.Error(nil, "Event handler panicked more times before it stopped", "handler", l.name, "panics", l.unloggedPanics)
			l.unloggedPanics = 0
		}
		if l.metrics != nil {
			l.metrics.Remove()
		}
		close(l.finished)
	})
}

// hasSynced reports whether the informer has synced and every initial-list
// add queued for this handler has been delivered and has returned.
func (l *listener[T]) hasSynced() bool {
	return l.informerSync() && l.pendingInitial.Load() == 0
}

// noteSynced closes l.synced if the listener has synced. It is called after
// each of the two conditions of hasSynced may have become true: by the
// listener after it delivered an initial add, and by the dispatcher once
// the informer has synced (and for a handler added to a synced informer).
// Both conditions are atomics that never go back once both hold, so
// whichever side completes the pair sees it.
func (l *listener[T]) noteSynced() {
	if l.hasSynced() {
		l.syncedOnce.Do(func() { close(l.synced) })
	}
}

// syncedChan returns the channel closed once the listener has synced.
func (l *listener[T]) syncedChan() <-chan struct{} { return l.synced }

// stats returns the listener's counters.
func (l *listener[T]) stats() HandlerStats {
	delivered, dropped := l.delivered.Load(), l.dropped.Load()
	l.mu.Lock()
	queued := l.queued
	l.mu.Unlock()
	return HandlerStats{
		Pending:   max(queued-delivered-dropped, 0),
		Delivered: delivered,
		Panics:    l.panics.Load(),
		Coalesced: l.coalesced.Load(),
		Dropped:   dropped,
	}
}

func (l *listener[T]) handlerName() string           { return l.name }
func (l *listener[T]) finishedChan() <-chan struct{} { return l.finished }
