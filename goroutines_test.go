package informer

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// ExpectNoGoroutineLeak returns a check that fails tb if a goroutine started
// after this call is still running when the check is called: run it with
// t.Cleanup (or defer) once everything the test started should have
// stopped. It uses go.uber.org/goleak, as client-go's tests do, and waits up
// to plTimeout for goroutines that are still exiting; it asserts no timing.
// It is the one leak checker of this package's tests, internal and external.
func ExpectNoGoroutineLeak(tb testing.TB) func() {
	ignore := goleak.IgnoreCurrent()
	return func() {
		tb.Helper()
		// goleak.Find itself retries for about half a second; goroutines
		// of a loaded machine may need longer to unwind.
		deadline := time.Now().Add(plTimeout)
		for {
			err := goleak.Find(ignore)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				tb.Error(err)
				return
			}
		}
	}
}
