package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// streamList gets the full state with a streaming list: a watch asking for
// the initial state as Added events, ended by a bookmark annotated
// "k8s.io/initial-events-end". The collected objects replace the store's
// content in one call, and the still-open watch is returned so that
// watching goes on without a gap. A watch that ends before the bookmark is
// restarted from scratch. It returns (nil, nil) when ctx is done, and an
// error when the server cannot serve a streaming list; the caller then
// lists instead.
func (r *Reflector[T]) streamList(ctx context.Context) (watch.Interface, error) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		options := metav1.ListOptions{
			ResourceVersion:      r.rewatchResourceVersion(),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents:    ptr.To(true),
			AllowWatchBookmarks:  true,
			TimeoutSeconds:       watchTimeoutSeconds(),
		}
		start := r.clock.Now()
		r.countFullStateRequest(true)
		collected := newInitialObjects(r.preparer)
		watchCtx := ctx
		if r.preparer != nil {
			// The initial objects the cache holds at the same resource
			// version need not be decoded (see cachedLookup).
			watchCtx = withCachedLookup(ctx, collected.reusing(r.preparer.cachedListed))
		}
		w, err := r.lw.Watch(watchCtx, options)
		if err == nil && w == nil {
			err = errNilWatch
		}
		if err != nil {
			if r.retryStreamList(ctx, err) {
				continue
			}
			return nil, err
		}
		r.noteAnswered(ctx)
		var listRV string
		ended, err := r.handleEvents(ctx, w, start, collected, func(rv string, pastInitialEvents bool) {
			// Only a bookmark (or a later event) carries the version the
			// initial state is complete at.
			if pastInitialEvents {
				listRV = rv
			}
		}, true, nil)
		if err != nil {
			if errors.Is(err, errStopRequested) {
				return nil, nil
			}
			if r.retryStreamList(ctx, err) {
				continue
			}
			return nil, err
		}
		if !ended {
			logger.V(4).Info("Streaming list ended before its initial events; restarting it")
			continue
		}
		r.setResourceVersionUnavailable(false)
		if err := r.replace(collected.list(), listRV); err != nil {
			w.Stop()
			return nil, fmt.Errorf("unable to sync streaming list result: %w", err)
		}
		r.setLastSyncResourceVersion(listRV)
		r.noteSynced()
		return w, nil
	}
	return nil, nil
}

// retryStreamList decides whether a failed streaming list is tried again
// (after a backoff for an overloaded or unreachable server, at the latest
// resource version for an expired or too large one). False means the caller
// falls back to a list.
func (r *Reflector[T]) retryStreamList(ctx context.Context, err error) bool {
	switch {
	case isRetriableWatchError(err):
		klog.FromContext(ctx).V(2).Info("Streaming list failed, backing off", "err", err)
		r.noteUnreachable(ctx, err)
		return r.sleep(ctx, r.delay(), nil) == nil
	case isExpiredError(err) || isTooLargeResourceVersionError(err):
		r.setResourceVersionUnavailable(true)
		r.relistAfter(err)
		return true
	default:
		// The list the caller falls back to records its own failure.
		return false
	}
}

// initialEventsWarningInterval is how long a streaming list may go without
// an event before a warning is logged (and logged again).
const initialEventsWarningInterval = 10 * time.Second

// initialEventsWatchdog warns while a streaming list makes no progress
// towards the end of its initial events, which points at a slow server or
// client. A nil *initialEventsWatchdog does nothing. It uses a timer that it
// rearms rather than a ticker, because a stopped timer is released on every
// clock implementation.
type initialEventsWatchdog struct {
	timer     clock.Timer
	start     time.Time
	lastEvent time.Time
}

func newInitialEventsWatchdog(c clock.Clock, start time.Time) *initialEventsWatchdog {
	return &initialEventsWatchdog{timer: c.NewTimer(initialEventsWarningInterval), start: start}
}

// C returns the channel on which check is due (nil if d is nil).
func (d *initialEventsWatchdog) C() <-chan time.Time {
	if d == nil {
		return nil
	}
	return d.timer.C()
}

// observe records that an event arrived at now.
func (d *initialEventsWatchdog) observe(now time.Time) { d.lastEvent = now }

// check logs a warning if no event arrived in the last interval, and
// rearms the timer.
func (d *initialEventsWatchdog) check(ctx context.Context, now time.Time) {
	d.timer.Reset(initialEventsWarningInterval)
	logger := klog.FromContext(ctx)
	switch {
	case d.lastEvent.IsZero():
		logger.Info("Warning: streaming list has not received any event yet", "waited", now.Sub(d.start))
	case now.Sub(d.lastEvent) >= initialEventsWarningInterval:
		logger.Info("Warning: streaming list has not received the end of its initial events", "lastEventAgo", now.Sub(d.lastEvent))
	}
}

// stop releases the timer.
func (d *initialEventsWatchdog) stop() { d.timer.Stop() }

// initialObjects collects the initial events of a streaming list: the
// latest state of each object by name, in order of first appearance. With
// a preparer, each object is prepared as it arrives (see listedPreparer).
type initialObjects[T Object] struct {
	index    map[ObjectName]int
	items    []T
	removed  int
	preparer listedPreparer[T]
	one      [1]T
	// reused are the cached objects the watch's lookup (reusing) handed
	// to its decoder, in order, not yet received: the decoder runs on the
	// watch's goroutine, ahead of Add.
	mu     sync.Mutex
	reused []T
	next   int // the first of reused not yet received
}

// reusing returns the cachedLookup of the streaming list's watch: find,
// noting each object found, so that Add keeps it as it is (the cache
// holds it, transformed already) instead of preparing it as a new object.
func (c *initialObjects[T]) reusing(find func(ObjectName, string) (T, bool)) cachedLookup[T] {
	return func(name ObjectName, resourceVersion string) (T, bool) {
		obj, ok := find(name, resourceVersion)
		if ok {
			c.mu.Lock()
			c.reused = append(c.reused, obj)
			c.mu.Unlock()
		}
		return obj, ok
	}
}

// takeReused reports whether obj is one the lookup found, forgetting it
// and those found before it (events the reflector dropped).
func (c *initialObjects[T]) takeReused(obj T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.next; i < len(c.reused); i++ {
		if c.reused[i] == obj {
			c.next = i + 1
			if c.next == len(c.reused) {
				clear(c.reused)
				c.reused, c.next = c.reused[:0], 0
			}
			return true
		}
	}
	return false
}

func newInitialObjects[T Object](preparer listedPreparer[T]) *initialObjects[T] {
	return &initialObjects[T]{index: make(map[ObjectName]int), preparer: preparer}
}

// Add records obj, replacing an earlier state of the same object.
func (c *initialObjects[T]) Add(obj T) error {
	name := NameOf(obj)
	if c.preparer != nil {
		c.one[0] = obj
		var reused []T
		if c.takeReused(obj) {
			reused = c.one[:]
		}
		kept := c.preparer.prepareListed(c.one[:], reused)
		if len(kept) == 0 {
			return nil // its transform failed (logged and counted)
		}
		obj = kept[0]
		c.one[0] = *new(T)
	}
	if i, ok := c.index[name]; ok {
		c.items[i] = obj
		return nil
	}
	c.index[name] = len(c.items)
	c.items = append(c.items, obj)
	return nil
}

// Update records obj like Add.
func (c *initialObjects[T]) Update(obj T) error { return c.Add(obj) }

// Delete forgets obj.
func (c *initialObjects[T]) Delete(obj T) error {
	name := NameOf(obj)
	if i, ok := c.index[name]; ok {
		var zero T
		c.items[i] = zero
		delete(c.index, name)
		c.removed++
	}
	return nil
}

// Bookmark ignores bookmarks: until the initial events end, the store has
// not got the state a bookmark would refer to.
func (c *initialObjects[T]) Bookmark(string) error { return nil }

// list returns the collected objects.
func (c *initialObjects[T]) list() []T {
	if c.removed == 0 {
		return c.items
	}
	var zero T
	items := make([]T, 0, len(c.items)-c.removed)
	for _, item := range c.items {
		if item != zero {
			items = append(items, item)
		}
	}
	return items
}
