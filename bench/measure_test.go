package main

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMedianOps(t *testing.T) {
	runs := []opStats{{nsPerOp: 9, allocsPerOp: 1}, {nsPerOp: 1, allocsPerOp: 3}, {nsPerOp: 5, allocsPerOp: 2}}
	if diff := cmp.Diff(opStats{nsPerOp: 5, allocsPerOp: 2}, medianOps(runs), cmp.AllowUnexported(opStats{})); diff != "" {
		t.Fatalf("medianOps (-want +got):\n%s", diff)
	}
}

var sinkBytes []byte

func TestMeasureOpCountsAllocations(t *testing.T) {
	stats, err := measureOp(func() error {
		sinkBytes = make([]byte, 1000)
		return nil
	}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// One 1,000-byte allocation per call lands in the 1,024-byte size class;
	// allow a little for other goroutines of the test binary.
	if stats.allocsPerOp < 1 || stats.allocsPerOp > 1.1 {
		t.Errorf("allocs/op = %v, want 1", stats.allocsPerOp)
	}
	if stats.bytesPerOp < 1000 || stats.bytesPerOp > 1100 {
		t.Errorf("B/op = %v, want 1,024", stats.bytesPerOp)
	}
	if stats.nsPerOp <= 0 {
		t.Errorf("ns/op = %v, want > 0", stats.nsPerOp)
	}
}

func TestMeasureOpStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	_, err := measureOp(func() error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	}, time.Second)
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("err %v after %d calls, want boom after 3", err, calls)
	}
}

func TestCompareOpsInterleaves(t *testing.T) {
	var order []string
	cfg := config{count: 2, opTime: time.Microsecond}
	_, _, err := compareOps(cfg,
		func() error { order = append(order, "cg"); return nil },
		func() error { order = append(order, "ours"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Collapse each measurement's calls to one entry.
	var runs []string
	for _, o := range order {
		if len(runs) == 0 || runs[len(runs)-1] != o {
			runs = append(runs, o)
		}
	}
	if diff := cmp.Diff([]string{"cg", "ours", "cg", "ours"}, runs); diff != "" {
		t.Fatalf("measurement order (-want +got):\n%s", diff)
	}
}
