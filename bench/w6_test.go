package main

import (
	"runtime"
	"testing"
)

func TestMemoryWorkload(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := tinyConfig
	cfg.prodPods = 300
	rows, err := runMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	relist := "(d) relist of the unchanged 300 pods, GOGC=10"
	checkRows(t, rows, []rowShape{
		{"W6", "(a) 300 pods cached", "retained heap/pod (B)"},
		{"W6", "(a) 300 pods cached; ours over HTTP through its REST ListerWatcher", "retained heap/pod (B)"},
		{"W6", "(b) 300 pods, managed fields dropped", "retained heap/pod (B)"},
		{"W6", "(c) 300 pods, ours with a controller's projection dropped on the wire; client-go: (a)", "retained heap/pod (B)"},
		{"W6", relist + "; ours over HTTP through its REST ListerWatcher", "peak heap ÷ steady state"},
		{"W6", relist + "; ours over HTTP through its REST ListerWatcher", "peak heap Δ (MB)"},
		{"W6", relist + "; ours through a ListerWatcher decoding every item", "peak heap ÷ steady state"},
		{"W6", relist + "; ours through a ListerWatcher decoding every item", "peak heap Δ (MB)"},
		{"W6", "(e) 300 watch events decoded", "allocs/event"},
		{"W6", "(e) 300 watch events decoded", "B/event"},
		{"W6", "(e) 300 watch events decoded, managed fields dropped", "allocs/event"},
		{"W6", "(e) 300 watch events decoded, managed fields dropped", "B/event"},
		{"W6", "(e) 300 watch events decoded, managed fields dropped: ours on the wire, client-go by its transform", "allocs/event"},
		{"W6", "(e) 300 watch events decoded, managed fields dropped: ours on the wire, client-go by its transform", "B/event"},
	})
	checkNoGoroutineLeft(t, before)
}
