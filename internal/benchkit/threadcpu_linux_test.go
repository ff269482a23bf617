package benchkit

import (
	"runtime"
	"testing"
)

func TestThreadCPUTimeCountsTheThreadsWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := ThreadCPUTime()
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the thread has used CPU time: the clock never goes back
	// and moves only while this thread runs.
	for {
		now, err := ThreadCPUTime()
		if err != nil {
			t.Fatal(err)
		}
		if now < before {
			t.Fatalf("thread CPU time went back from %v to %v", before, now)
		}
		if now > before {
			return
		}
	}
}
