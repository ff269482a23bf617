package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
)

// opStats is the cost of one call of a measured operation.
type opStats struct {
	nsPerOp     float64
	allocsPerOp float64
	bytesPerOp  float64
}

// measureOp calls op repeatedly until one batch of calls lasts at least
// target, and returns the per-call cost of that last batch. The earlier,
// shorter batches calibrate the batch size; an untimed first call warms up
// caches and lazily built state.
func measureOp(op func() error, target time.Duration) (opStats, error) {
	if err := op(); err != nil {
		return opStats{}, err
	}
	n := 1
	for {
		stats, elapsed, err := runBatch(op, n)
		if err != nil {
			return opStats{}, err
		}
		if elapsed >= target || n >= 1<<30 {
			return stats, nil
		}
		// Aim 20% past the target, growing at least 2× and at most 100× per step.
		next := int(float64(n) * 1.2 * float64(target) / float64(max(elapsed, time.Microsecond)))
		n = min(max(next, 2*n), 100*n)
	}
}

// runBatch calls op n times and returns the per-call cost and the total time.
func runBatch(op func() error, n int) (opStats, time.Duration, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		if err := op(); err != nil {
			return opStats{}, 0, err
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	per := float64(n)
	return opStats{
		nsPerOp:     float64(elapsed.Nanoseconds()) / per,
		allocsPerOp: float64(after.Mallocs-before.Mallocs) / per,
		bytesPerOp:  float64(after.TotalAlloc-before.TotalAlloc) / per,
	}, elapsed, nil
}

// compareOps measures clientGo and ours count times each, interleaved
// (client-go, ours, client-go, …), and returns the medians of each metric.
func compareOps(cfg config, clientGo, ours func() error) (cg, our opStats, err error) {
	// Start from a collected heap, so that no cycle triggered by earlier
	// work (building a store of 100,000 pods) is charged to either side.
	runtime.GC()
	var cgRuns, ourRuns []opStats
	for range cfg.count {
		s, err := measureOp(clientGo, cfg.opTime)
		if err != nil {
			return cg, our, fmt.Errorf("client-go: %w", err)
		}
		cgRuns = append(cgRuns, s)
		s, err = measureOp(ours, cfg.opTime)
		if err != nil {
			return cg, our, fmt.Errorf("ours: %w", err)
		}
		ourRuns = append(ourRuns, s)
	}
	return medianOps(cgRuns), medianOps(ourRuns), nil
}

// medianOps returns the median of each metric separately.
func medianOps(runs []opStats) opStats {
	return opStats{
		nsPerOp:     benchkit.MedianOf(runs, func(s opStats) float64 { return s.nsPerOp }),
		allocsPerOp: benchkit.MedianOf(runs, func(s opStats) float64 { return s.allocsPerOp }),
		bytesPerOp:  benchkit.MedianOf(runs, func(s opStats) float64 { return s.bytesPerOp }),
	}
}

// memCounters is a snapshot of the cumulative allocation counters.
type memCounters struct {
	mallocs, bytes uint64
}

// readMemCounters returns the process's cumulative allocations.
func readMemCounters() memCounters {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memCounters{mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

// since returns the allocations made since c.
func (c memCounters) since() memCounters {
	now := readMemCounters()
	return memCounters{mallocs: now.mallocs - c.mallocs, bytes: now.bytes - c.bytes}
}
