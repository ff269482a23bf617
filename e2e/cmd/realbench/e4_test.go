package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCountDifferencesCountsChangedMissingAndExtraKeys(t *testing.T) {
	listed := map[string]string{"a/same": "1", "a/changed": "2", "a/missing": "3"}
	cached := map[string]string{"a/same": "1", "a/changed": "9", "a/extra": "4"}
	got := []int{countDifferences(listed, cached), countDifferences(listed, listed), countDifferences(nil, nil)}
	if diff := cmp.Diff([]int{3, 0, 0}, got); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
}

func TestProcessCPUReadsProcStat(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	// Burn some CPU, so that the figure cannot be zero at 1/100 s ticks.
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	got, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatalf("processCPU: %v", err)
	}
	if got <= 0 || x == 0 {
		t.Errorf("processCPU = %v s, want > 0 after a busy loop", got)
	}
	if _, err := processCPU(-1); err == nil {
		t.Errorf("processCPU(-1): no error")
	}
}
