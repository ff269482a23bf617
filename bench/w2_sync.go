package main

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
)

// syncTimeout bounds one W2 run, and each wait of W6: generous, since a
// loaded 2-core machine (load 11) took over 3 minutes for client-go to
// deliver W6 (d)'s relist of 100,000 production-like pods; it is there to
// fail a run that lost events rather than hang it.
const syncTimeout = 15 * time.Minute

// syncResult is the cost of one W2 run. It has no peak heap: no GC cycle
// completes during W2's sync at full size (the list of pods is live
// already, so the collector's goal is far off), so the sampled heap only
// grows by the bytes allocated, which B/pod shows.
type syncResult struct {
	ms, allocsPerPod, bytesPerPod, retainedPerPod float64
}

// runInitialSync is W2: the list holds cfg.storePods pods and the watch
// stays idle; the informer runs until it has synced and one handler has
// received every add.
func runInitialSync(cfg config) ([]benchkit.Row, error) {
	var cgRuns, ourRuns []syncResult
	for range cfg.count {
		r, err := measureInitialSync(newClientGoInformer, cfg.storePods)
		if err != nil {
			return nil, fmt.Errorf("client-go: %w", err)
		}
		cgRuns = append(cgRuns, r)
		r, err = measureInitialSync(newOurInformer, cfg.storePods)
		if err != nil {
			return nil, fmt.Errorf("ours: %w", err)
		}
		ourRuns = append(ourRuns, r)
	}
	kase := "list of " + groupThousands(int64(cfg.storePods)) + " pods"
	var rows []benchkit.Row
	add := func(metric string, f func(syncResult) float64) {
		rows = append(rows, newRow("W2", kase, metric, benchkit.MedianOf(cgRuns, f), benchkit.MedianOf(ourRuns, f)))
	}
	add("time to synced (ms)", func(r syncResult) float64 { return r.ms })
	add("allocs/pod", func(r syncResult) float64 { return r.allocsPerPod })
	add("B/pod", func(r syncResult) float64 { return r.bytesPerPod })
	add("retained heap/pod (B)", func(r syncResult) float64 { return r.retainedPerPod })
	return rows, nil
}

// measureInitialSync runs W2 once on one implementation. The retained heap
// is the live heap after a collection, with the informer synced and the
// harness holding no pod, minus the live heap before the list was built.
func measureInitialSync(newInformer newInformerFunc, pods int) (syncResult, error) {
	handlers := newCountingHandlers(1, pods, nil)
	before := liveHeap()
	it, err := newInformer(pods, strconv.Itoa(pods), nil, handlers)
	if err != nil {
		return syncResult{}, err
	}
	it.watches.release() // the watch is idle: it may open at once

	runtime.GC()
	mem := readMemCounters()
	start := time.Now()
	stop := it.start()
	defer stop()
	if err := waitAll(handlers, syncTimeout); err != nil {
		return syncResult{}, err
	}
	if err := waitFor("HasSynced", it.hasSynced, syncTimeout); err != nil {
		return syncResult{}, err
	}
	elapsed := time.Since(start)
	alloc := mem.since()

	retained := liveHeap()
	if n := it.storeLen(); n != pods {
		return syncResult{}, fmt.Errorf("store holds %d pods, want %d", n, pods)
	}
	stop()
	if err := checkCounts(handlers, eventCounts{adds: pods}); err != nil {
		return syncResult{}, err
	}
	n := float64(pods)
	return syncResult{
		ms:             float64(elapsed.Microseconds()) / 1000,
		allocsPerPod:   float64(alloc.mallocs) / n,
		bytesPerPod:    float64(alloc.bytes) / n,
		retainedPerPod: (float64(retained) - float64(before)) / n,
	}, nil
}
