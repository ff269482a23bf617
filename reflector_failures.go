package informer

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/klog/v2"
)

// unreachableLogAfter is the number of consecutive failed attempts to reach
// the API server after which the reflector says so at default verbosity.
// Single failures are common (a restarting server, a dropped connection)
// and are logged at V(2) only; then the warning repeats each time the count
// doubles, so that a long outage stays visible without a line per retry.
const unreachableLogAfter = 3

// failures records what went wrong with a reflector's requests: the last
// error, for the callers of lastError, and the run of consecutive attempts
// that failed to reach the server. Run's goroutine writes it; lastError may
// be read from any goroutine.
type failures struct {
	// consecutive counts failed attempts to reach the server since the
	// last request that got an answer (Run's goroutine only).
	consecutive int
	// nextLog is the value of consecutive at which the next warning is
	// logged (Run's goroutine only).
	nextLog int
	// missing counts the consecutive cycles that failed because the server
	// does not serve the resource, with MissingResourceRetry set (Run's
	// goroutine only).
	missing int
}

// noteFailure records err as the reason the reflector has no (or no fresh)
// state. Run's goroutine only.
func (r *Reflector[T]) noteFailure(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
}

// noteUnreachable records err, a failure to reach the server (connection
// refused, 429) that the reflector retries in place after a backoff, and
// logs a warning at default verbosity after unreachableLogAfter of them in
// a row and then each time their number doubles. Run's goroutine only.
func (r *Reflector[T]) noteUnreachable(ctx context.Context, err error) {
	r.noteFailure(err)
	f := &r.failures
	f.consecutive++
	if f.nextLog == 0 {
		f.nextLog = unreachableLogAfter
	}
	if f.consecutive == f.nextLog {
		f.nextLog *= 2
		klog.FromContext(ctx).Info("Warning: the API server cannot be reached; retrying with backoff",
			"failedAttempts", f.consecutive, "err", err)
	}
}

// noteAnswered records that the server answered a request (a list or a
// watch was opened), ending a run of unreachable attempts. Run's goroutine
// only.
func (r *Reflector[T]) noteAnswered(ctx context.Context) {
	f := &r.failures
	if f.missing > 0 {
		klog.FromContext(ctx).Info("The server serves the resource again", "failedAttempts", f.missing)
		f.missing = 0
	}
	if f.consecutive >= unreachableLogAfter {
		klog.FromContext(ctx).Info("The API server can be reached again", "failedAttempts", f.consecutive)
	}
	f.consecutive, f.nextLog = 0, 0
}

// noteSynced records that the store holds the server's full state: the last
// failure no longer explains anything. Run's goroutine only.
func (r *Reflector[T]) noteSynced() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = nil
}

// lastError returns the error of the reflector's last failed list, streaming
// list or watch since its store last received the full state, or nil. Safe
// for concurrent use.
func (r *Reflector[T]) lastError() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastErr
}

// retryMissing handles err, the failure of a list-and-watch cycle, when the
// reflector has a MissingResourceRetry and err says the server does not
// serve the resource ("404 Not Found": its CRD was deleted, or is not
// installed yet). It logs one line at default verbosity when the resource
// goes missing, the later failures only at V(4), and reports whether it
// handled err; the caller then waits MissingResourceRetry instead of the
// backoff, without calling the WatchErrorHandler. Run's goroutine only.
func (r *Reflector[T]) retryMissing(ctx context.Context, err error) bool {
	if r.missingResourceRetry <= 0 || !apierrors.IsNotFound(err) {
		return false
	}
	f := &r.failures
	f.missing++
	logger := klog.FromContext(ctx)
	if f.missing == 1 {
		logger.Info("Warning: the server does not serve the resource; retrying quietly until it does", "failedAttempts", f.missing, "retryPeriod", r.missingResourceRetry, "err", err)
	} else {
		logger.V(4).Info("The server still does not serve the resource", "failedAttempts", f.missing, "err", err)
	}
	return true
}
