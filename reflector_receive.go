package informer

import "k8s.io/apimachinery/pkg/watch"

// maxEventsWithoutSelect bounds the events handleEvents takes in a row
// without also waiting on its context and timers, so that a watch that is
// never idle still stops and resyncs on time.
const maxEventsWithoutSelect = 64

// receiveBatch is the most waiting events an eventReceiver takes at once.
const receiveBatch = 16

// receivedEvent is a watch event with its object converted to T.
type receivedEvent[T Object] struct {
	watch.Event
	obj T    // Object as a T; zero if it is nil or not a T
	isT bool // Object is a T
	// closed reports that the watch's channel was closed; there is no
	// event.
	closed bool
}

// newReceivedEvent converts what a receive from a watch's channel returned.
func newReceivedEvent[T Object](event watch.Event, open bool) receivedEvent[T] {
	if !open {
		return receivedEvent[T]{closed: true}
	}
	obj, isT := event.Object.(T)
	return receivedEvent[T]{Event: event, obj: obj, isT: isT}
}

// eventReceiver takes the events of a watch for handleEvents. A busy watch
// usually has events waiting: the receiver takes all of them, up to a
// batch, with plain non-blocking receives, which cost a fraction of the
// select handleEvents needs to also wait on its context and timers; it only
// falls back to that select when no event is waiting, and after
// maxEventsWithoutSelect events in a row. The objects of a batch are warmed
// up together (see warmObjects).
type eventReceiver[T Object] struct {
	events  <-chan watch.Event
	batch   int // events taken at once, at most receiveBatch
	buf     [receiveBatch]receivedEvent[T]
	pending []receivedEvent[T] // taken, not yet returned by next
	inARow  int
	// warmed accumulates what warmObjects returns, so that its loads are
	// used.
	warmed int
}

// newEventReceiver returns a receiver for events taking batch events at
// once (1 to receiveBatch). A receiver must take one event at a time when
// its caller may stop between two events and leave the rest of the watch to
// another receiver.
func newEventReceiver[T Object](events <-chan watch.Event, batch int) *eventReceiver[T] {
	return &eventReceiver[T]{events: events, batch: min(max(batch, 1), receiveBatch)}
}

// next returns the next event, receiving the waiting ones when none is
// pending. It returns false when no event is waiting or too many were taken
// in a row: the caller then waits in its select and hands over the event it
// receives there with add.
func (rc *eventReceiver[T]) next() (receivedEvent[T], bool) {
	if len(rc.pending) == 0 {
		if rc.inARow < maxEventsWithoutSelect {
			rc.receiveWaiting()
		}
		if len(rc.pending) == 0 {
			rc.inARow = 0
			return receivedEvent[T]{}, false
		}
	}
	ev := rc.pending[0]
	rc.pending[0] = receivedEvent[T]{} // keep no reference to a handled object
	rc.pending = rc.pending[1:]
	rc.inARow++
	return ev, true
}

// receiveWaiting takes the events already waiting, up to a batch and up to
// a closed channel, without blocking.
func (rc *eventReceiver[T]) receiveWaiting() {
	n := 0
receive:
	for n < rc.batch {
		select {
		case event, open := <-rc.events:
			rc.buf[n] = newReceivedEvent[T](event, open)
			n++
			if !open {
				break receive
			}
		default:
			break receive
		}
	}
	rc.pending = rc.buf[:n]
	if n > 1 {
		rc.warmed += warmObjects(rc.pending)
	}
}

// warmObjects reads, for every object of events, the fields that queueing
// it reads first (name, namespace, resource version, labels), before any of
// them is handled. Objects coming from a watch have rarely been touched
// recently; these loads do not depend on each other, so the CPU overlaps
// their cache misses instead of waiting for each in turn (BenchmarkDispatch,
// W1). It returns a value computed from the loads so that they are not
// optimized away, which is also why it must not be inlined.
//
//go:noinline
func warmObjects[T Object](events []receivedEvent[T]) int {
	var zero T
	sum := 0
	for i := range events {
		if obj := events[i].obj; obj != zero {
			sum += len(obj.GetName()) + len(obj.GetNamespace()) + len(obj.GetResourceVersion()) + len(obj.GetLabels())
		}
	}
	for i := range events {
		if obj := events[i].obj; obj != zero {
			if name := obj.GetName(); name != "" {
				sum += int(name[0])
			}
			if namespace := obj.GetNamespace(); namespace != "" {
				sum += int(namespace[0])
			}
		}
	}
	return sum
}

// add makes an event the caller received itself the next one.
func (rc *eventReceiver[T]) add(event watch.Event, open bool) {
	rc.buf[0] = newReceivedEvent[T](event, open)
	rc.pending = rc.buf[:1]
}
