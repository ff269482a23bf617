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

// deliveryBatch is the most notifications a listener takes from its buffer
// per lock acquisition.
const deliveryBatch = 512

// panicLogInterval is the shortest time between two log lines about one
// handler's panics after the first, which is logged with its stack. A
// handler that panics on every event would otherwise write a stack per
// event (tens of thousands of lines a second); the count is what matters
// after the first, and HandlerStats.Panics has every one.
const panicLogInterval = 10 * time.Second

// listener delivers notifications to one handler from its own goroutine, so
// that a slow handler delays nobody else. The dispatcher appends batches of
// notifications to the listener's buffer under its lock; the goroutine takes
// them out in batches and calls the handler without holding the lock.
//
// Its parts each do one job: buf holds the pending notifications under the
// handler's overflow policy (buffer.go), counts are its HandlerStats,
// hooks reach the informer's observers (observers.go), panics times the
// log lines of its panics, sync says whether it has synced (the fan-out's,
// dispatch.go), and resync when it is due for a resync (the processor's,
// processor.go).
type listener[T Object] struct {
	handler      ResourceEventHandler[T]
	bookmark     func(resourceVersion string) // HandlerOptions.BookmarkFunc
	name         string
	logger       klog.Logger // set before the goroutine starts
	hasLogger    bool        // logger came from HandlerOptions
	crashOnPanic bool
	// started is set when the goroutine is launched; guarded by the
	// informer's mu.
	started bool

	buf handlerBuffer[T]

	wake     chan struct{} // capacity 1: "the buffer may have notifications"
	stop     chan struct{}
	stopOnce sync.Once
	finished chan struct{} // closed once the goroutine has exited or will never run
	doneOnce sync.Once
	removed  atomic.Bool

	// hooks are set before the goroutine starts.
	hooks  handlerHooks[T]
	counts handlerCounts
	// panics is the handler's goroutine's only.
	panics panicLog
	sync   handlerSync
	resync resyncSchedule
}

// handlerCounts are a handler's counters, which HandlerStats reports: the
// handler's goroutine counts its calls and panics, the buffer what it
// coalesced and dropped.
type handlerCounts struct {
	delivered, panics, coalesced, dropped atomic.Int64
}

// panicLog is when a handler's panics were logged (see panicLogInterval),
// kept by the handler's goroutine: whether a panic was logged, when the
// last panic line was written, and the panics since then not logged.
type panicLog struct {
	// clock times the lines; set before the goroutine starts.
	clock    clock.PassiveClock
	logged   bool
	last     time.Time
	unlogged int64
}

// newListener returns a listener for h; informerSync reports whether the
// informer has processed its first list.
func newListener[T Object](h ResourceEventHandler[T], name string, opts HandlerOptions, informerSync func() bool) *listener[T] {
	l := &listener[T]{
		handler:      h,
		bookmark:     opts.BookmarkFunc,
		name:         name,
		crashOnPanic: opts.CrashOnPanic,
		wake:         make(chan struct{}, 1),
		stop:         make(chan struct{}),
		finished:     make(chan struct{}),
		panics:       panicLog{clock: clock.RealClock{}},
	}
	if opts.Logger != nil {
		l.logger, l.hasLogger = *opts.Logger, true
	}
	l.buf.init(opts, &l.counts)
	l.sync.init(informerSync)
	return l
}

// attach gives l the informer's clock, which times its panic log lines,
// and its hooks. Call it before the goroutine starts.
func (l *listener[T]) attach(clk clock.PassiveClock, hooks handlerHooks[T]) {
	l.panics.clock = clk
	l.hooks = hooks
}

// enqueue appends notes to the buffer, applying the resync filter and the
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
	resyncDue := l.resync.due.Load()
	b := &l.buf
	b.mu.Lock()
	if b.maxPending == 0 && !b.stopping && (resyncDue || s.resyncs == 0) && (l.bookmark != nil || s.bookmarks == 0) {
		// The common case: every notification goes in, copied in bulk.
		b.pushAll(notes)
		if s.initialAdds > 0 {
			l.sync.pendingInitial.Add(int64(s.initialAdds))
		}
		b.mu.Unlock()
		l.signal()
		return
	}
	for i := range notes {
		n := &notes[i]
		if n.resync && !resyncDue || n.kind == notifyBookmark && l.bookmark == nil {
			continue
		}
		if b.stopping {
			break
		}
		if b.full() {
			if b.overflow == OverflowCoalesce {
				if n.kind != notifyBookmark {
					if merged, cancelledInitial := b.coalesce(n); merged {
						if cancelledInitial {
							l.sync.initialDone()
						}
						continue
					}
				}
			} else if mayWait && !b.waitForRoom(l.signal) {
				break
			}
		}
		if n.kind == notifyAdd && n.initial {
			l.sync.pendingInitial.Add(1)
		}
		b.push(n)
	}
	b.mu.Unlock()
	l.signal()
}

// signal wakes the goroutine unless a wake-up is already pending.
func (l *listener[T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// countDelivered records a returned handler call and, with OverflowBlock,
// wakes a dispatcher waiting for room.
func (l *listener[T]) countDelivered() {
	l.counts.delivered.Add(1)
	l.buf.madeRoom()
}

// start launches the listener's goroutine, tracked by wg. logger is the
// informer's logger, used unless the handler has its own; im, if set,
// receives the handler's metrics.
func (l *listener[T]) start(wg *sync.WaitGroup, logger klog.Logger, im InformerMetrics) {
	if !l.hasLogger {
		l.logger = klog.LoggerWithValues(logger, "handler", l.name)
	}
	l.hooks.registerMetrics(im, l.name, l.stats)
	l.started = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.run()
	}()
}

// deliverTimed delivers batch like deliverAll and reports how long it took.
// Only listeners with metrics use it, so that the others read no clock.
func (l *listener[T]) deliverTimed(batch []notification[T]) {
	start := time.Now()
	l.deliverAll(batch)
	l.hooks.metrics.ObserveBatch(time.Since(start))
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
			l.hooks.handedOut(batch)
			if l.hooks.metrics == nil {
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

// take moves up to deliveryBatch notifications from the buffer to batch.
func (l *listener[T]) take(batch []notification[T]) []notification[T] {
	return l.buf.take(batch, deliveryBatch)
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
			l.sync.initialDone()
		}
		l.countDelivered()
	}
	return next
}

// recovered handles a panic of the handler call for n: it is logged and
// counted, n counts as delivered, and with CrashOnPanic the panic goes on.
func (l *listener[T]) recovered(r any, n *notification[T]) {
	l.counts.panics.Add(1)
	if n.initial {
		l.sync.initialDone()
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
	p := &l.panics
	now := p.clock.Now()
	switch {
	case !p.logged:
		p.logged, p.last = true, now
		l.logger.Error(fmt.Errorf("%v", r), "Event handler panicked", "handler", l.name,
			"notification", n.kind.String(), "object", klog.KObj(n.obj), "stack", string(debug.Stack()),
			"nextPanicsLoggedEvery", panicLogInterval)
	case now.Sub(p.last) >= panicLogInterval:
		count := p.unlogged + 1
		p.unlogged, p.last = 0, now
		l.logger.Error(fmt.Errorf("%v", r), "Event handler keeps panicking", "handler", l.name,
			"panics", count, "notification", n.kind.String(), "object", klog.KObj(n.obj))
	default:
		p.unlogged++
	}
}

// shutdown stops deliveries: the goroutine exits after the handler call in
// progress, pending notifications are dropped, and a dispatcher blocked on
// this listener is released.
func (l *listener[T]) shutdown() {
	l.removed.Store(true)
	l.stopOnce.Do(func() { close(l.stop) })
	l.buf.stop()
}

// finish drops what is left and marks the listener finished. It runs when
// the goroutine exits, or at removal for a listener that never started.
func (l *listener[T]) finish() {
	l.buf.drop()
	l.doneOnce.Do(func() {
		if l.panics.unlogged > 0 {
			l.logger.Error(nil, "Event handler panicked more times before it stopped", "handler", l.name, "panics", l.panics.unlogged)
			l.panics.unlogged = 0
		}
		l.hooks.removeMetrics()
		close(l.finished)
	})
}

// hasSynced and syncedChan are the listener's sync (see handlerSync), for
// its Registration.
func (l *listener[T]) hasSynced() bool             { return l.sync.hasSynced() }
func (l *listener[T]) syncedChan() <-chan struct{} { return l.sync.synced }

// stats returns the listener's counters.
func (l *listener[T]) stats() HandlerStats {
	delivered, dropped := l.counts.delivered.Load(), l.counts.dropped.Load()
	queued := l.buf.queuedCount()
	return HandlerStats{
		Pending:   max(queued-delivered-dropped, 0),
		Delivered: delivered,
		Panics:    l.counts.panics.Load(),
		Coalesced: l.counts.coalesced.Load(),
		Dropped:   dropped,
	}
}

func (l *listener[T]) handlerName() string           { return l.name }
func (l *listener[T]) finishedChan() <-chan struct{} { return l.finished }
