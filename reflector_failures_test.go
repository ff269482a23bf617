package informer

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"
)

// failureLog is a log entry about reaching the API server, comparable with
// cmp.Diff.
type failureLog struct {
	Message        string
	Verbosity      int
	FailedAttempts any
}

// failureLogs returns what h's reflector logged about reaching the server.
func (h *reflectorHarness) failureLogs() []failureLog {
	var logs []failureLog
	for _, entry := range h.logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		kv := entry.ParameterKVList
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "failedAttempts" {
				logs = append(logs, failureLog{Message: entry.Message, Verbosity: entry.Verbosity, FailedAttempts: kv[i+1]})
			}
		}
	}
	return logs
}

func TestReflectorWarnsOfAnUnreachableServerAfterRepeatedFailures(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	h := newReflectorHarness(t, ReflectorOptions{})
	h.lw.SetList("5")
	h.lw.FailNextWatch(refused, refused, refused, refused, refused, refused)
	h.start()
	for attempt := 1; attempt <= 6; attempt++ {
		h.calls(attempt)
		h.waitForTimers(1) // backing off after the failed attempt
		if err := h.r.lastError(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("after %d failed attempts, lastError() = %v, want connection refused", attempt, err)
		}
		h.clock.Step(time.Minute)
	}
	h.store.waitFor(t, 1)
	Eventually(t, "lastError() cleared by the streaming list", func() bool { return h.r.lastError() == nil })
	// Warned at default verbosity after 3 failures in a row, again once
	// their number doubled, then told that the server answers again: not a
	// line per retry.
	diffOrFail(t, "logs about reaching the server", []failureLog{
		{Message: "Warning: the API server cannot be reached; retrying with backoff", FailedAttempts: 3},
		{Message: "Warning: the API server cannot be reached; retrying with backoff", FailedAttempts: 6},
		{Message: "The API server can be reached again", FailedAttempts: 6},
	}, h.failureLogs())
	h.noHandledErrors()
}

func TestReflectorWarnsOfAnUnreachableServerOnLists(t *testing.T) {
	// The same warning when lists, not watches, fail (list+watch mode).
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("5")
	h.lw.FailNextList(refused, refused, refused)
	h.start()
	for attempt := 1; attempt <= 3; attempt++ {
		if err := h.handledError(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("list %d: handled error = %v, want connection refused", attempt, err)
		}
		h.skipBackoff()
	}
	h.store.waitFor(t, 1)
	diffOrFail(t, "logs about reaching the server", []failureLog{
		{Message: "Warning: the API server cannot be reached; retrying with backoff", FailedAttempts: 3},
		{Message: "The API server can be reached again", FailedAttempts: 3},
	}, h.failureLogs())
}

func TestReflectorLastErrorIsTheLastFailedList(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("5")
	listFailed := errors.New("list failed")
	h.lw.FailNextList(listFailed)
	h.start()
	if err := h.handledError(); !errors.Is(err, listFailed) {
		t.Fatalf("handled error = %v, want %v", err, listFailed)
	}
	if err := h.r.lastError(); !errors.Is(err, listFailed) {
		t.Errorf("lastError() = %v, want %v", err, listFailed)
	}
	h.skipBackoff()
	h.store.waitFor(t, 1)
	Eventually(t, "lastError() cleared by the list", func() bool { return h.r.lastError() == nil })
}

func TestReflectorRetriesAMissingResourceQuietly(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "")
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true, MissingResourceRetry: time.Hour})
	h.lw.SetList("5")
	h.lw.FailNextList(notFound, notFound, notFound)
	h.start()
	for attempt := 1; attempt <= 3; attempt++ {
		h.calls(attempt)
		h.waitForTimers(1)
		if err := h.r.lastError(); !apierrors.IsNotFound(err) {
			t.Fatalf("after %d failed lists, lastError() = %v, want NotFound", attempt, err)
		}
		// The backoff would have retried long before: the retry waits for
		// the whole period.
		h.clock.Step(time.Hour - time.Second)
		if n := len(h.lw.Calls()); n != attempt {
			t.Fatalf("retried after %d calls before MissingResourceRetry elapsed", n)
		}
		h.clock.Step(time.Second)
	}
	h.store.waitFor(t, 1)
	diffOrFail(t, "logs about the missing resource", []failureLog{
		{Message: "Warning: the server does not serve the resource; retrying quietly until it does", FailedAttempts: 1},
		{Message: "The server still does not serve the resource", Verbosity: 4, FailedAttempts: 2},
		{Message: "The server still does not serve the resource", Verbosity: 4, FailedAttempts: 3},
		{Message: "The server serves the resource again", FailedAttempts: 3},
	}, h.failureLogs())
	h.noHandledErrors()
}

func TestReflectorWithoutMissingResourceRetryReportsNotFound(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "")
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("5")
	h.lw.FailNextList(notFound)
	h.start()
	if err := h.handledError(); !apierrors.IsNotFound(err) {
		t.Fatalf("handled error = %v, want NotFound", err)
	}
	h.skipBackoff()
	h.store.waitFor(t, 1)
}
