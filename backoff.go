package informer

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
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
	// errNilListResult reports a ListerWatcher that returned neither a list
	// nor an error.
	errNilListResult = errors.New("list returned no result and no error")
	// errNilWatch reports a ListerWatcher that returned neither a watch nor
	// an error.
	errNilWatch = errors.New("watch returned no watch and no error")
	// errVeryShortWatch reports a watch that ended within a second without
	// delivering any event, which suggests a server or proxy problem.
	errVeryShortWatch = errors.New("very short watch: watch ended within a second without any event")
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

// isExpiredError reports "410 Gone": the resource version is too old. Old
// servers said Gone, newer ones say Expired.
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isExpiredContinue reports that a continued list failed because its
// continue token expired.
func isExpiredContinue(err error, options metav1.ListOptions) bool {
	return apierrors.IsResourceExpired(err) && options.Continue != ""
}

// isTooLargeResourceVersionError reports that the requested resource
// version is newer than what the server has. Servers before 1.18.6 did not
// set the status cause and only said so in a timeout's message.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		return false
	}
	status := apiStatus.Status()
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			if cause.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(status.Message, "Too large resource version")
}

// isRetriableWatchError reports errors after which the watch is retried
// after a backoff rather than relisting: the server is overloaded (429) or
// unreachable (connection refused), and will most likely let the watch
// resume where it stopped.
func isRetriableWatchError(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}
