package informer

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// expectBackoff checks that the reflector, having made calls calls so far,
// waits at least min and less than max before its next call.
func (h *reflectorHarness) expectBackoff(calls int, min, max time.Duration) {
	h.t.Helper()
	h.waitForTimers(1)
	h.clock.Step(min - time.Millisecond)
	// The fake clock fires due timers within Step, so a timer still waiting
	// and no new call mean the delay is longer.
	if !h.clock.HasWaiters() || len(h.lw.Calls()) != calls {
		h.t.Fatalf("after %v: backoff over too early", min-time.Millisecond)
	}
	h.clock.Step(max - min - time.Nanosecond + time.Millisecond)
	h.calls(calls + 1)
}

func TestReflectorBackoffIsJitteredAndDoubles(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	failures := make([]error, 7)
	for i := range failures {
		failures[i] = apierrors.NewServiceUnavailable(fmt.Sprint("down ", i))
	}
	h.lw.FailNextList(failures...)
	h.start()
	h.calls(1)
	base := 800 * time.Millisecond
	for i := range 6 {
		// Each delay is the base jittered by up to 100%.
		h.expectBackoff(i+1, base, 2*base)
		base *= 2
		if err := h.handledError(); !errors.Is(err, failures[i]) {
			t.Fatalf("failure %d: handled %v", i, err)
		}
	}
}

func TestReflectorBackoffCapsAndResets(t *testing.T) {
	// Without jitter the delays are exact: 0.8 s doubling to the 30 s cap,
	// and back to 0.8 s once 2 minutes have passed since the last reset.
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true, Backoff: &wait.Backoff{
		Duration: reflectorBackoffInit,
		Cap:      reflectorBackoffMax,
		Steps:    int(math.Ceil(float64(reflectorBackoffMax) / float64(reflectorBackoffInit))),
		Factor:   reflectorBackoffFactor,
	}})
	want := []time.Duration{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000, 800}
	failures := make([]error, len(want)+1)
	for i := range failures {
		failures[i] = apierrors.NewServiceUnavailable("down")
	}
	h.lw.FailNextList(failures...)
	h.start()
	h.calls(1)
	for i, ms := range want {
		d := ms * time.Millisecond
		h.expectBackoff(i+1, d, d+time.Millisecond)
	}
}

func TestReflectorErrorClassification(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tooLarge := apierrors.NewTimeoutError("Too large resource version", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
	tooLargeOldCause := apierrors.NewTimeoutError("slow", 1)
	tooLargeOldCause.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	type class struct{ Expired, TooLarge, Retriable bool }
	for name, tc := range map[string]struct {
		err  error
		want class
	}{
		"expired":                    {apierrors.NewResourceExpired("old"), class{Expired: true}},
		"gone":                       {apierrors.NewGone("old"), class{Expired: true}},
		"wrapped expired":            {fmt.Errorf("list: %w", apierrors.NewResourceExpired("old")), class{Expired: true}},
		"too large by cause":         {tooLarge, class{TooLarge: true}},
		"too large by old message":   {apierrors.NewTimeoutError("Too large resource version", 1), class{TooLarge: true}},
		"too large by old cause":     {tooLargeOldCause, class{TooLarge: true}},
		"plain timeout":              {apierrors.NewTimeoutError("slow", 1), class{}},
		"too many requests":          {apierrors.NewTooManyRequests("slow down", 1), class{Retriable: true}},
		"connection refused":         {refused, class{Retriable: true}},
		"wrapped connection refused": {fmt.Errorf("watch: %w", refused), class{Retriable: true}},
		"internal error":             {apierrors.NewInternalError(errors.New("x")), class{}},
		"plain error":                {errors.New("x"), class{}},
	} {
		t.Run(name, func(t *testing.T) {
			got := class{isExpiredError(tc.err), isTooLargeResourceVersionError(tc.err), isRetriableWatchError(tc.err)}
			diffOrFail(t, "class", tc.want, got)
		})
	}
}
