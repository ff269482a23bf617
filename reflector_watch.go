package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// The API server ends each watch after a random timeout in [5m, 10m), which
// spreads reconnections over time and ends watches that went silent.
const (
	minWatchTimeout = 5 * time.Minute
	maxWatchTimeout = 2 * minWatchTimeout
)

// eventSink receives the objects of watch events: the store while watching,
// a collection while a streaming list is in progress.
type eventSink[T Object] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	Bookmark(resourceVersion string) error
}

// bookmarkObjectSink is a sink that takes a bookmark's object instead of
// its resource version: the informer's queue, which hands it to the
// handlers' BookmarkFunc.
type bookmarkObjectSink[T Object] interface {
	bookmarkObject(obj T) error
}

// watchTimeoutSeconds picks a random watch timeout.
func watchTimeoutSeconds() *int64 {
	seconds := int64(minWatchTimeout.Seconds() + rand.Float64()*(maxWatchTimeout-minWatchTimeout).Seconds())
	return &seconds
}

// watch consumes w (or, if nil, a new watch from the last resource version)
// and re-watches after each normal end, until ctx is done or the watch can
// no longer be resumed (then the caller lists again). It returns an error
// only when a watch could not be started for a reason that is not retried.
func (r *Reflector[T]) watch(ctx context.Context, w watch.Interface, resync *resyncTimer[T]) error {
	logger := klog.FromContext(ctx)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		start := r.clock.Now()
		// A watch from "" or "0" begins with synthetic Added events in no
		// particular order; their resource versions are not progress.
		fromKnownVersion := true
		if w == nil {
			if attempt > 0 {
				r.requests.watchRestarts.Add(1)
			}
			options := metav1.ListOptions{
				ResourceVersion:     r.LastSyncResourceVersion(),
				TimeoutSeconds:      watchTimeoutSeconds(),
				AllowWatchBookmarks: true,
			}
			fromKnownVersion = options.ResourceVersion != "" && options.ResourceVersion != "0"
			var err error
			w, err = r.lw.Watch(ctx, options)
			if err == nil && w == nil {
				err = errNilWatch
			}
			if err != nil {
				if !isRetriableWatchError(err) {
					r.relistAfter(err)
					return err
				}
				logger.V(4).Info("Watch failed, backing off", "err", err)
				r.noteUnreachable(ctx, err)
				if !r.backOff(ctx, resync) {
					return nil
				}
				continue
			}
			r.noteAnswered(ctx)
		}
		_, err := r.handleEvents(ctx, w, start, r.store, func(rv string, pastInitialEvents bool) {
			if fromKnownVersion || pastInitialEvents {
				r.setLastSyncResourceVersion(rv)
			}
		}, false, resync)
		w = nil // handleEvents stopped it
		switch {
		case err == nil:
			continue
		case errors.Is(err, errStopRequested):
		case errors.Is(err, errRelistRequested):
			logger.V(2).Info("Relisting to repair the cache")
		case isExpiredError(err):
			// Not marking the resource version unavailable: a list at it
			// returns data at least that fresh, and falls back to the latest
			// data itself if it has expired too.
			logger.V(4).Info("Watch closed", "err", err)
			r.relistAfter(err)
		case apierrors.IsTooManyRequests(err):
			logger.V(2).Info("Watch returned 429, backing off")
			if !r.backOff(ctx, resync) {
				return nil
			}
			continue
		default:
			logger.Info("Warning: watch ended with error", "err", err)
		}
		return nil
	}
	if w != nil {
		w.Stop()
	}
	return nil
}

// backOff waits for the next backoff delay while serving resync. It reports
// whether to go on watching: not when ctx is done or a resync failed (which
// is logged; the caller then lists again).
func (r *Reflector[T]) backOff(ctx context.Context, resync *resyncTimer[T]) bool {
	err := r.sleep(ctx, r.delay(), resync)
	if err != nil && !errors.Is(err, errStopRequested) {
		klog.FromContext(ctx).Info("Warning: watch ended with error", "err", err)
	}
	return err == nil
}

// handleEvents passes the events of w to sink until w ends, ctx is done, an
// Error event arrives or a resync fails. onResourceVersion gets the
// resource version of each accepted event, and whether an event other than
// Added has been seen. It stops w on return, except when
// untilInitialEventsEnd is set and the bookmark ending a streaming list's
// initial events arrived: then it returns at once with true, leaving w open.
func (r *Reflector[T]) handleEvents(ctx context.Context, w watch.Interface, start time.Time, sink eventSink[T],
	onResourceVersion func(rv string, pastInitialEvents bool), untilInitialEventsEnd bool, resync *resyncTimer[T],
) (initialEventsEnded bool, err error) {
	stopWatch := true
	defer func() {
		if stopWatch {
			w.Stop()
		}
	}()
	var watchdog *initialEventsWatchdog
	if untilInitialEventsEnd {
		watchdog = newInitialEventsWatchdog(r.clock, start)
		defer watchdog.stop()
	}
	events := w.ResultChan()
	// A streaming list's initial events end at a bookmark after which the
	// watch goes on elsewhere: take them one at a time.
	receiver := newEventReceiver[T](events, receiveBatch)
	if untilInitialEventsEnd {
		receiver = newEventReceiver[T](events, 1)
	}
	// A relist requested during a streaming list's initial events waits
	// for the watch that follows them (see requestRelist).
	relist := r.relist
	if untilInitialEventsEnd {
		relist = nil
	}
	pastInitialEvents := false
	// count is the number of accepted events, changes the number of them
	// that are not bookmarks.
	count, changes := 0, 0
	for {
		ev, received := receiver.next()
		if !received {
			select {
			case <-ctx.Done():
				return initialEventsEnded, errStopRequested
			case <-watchdog.C():
				watchdog.check(ctx, r.clock.Now())
			case <-resync.C():
				if err := resync.fire(ctx); err != nil {
					return initialEventsEnded, err
				}
			case <-relist:
				return initialEventsEnded, errRelistRequested
			case event, open := <-events:
				receiver.add(event, open)
			}
			continue
		}
		if ev.closed {
			// A watch that ends at once is broken whether or not it carried
			// bookmarks: a server or proxy that sends a bookmark and closes,
			// over and over, must meet the backoff, not an immediate
			// re-watch (client-go re-watches in a hot loop then).
			if changes == 0 && r.clock.Since(start) < time.Second {
				return initialEventsEnded, errVeryShortWatch
			}
			klog.FromContext(ctx).V(4).Info("Watch closed", "events", count)
			return initialEventsEnded, nil
		}
		event := ev.Event
		if event.Type == watch.Error {
			r.counters.errorEvents.Add(1)
			return initialEventsEnded, apierrors.FromObject(event.Object)
		}
		obj, ok := r.acceptEvent(ctx, ev)
		if !ok {
			continue
		}
		if event.Type != watch.Added {
			pastInitialEvents = true
		}
		if event.Type == watch.Bookmark && obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			initialEventsEnded = true
		}
		r.deliver(ctx, sink, event.Type, obj)
		if untilInitialEventsEnd {
			if ender, ok := sink.(initialEventsEnder); ok && ender.caughtUp() {
				initialEventsEnded = true // a restored cache caught up (resumeWatch)
			}
		}
		onResourceVersion(obj.GetResourceVersion(), pastInitialEvents)
		count++
		if event.Type != watch.Bookmark {
			changes++
		}
		if watchdog != nil {
			watchdog.observe(r.clock.Now())
		}
		if untilInitialEventsEnd && initialEventsEnded {
			stopWatch = false
			klog.FromContext(ctx).V(4).Info("Initial events ended", "events", count, "duration", r.clock.Since(start))
			return true, nil
		}
	}
}

// acceptEvent returns the event's object if it is a T the store can take;
// otherwise it logs and counts the event and returns false.
func (r *Reflector[T]) acceptEvent(ctx context.Context, ev receivedEvent[T]) (T, bool) {
	var zero T
	event, obj := ev.Event, ev.obj
	if event.Object == nil {
		return zero, r.dropEvent(ctx, &r.counters.nilObject, "Dropping a watch event without an object", event.Type)
	}
	if !ev.isT {
		return zero, r.dropEvent(ctx, &r.counters.wrongType, "Dropping a watch event with an object of an unexpected type", event.Type,
			"objectType", fmt.Sprintf("%T", event.Object))
	}
	if obj == zero {
		return zero, r.dropEvent(ctx, &r.counters.nilObject, "Dropping a watch event with a nil object", event.Type)
	}
	if r.checkKind {
		if gvk := obj.GetObjectKind().GroupVersionKind(); isTableKind(gvk.Group, gvk.Kind) || (r.expectedGVK != nil && *r.expectedGVK != gvk) {
			return zero, r.dropEvent(ctx, &r.counters.wrongType, "Dropping a watch event with an object of an unexpected kind", event.Type, "gvk", gvk)
		}
	}
	switch event.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if obj.GetName() == "" {
			return zero, r.dropEvent(ctx, &r.counters.nameless, "Dropping a watch event whose object has no name", event.Type,
				"resourceVersion", obj.GetResourceVersion())
		}
	case watch.Bookmark:
	default:
		return zero, r.dropEvent(ctx, &r.counters.unknownType, "Dropping a watch event of unknown type", event.Type)
	}
	return obj, true
}

// dropEvent counts and logs a dropped event; it returns false for the
// caller to pass on.
func (r *Reflector[T]) dropEvent(ctx context.Context, counter *atomic.Uint64, message string, eventType watch.EventType, keysAndValues ...any) bool {
	counter.Add(1)
	klog.FromContext(ctx).Error(nil, message, append([]any{"eventType", eventType}, keysAndValues...)...)
	return false
}

// deliver passes obj to sink according to the event type; a store error is
// logged and counted and the event is lost, as in client-go.
func (r *Reflector[T]) deliver(ctx context.Context, sink eventSink[T], eventType watch.EventType, obj T) {
	var err error
	switch eventType {
	case watch.Added:
		err = sink.Add(obj)
	case watch.Modified:
		err = sink.Update(obj)
	case watch.Deleted:
		err = sink.Delete(obj)
	case watch.Bookmark:
		// Bookmarks are rare (about one a minute), so the assertion costs
		// nothing that matters.
		if objects, ok := sink.(bookmarkObjectSink[T]); ok {
			err = objects.bookmarkObject(obj)
		} else {
			err = sink.Bookmark(obj.GetResourceVersion())
		}
	}
	if err != nil {
		r.counters.storeErrors.Add(1)
		klog.FromContext(ctx).Error(err, "Store rejected a watch event", "eventType", eventType, "object", KeyOf(obj))
	}
}

// isTableKind reports the meta.k8s.io Table kind, which a watch returns when
// asked for tables; informers cannot store it. Only objects whose kind is
// data, *unstructured.Unstructured, can carry it (as in client-go).
func isTableKind(group, kind string) bool {
	return group == metav1.GroupName && kind == "Table"
}
