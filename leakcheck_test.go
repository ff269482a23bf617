package informer_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// eventually polls cond until it holds, failing the test after a generous
// deadline (the deadline guards against hangs; it asserts no speed).
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutineIDs returns the ids of the live goroutines.
func goroutineIDs() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	ids := map[string]string{}
	for _, stack := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(stack, " [")
		ids[strings.TrimPrefix(header, "goroutine ")] = stack
	}
	return ids
}

// expectNoNewGoroutines returns a check that fails the test if goroutines
// started after this call are still alive (after a grace period for exiting
// ones).
func expectNoNewGoroutines(tb testing.TB) func() {
	before := goroutineIDs()
	return func() {
		tb.Helper()
		var leaked []string
		deadline := time.Now().Add(10 * time.Second)
		for {
			leaked = leaked[:0]
			for id, stack := range goroutineIDs() {
				if _, old := before[id]; !old && !strings.Contains(stack, "goroutineIDs") {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(leaked) > 0 {
			tb.Errorf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	}
}
