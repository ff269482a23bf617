package main

import (
	"runtime"
	"testing"
	"time"
)

// tinyConfig runs every workload in well under a second (pod-7007 of W5
// must exist).
var tinyConfig = config{count: 1, storePods: 7500, dispatchPods: 100, opTime: time.Millisecond, churnCycles: 500}

// checkNoGoroutineLeft fails if more goroutines run than before, after
// giving exiting ones a moment.
func checkNoGoroutineLeft(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left running, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBothInformersSyncDeliverAndStop(t *testing.T) {
	for name, newInformer := range map[string]newInformerFunc{"client-go": newClientGoInformer, "ours": newOurInformer} {
		t.Run(name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			handlers := newCountingHandlers(2, 5+4, nil)
			it, err := newInformer(5, "5", dispatchEvents(1), handlers)
			if err != nil {
				t.Fatal(err)
			}
			stop := it.start()
			if err := waitFor("sync", func() bool { return isClosed(it.watches.started) && it.hasSynced() }, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			it.watches.release()
			if err := waitAll(handlers, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			// The watch adds pod-0 (already listed: an update), modifies it
			// twice and deletes it.
			if n := it.storeLen(); n != 4 {
				t.Errorf("store holds %d pods, want 4", n)
			}
			stop()
			stop() // harmless twice
			if err := checkCounts(handlers, eventCounts{adds: 5, updates: 3, deletes: 1}); err != nil {
				t.Error(err)
			}
			checkNoGoroutineLeft(t, before)
		})
	}
}
