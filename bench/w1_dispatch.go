package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/internal/benchkit"
)

// dispatchTimeout bounds one W1 run: a pipeline that loses or stalls events
// fails the benchmark instead of hanging it.
const dispatchTimeout = 15 * time.Minute

// dispatchCase is one W1 configuration.
type dispatchCase struct {
	name     string
	handlers int
	// slowFirst makes the first handler sleep 1 ms per event; the figures
	// then describe the other handlers only.
	slowFirst bool
}

var dispatchCases = []dispatchCase{
	{"H=1", 1, false},
	{"H=8", 8, false},
	{"H=8, one sleeps 1 ms/event (the other 7)", 8, true},
}

// dispatchResult is the cost of one W1 run. It has no peak heap: no GC
// cycle completes in W1's window at full size (the heap holds the events
// already, so the collector's goal is far off), so the sampled heap only
// grows by the bytes allocated, which B/event shows.
type dispatchResult struct {
	nsPerEvent, allocsPerEvent, bytesPerEvent float64
}

// runDispatch is W1: an informer with an empty list receives a pre-filled
// watch of Added, twice Modified and Deleted events for cfg.dispatchPods
// pods, and H handlers count them.
func runDispatch(cfg config) ([]benchkit.Row, error) {
	events := dispatchEvents(cfg.dispatchPods)
	want := eventCounts{adds: cfg.dispatchPods, updates: 2 * cfg.dispatchPods, deletes: cfg.dispatchPods}
	var rows []benchkit.Row
	for _, c := range dispatchCases {
		var cgRuns, ourRuns []dispatchResult
		for range cfg.count {
			r, err := measureDispatch(newClientGoInformer, events, want, c)
			if err != nil {
				return nil, fmt.Errorf("%s: client-go: %w", c.name, err)
			}
			cgRuns = append(cgRuns, r)
			r, err = measureDispatch(newOurInformer, events, want, c)
			if err != nil {
				return nil, fmt.Errorf("%s: ours: %w", c.name, err)
			}
			ourRuns = append(ourRuns, r)
		}
		cg, our := medianDispatch(cgRuns), medianDispatch(ourRuns)
		add := func(metric string, cgv, ourv float64) {
			rows = append(rows, newRow("W1", c.name, metric, cgv, ourv))
		}
		add("ns/event", cg.nsPerEvent, our.nsPerEvent)
		if !c.slowFirst {
			add("allocs/event", cg.allocsPerEvent, our.allocsPerEvent)
			add("B/event", cg.bytesPerEvent, our.bytesPerEvent)
		}
	}
	cg, our, err := compareCacheWrites(cfg, events)
	if err != nil {
		return nil, err
	}
	return append(rows, newRow("W1", "cache writes alone (no informer)", "ns/event", cg, our)), nil
}

// compareCacheWrites times applying the W1 events straight to each
// implementation's indexer (with the namespace index): the share of W1 that
// no queue or dispatch design can avoid.
func compareCacheWrites(cfg config, events []watch.Event) (cg, our float64, err error) {
	pods := make([]*corev1.Pod, len(events))
	for i, e := range events {
		pod, ok := e.Object.(*corev1.Pod)
		if !ok {
			return 0, 0, fmt.Errorf("event %d holds a %T, want *v1.Pod", i, e.Object)
		}
		pods[i] = pod
	}
	timeWrites := func(update, remove func(*corev1.Pod) error) (float64, error) {
		runtime.GC()
		start := time.Now()
		for i, e := range events {
			write := update
			if e.Type == watch.Deleted {
				write = remove
			}
			if err := write(pods[i]); err != nil {
				return 0, fmt.Errorf("event %d: %w", i, err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(len(events)), nil
	}
	var cgRuns, ourRuns []float64
	for range cfg.count {
		cgStore := newClientGoIndexer(false)
		ns, err := timeWrites(
			func(p *corev1.Pod) error { return cgStore.Update(p) },
			func(p *corev1.Pod) error { return cgStore.Delete(p) })
		if err != nil {
			return 0, 0, fmt.Errorf("cache writes: client-go: %w", err)
		}
		cgRuns = append(cgRuns, ns)
		ourStore := newOurIndexer(false)
		ns, err = timeWrites(ourStore.Update, ourStore.Delete)
		if err != nil {
			return 0, 0, fmt.Errorf("cache writes: ours: %w", err)
		}
		ourRuns = append(ourRuns, ns)
	}
	return benchkit.Median(cgRuns), benchkit.Median(ourRuns), nil
}

// dispatchEvents returns the W1 watch: n Added pods, then each pod Modified
// (a shallow copy with a new resource version), then each Modified again,
// then each Deleted (its last state).
func dispatchEvents(n int) []watch.Event {
	events := make([]watch.Event, 0, 4*n)
	rv := 1
	nextRV := func() string { rv++; return strconv.Itoa(rv) }
	last := make([]*corev1.Pod, n)
	for i := range n {
		pod := newPod(i)
		pod.ResourceVersion = nextRV()
		last[i] = pod
		events = append(events, watch.Event{Type: watch.Added, Object: pod})
	}
	for range 2 {
		for i := range n {
			modified := *last[i]
			modified.ResourceVersion = nextRV()
			last[i] = &modified
			events = append(events, watch.Event{Type: watch.Modified, Object: &modified})
		}
	}
	for i := range n {
		events = append(events, watch.Event{Type: watch.Deleted, Object: last[i]})
	}
	return events
}

// measureDispatch runs one W1 case on one implementation: it starts the
// informer, waits until it has synced its empty list and is waiting in
// Watch, then releases the watch and times until every handler has counted
// every event.
func measureDispatch(newInformer newInformerFunc, events []watch.Event, want eventCounts, c dispatchCase) (dispatchResult, error) {
	var slow *atomic.Bool
	if c.slowFirst {
		slow = new(atomic.Bool)
		slow.Store(true)
	}
	handlers := newCountingHandlers(c.handlers, want.total(), slow)
	it, err := newInformer(0, "1", events, handlers)
	if err != nil {
		return dispatchResult{}, err
	}
	stop := it.start()
	defer stop()
	ready := func() bool { return isClosed(it.watches.started) && it.hasSynced() }
	if err := waitFor("the informer to sync and watch", ready, time.Minute); err != nil {
		return dispatchResult{}, err
	}

	runtime.GC()
	mem := readMemCounters()
	start := time.Now()
	it.watches.release()
	waitErr := waitAll(handlers, dispatchTimeout)
	elapsed := time.Since(start)
	alloc := mem.since()
	if slow != nil {
		slow.Store(false) // let the slow handler's backlog drain quickly at shutdown
	}
	if waitErr != nil {
		return dispatchResult{}, waitErr
	}
	storeLen := it.storeLen()
	stop()
	if err := checkCounts(handlers, want); err != nil {
		return dispatchResult{}, err
	}
	if storeLen != 0 {
		return dispatchResult{}, fmt.Errorf("store holds %d pods after every pod was deleted", storeLen)
	}
	n := float64(want.total())
	return dispatchResult{
		nsPerEvent:     float64(elapsed.Nanoseconds()) / n,
		allocsPerEvent: float64(alloc.mallocs) / n,
		bytesPerEvent:  float64(alloc.bytes) / n,
	}, nil
}

// medianDispatch returns the median of each W1 metric separately.
func medianDispatch(runs []dispatchResult) dispatchResult {
	return dispatchResult{
		nsPerEvent:     benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.nsPerEvent }),
		allocsPerEvent: benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.allocsPerEvent }),
		bytesPerEvent:  benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.bytesPerEvent }),
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
