package informer

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// resyncTimer calls the store's Resync every period while a reflector
// watches, if shouldResync agrees. A nil *resyncTimer never fires.
type resyncTimer[T Object] struct {
	timer        clock.Timer
	period       time.Duration
	shouldResync func() bool
	store        ReflectorStore[T]
}

// newResyncTimer starts the resync timer; nil when resync is disabled.
func (r *Reflector[T]) newResyncTimer(ctx context.Context) *resyncTimer[T] {
	if r.resyncPeriod <= 0 {
		return nil
	}
	return &resyncTimer[T]{
		timer:        r.clock.NewTimer(r.resyncPeriod),
		period:       r.resyncPeriod,
		shouldResync: r.shouldResync,
		store:        r.store,
	}
}

// C returns the channel that fires when a resync is due (nil if disabled).
func (t *resyncTimer[T]) C() <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.timer.C()
}

// fire resyncs the store if shouldResync agrees, then rearms the timer.
func (t *resyncTimer[T]) fire(ctx context.Context) error {
	if t.shouldResync == nil || t.shouldResync() {
		klog.FromContext(ctx).V(4).Info("Forcing resync")
		if err := t.store.Resync(); err != nil {
			return err
		}
	}
	t.timer.Reset(t.period)
	return nil
}

// stop releases the timer.
func (t *resyncTimer[T]) stop() {
	if t != nil {
		t.timer.Stop()
	}
}
