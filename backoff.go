package informer

import (
	"context"
	"errors"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// The reflector's backoff, as in client-go: it grows from 0.8 s to 30 s,
// each step jittered by up to 100%, so a failing API server sees about 0.22
// requests per second per reflector; after 2 minutes it starts over.
const (
	reflectorBackoffInit   = 800 * time.Millisecond
	reflectorBackoffMax    = 30 * time.Second
	reflectorBackoffReset  = 2 * time.Minute
	reflectorBackoffFactor = 2.0
	reflectorBackoffJitter = 1.0
)

var (
	// errStopRequested ends a watch because the reflector's context is done.
	errStopRequested = errors.New("stop requested")
	// errRelistRequested ends a watch so that the reflector lists again
	// (see requestRelist).
	errRelistRequested = errors.New("relist requested")
	// errNilListResult reports a ListerWatcher that returned neither a list
	// nor an error.
	errNilListResult = errors.New("list returned no result and no error")
	// errNilWatch reports a ListerWatcher that returned neither a watch nor
	// an error.
	errNilWatch = errors.New("watch returned no watch and no error")
	// errVeryShortWatch reports a watch that ended within a second without
	// delivering any event other than bookmarks, which suggests a server or
	// proxy problem.
	errVeryShortWatch = errors.New("very short watch: watch ended within a second without any event other than bookmarks")
)

// newReflectorDelay returns the delay function shared by the list-and-watch
// loop and the watch retries. It uses c, so that tests control time.
func newReflectorDelay(custom *wait.Backoff, c clock.Clock) wait.DelayFunc {
	backoff := wait.Backoff{
		Duration: reflectorBackoffInit,
		Cap:      reflectorBackoffMax,
		Steps:    int(math.Ceil(float64(reflectorBackoffMax) / float64(reflectorBackoffInit))),
		Factor:   reflectorBackoffFactor,
		Jitter:   reflectorBackoffJitter,
	}
	if custom != nil {
		backoff = *custom
	}
	return backoff.DelayWithReset(c, reflectorBackoffReset)
}

// sleep waits for d on the reflector's clock while serving resync. It
// returns errStopRequested when ctx ends first, or the error of a failed
// resync.
func (r *Reflector[T]) sleep(ctx context.Context, d time.Duration, resync *resyncTimer[T]) error {
	timer := r.clock.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return errStopRequested
		case <-timer.C():
			return nil
		case <-resync.C():
			if err := resync.fire(ctx); err != nil {
				return err
			}
		}
	}
}
