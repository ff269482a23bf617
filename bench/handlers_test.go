package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCountingHandlers(t *testing.T) {
	hs := newCountingHandlers(2, 3, nil)
	for _, h := range hs {
		h.onAdd()
		h.onUpdate()
	}
	if err := waitAll(hs, 10*time.Millisecond); err == nil {
		t.Fatal("waitAll returned before every handler counted 3 events")
	}
	for _, h := range hs {
		h.onDelete()
	}
	if err := waitAll(hs, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := checkCounts(hs, eventCounts{adds: 1, updates: 1, deletes: 1}); err != nil {
		t.Fatal(err)
	}
	if err := checkCounts(hs, eventCounts{adds: 3}); err == nil {
		t.Fatal("checkCounts accepted wrong counts")
	}
}

func TestSlowHandlerIsNotWaitedFor(t *testing.T) {
	slow := new(atomic.Bool)
	slow.Store(true)
	hs := newCountingHandlers(2, 1, slow)
	start := time.Now()
	hs[0].onAdd()
	if time.Since(start) < time.Millisecond {
		t.Error("the slow handler did not sleep")
	}
	hs[1].onAdd()
	if err := waitAll(hs, time.Second); err != nil {
		t.Fatal(err)
	}
	hs[0].onAdd() // the slow handler's counts are never checked
	if err := checkCounts(hs, eventCounts{adds: 1}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eventCounts{adds: 2}, hs[0].counts, cmp.AllowUnexported(eventCounts{})); diff != "" {
		t.Fatalf("slow handler counts (-want +got):\n%s", diff)
	}
}
