package informer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// notificationKind says which handler method a notification calls.
type notificationKind uint8

const (
	// notifyNone marks a pending notification cancelled by coalescing; it is
	// skipped.
	notifyNone notificationKind = iota
	notifyAdd
	notifyUpdate
	notifyDelete
	// notifyBookmark calls the handler's BookmarkFunc; its obj is the
	// bookmark's empty object carrying the resource version. Only listeners
	// with a BookmarkFunc queue it.
	notifyBookmark
)

// String returns the name of the kind, for logs.
func (k notificationKind) String() string {
	switch k {
	case notifyAdd:
		return "add"
	case notifyUpdate:
		return "update"
	case notifyDelete:
		return "delete"
	case notifyBookmark:
		return "bookmark"
	default:
		return "none"
	}
}

// notification is one handler call waiting to be made. It is held by value
// in the informer's and the listeners' buffers, so queueing it allocates
// nothing.
type notification[T Object] struct {
	// obj is the added object, the new state of an update, or the last known
	// state of a deleted object.
	obj T
	// old is the previous state of an update.
	old  T
	kind notificationKind
	// initial is isInInitialList of an add.
	initial bool
	// resync marks an update whose old and new states have the same resource
	// version: it only goes to the handlers due for a resync.
	resync bool
	// finalStateUnknown marks a deletion inferred from a relist.
	finalStateUnknown bool
	// moved marks a deletion of an object that moved to another member of
	// a shard group.
	moved bool
}

// minimumResyncPeriod is the smallest resync period a handler can get, as in
// client-go.
const minimumResyncPeriod = time.Second

// validateResync rejects a negative resync period; setting names the
// option in the error.
func validateResync(setting string, period time.Duration) error {
	if period < 0 {
		return fmt.Errorf("%s is negative (%v): use 0 for no resync", setting, period)
	}
	return nil
}

// resyncSchedule is when one listener is due for a resync. The processor
// keeps it, under its resyncMu; due is read without it, by the dispatcher
// and the listener.
type resyncSchedule struct {
	// requested is the period the handler asked for, period the one it
	// gets (see effectiveResyncPeriod), next when it is next due.
	requested time.Duration
	period    time.Duration
	next      time.Time
	due       atomic.Bool
}

// processor holds the listeners of an informer and decides which of them
// receive resync notifications.
type processor[T Object] struct {
	// listeners is replaced, never modified, so that the dispatcher and the
	// resync check read it without a lock. Writers hold the informer's
	// locks.
	listeners atomic.Pointer[[]*listener[T]]
	clock     clock.Clock

	// resyncMu guards the resync periods and deadlines of the listeners.
	resyncMu sync.Mutex
}

// snapshot returns the current listeners. The slice must not be modified.
func (p *processor[T]) snapshot() []*listener[T] {
	if ls := p.listeners.Load(); ls != nil {
		return *ls
	}
	return nil
}

// add registers l. The caller serializes add and remove.
func (p *processor[T]) add(l *listener[T]) {
	old := p.snapshot()
	next := make([]*listener[T], len(old), len(old)+1)
	copy(next, old)
	next = append(next, l)
	p.listeners.Store(&next)
}

// remove unregisters l and reports whether it was registered. The caller
// serializes add and remove.
func (p *processor[T]) remove(l *listener[T]) bool {
	old := p.snapshot()
	for i, candidate := range old {
		if candidate == l {
			next := make([]*listener[T], 0, len(old)-1)
			next = append(next, old[:i]...)
			next = append(next, old[i+1:]...)
			p.listeners.Store(&next)
			return true
		}
	}
	return false
}

// distribute hands notes to every listener: one lock acquisition and one
// non-blocking wake-up per listener. Resync notifications only go to the
// listeners that are due for a resync.
func (p *processor[T]) distribute(notes []notification[T]) {
	if len(notes) == 0 {
		return
	}
	s := summarize(notes)
	for _, l := range p.snapshot() {
		l.enqueue(notes, s)
	}
}

// noteSummary counts the notifications of a batch that need special
// handling, so that a listener can take the batch in bulk when none applies
// to it.
type noteSummary struct {
	resyncs     int // notifications only for listeners due for a resync
	initialAdds int // adds with isInInitialList
	bookmarks   int // notifications only for listeners with a BookmarkFunc
}

// summarize returns the noteSummary of notes.
func summarize[T Object](notes []notification[T]) noteSummary {
	var s noteSummary
	for i := range notes {
		if notes[i].resync {
			s.resyncs++
		}
		if notes[i].initial {
			s.initialAdds++
		}
		if notes[i].kind == notifyBookmark {
			s.bookmarks++
		}
	}
	return s
}

// shouldResync is the reflector's ShouldResync: it decides which listeners
// are due for a resync now, schedules their next one, and reports whether
// any is due. Until the next call, resync notifications go only to the due
// listeners, as in client-go.
func (p *processor[T]) shouldResync() bool {
	p.resyncMu.Lock()
	defer p.resyncMu.Unlock()
	now := p.clock.Now()
	anyDue := false
	for _, l := range p.snapshot() {
		r := &l.resync
		due := r.period > 0 && !now.Before(r.next)
		r.due.Store(due)
		if due {
			anyDue = true
			r.next = now.Add(r.period)
		}
	}
	return anyDue
}

// anyNotDueForResync reports whether some listener is not due for a
// resync, that is whether resync notifications must be filtered at all.
func (p *processor[T]) anyNotDueForResync() bool {
	for _, l := range p.snapshot() {
		if !l.resync.due.Load() {
			return true
		}
	}
	return false
}

// setResyncCheckPeriod re-derives every listener's effective resync period
// after the informer's check period was lowered (before start).
func (p *processor[T]) setResyncCheckPeriod(logger klog.Logger, check time.Duration) {
	p.resyncMu.Lock()
	defer p.resyncMu.Unlock()
	for _, l := range p.snapshot() {
		l.resync.period = effectiveResyncPeriod(logger, l.resync.requested, check)
	}
}

// initResync sets l's resync period and first deadline.
func (p *processor[T]) initResync(l *listener[T], requested, effective time.Duration) {
	p.resyncMu.Lock()
	defer p.resyncMu.Unlock()
	l.resync.requested = requested
	l.resync.period = effective
	l.resync.next = p.clock.Now().Add(effective)
	// As in client-go, a new listener receives resync notifications until
	// the next resync check says otherwise.
	l.resync.due.Store(true)
}

// effectiveResyncPeriod is the period a handler that asked for desired gets
// from an informer checking every check: none if desired is zero, else at
// least check (adjustResyncPeriod makes check non-zero if desired is).
func effectiveResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case desired < check:
		logger.Info("Warning: raising the handler's resync period to the informer's resync check period", "desired", desired, "resyncCheckPeriod", check)
		return check
	default:
		return desired
	}
}
