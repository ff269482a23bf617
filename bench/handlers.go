package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// eventCounts is what one handler has received.
type eventCounts struct {
	adds, updates, deletes int
}

// total returns the number of events counted.
func (c eventCounts) total() int { return c.adds + c.updates + c.deletes }

// countingHandler counts the events delivered to one handler and closes
// done when it has counted want of them. Each implementation calls a
// handler from one goroutine at a time, so the counters need no lock; the
// harness reads them only after the informer has stopped.
type countingHandler struct {
	counts eventCounts
	want   int
	done   chan struct{}
	// slow, when non-nil, makes every event sleep 1 ms while it is set.
	slow *atomic.Bool
}

// newCountingHandlers returns h handlers that each expect want events. When
// slow is non-nil, the first handler sleeps while slow is set and is not
// waited for (its done never closes).
func newCountingHandlers(h, want int, slow *atomic.Bool) []*countingHandler {
	hs := make([]*countingHandler, h)
	for i := range hs {
		hs[i] = &countingHandler{want: want, done: make(chan struct{})}
	}
	if slow != nil {
		hs[0].slow = slow
		hs[0].want = -1
	}
	return hs
}

func (c *countingHandler) onAdd()    { c.counts.adds++; c.counted() }
func (c *countingHandler) onUpdate() { c.counts.updates++; c.counted() }
func (c *countingHandler) onDelete() { c.counts.deletes++; c.counted() }

func (c *countingHandler) counted() {
	if c.slow != nil && c.slow.Load() {
		time.Sleep(time.Millisecond)
	}
	if c.counts.total() == c.want {
		close(c.done)
	}
}

// waitAll waits until every handler that is waited for has counted all its
// events, or fails after timeout.
func waitAll(handlers []*countingHandler, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for i, h := range handlers {
		if h.want < 0 {
			continue
		}
		select {
		case <-h.done:
		case <-deadline.C:
			return fmt.Errorf("handler %d did not receive its %d events within %v", i, h.want, timeout)
		}
	}
	return nil
}

// checkCounts fails unless every waited-for handler received exactly want.
// Call it only after the informer has stopped.
func checkCounts(handlers []*countingHandler, want eventCounts) error {
	for i, h := range handlers {
		if h.want < 0 {
			continue
		}
		if h.counts != want {
			return fmt.Errorf("handler %d received %+v, want %+v", i, h.counts, want)
		}
	}
	return nil
}
