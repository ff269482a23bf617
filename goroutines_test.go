package informer

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// expectNoGoroutineLeak fails t if, after the test, a goroutine other than the
// caller's still runs code of this package. Goroutines may need a moment to
// unwind after the code under test returned, so it retries for a while; it
// never asserts timing.
func expectNoGoroutineLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		var stray []string
		for range 200 {
			stray = strayPackageGoroutines()
			if len(stray) == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("%d goroutine(s) outlived the test:\n%s", len(stray), strings.Join(stray, "\n\n"))
	})
}

// strayPackageGoroutines returns the stacks of goroutines other than the
// caller's that run this package's code and are not a test's own goroutine.
func strayPackageGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	stacks := bytes.Split(buf, []byte("\n\n"))
	var stray []string
	for _, s := range stacks[1:] { // the first stack is the caller's
		stack := string(s)
		if strings.Contains(stack, "kubetyped/informer") && !strings.Contains(stack, "testing.tRunner") {
			stray = append(stray, stack)
		}
	}
	return stray
}
