package main

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDispatchWhileSavingWorkload: W1save's rows are its five sides of ours
// against client-go's plain W1, with the saves counted for the two that
// save, each of which had a save under way when W1 started; and nothing is
// left running.
func TestDispatchWhileSavingWorkload(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := tinyConfig
	cfg.storePods = 2000
	rows, err := runDispatchWhileSaving(cfg)
	if err != nil {
		t.Fatal(err)
	}
	saves := "saves completed while W1 ran (median; client-go: none) (no ratio)"
	want := []rowShape{
		{"W1save", "H=1, ours plain", "ns/event"},
		{"W1save", "H=1, ours beside another informer holding 2000 pods, not saving", "ns/event"},
		{"W1save", "H=1, ours while another informer saves a snapshot of 2000 pods back to back", "ns/event"},
		{"W1save", "H=1, ours while another informer saves a snapshot of 2000 pods back to back", saves},
		{"W1save", "H=1, ours over 2000 other pods listed first, not saving", "ns/event"},
		{"W1save", "H=1, ours over 2000 other pods listed first, saving its snapshot back to back", "ns/event"},
		{"W1save", "H=1, ours over 2000 other pods listed first, saving its snapshot back to back", saves},
	}
	if diff := cmp.Diff(want, shapes(rows)); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if r.Ours < 0 || (r.Metric == "ns/event" && (r.Ours <= 0 || r.Theirs <= 0)) {
			t.Errorf("%s %s: client-go %v, ours %v", r.Case, r.Metric, r.Theirs, r.Ours)
		}
	}
	checkNoGoroutineLeft(t, before)
}
