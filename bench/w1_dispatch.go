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
	// procs, if not 0, is the GOMAXPROCS both sides run with: a controller
	// whose container is limited to one CPU gets one P from the Go
	// runtime, and a design that wins by keeping two cores busy wins less.
	procs int
}

var dispatchCases = []dispatchCase{
	{name: "H=1", handlers: 1},
	{name: "H=8", handlers: 8},
	{name: "H=8, one sleeps 1 ms/event (the other 7)", handlers: 8, slowFirst: true},
	{name: "H=1, GOMAXPROCS=1", handlers: 1, procs: 1},
	{name: "H=8, GOMAXPROCS=1", handlers: 8, procs: 1},
}

// dispatchResult is the cost of one W1 run. It has no peak heap: no GC
// cycle completes in W1's window at full size (the heap holds the events
// already, so the collector's goal is far off), so the sampled heap only
// grows by the bytes allocated, which B/event shows.
type dispatchResult struct {
	nsPerEvent, allocsPerEvent, bytesPerEvent float64
	// cpuPerEvent is the process's CPU time (user and system, every
	// goroutine's and the collector's) per event, in ns: what a loaded
	// machine or a CPU limit charges, where wall time also counts the
	// time others held the CPU.
	cpuPerEvent float64
}

// runDispatch is W1: an informer with an empty list receives a pre-filled
// watch of Added, twice Modified and Deleted events for cfg.dispatchPods
// pods, and H handlers count them.
func runDispatch(cfg config) ([]benchkit.Row, error) {
	events := dispatchEvents(cfg.dispatchPods)
	want := eventCounts{adds: cfg.dispatchPods, updates: 2 * cfg.dispatchPods, deletes: cfg.dispatchPods}
	var rows []benchkit.Row
	for _, c := range dispatchCases {
		cg, our, err := compareDispatch(cfg, events, want, c)
		if err != nil {
			return nil, err
		}
		add := func(metric string, cgv, ourv float64) {
			rows = append(rows, newRow("W1", c.name, metric, cgv, ourv))
		}
		add("ns/event", cg.nsPerEvent, our.nsPerEvent)
		if !c.slowFirst {
			add("CPU ns/event (process)", cg.cpuPerEvent, our.cpuPerEvent)
			add("allocs/event", cg.allocsPerEvent, our.allocsPerEvent)
			add("B/event", cg.bytesPerEvent, our.bytesPerEvent)
		}
	}
	cg, our, err := compareCacheWrites(cfg, events)
	if err != nil {
		return nil, err
	}
	return append(rows,
		newRow("W1", "cache writes alone (no informer)", "ns/event", cg.nsPerEvent, our.nsPerEvent),
		newRow("W1", "cache writes alone (no informer)", "CPU ns/event (process)", cg.cpuPerEvent, our.cpuPerEvent)), nil
}

// compareDispatch runs case c on both implementations, alternately,
// cfg.count times each, and returns the medians.
func compareDispatch(cfg config, events []watch.Event, want eventCounts, c dispatchCase) (cg, our dispatchResult, err error) {
	if c.procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
	}
	var cgRuns, ourRuns []dispatchResult
	for range cfg.count {
		r, err := measureDispatch(newClientGoInformer, events, want, c)
		if err != nil {
			return cg, our, fmt.Errorf("%s: client-go: %w", c.name, err)
		}
		cgRuns = append(cgRuns, r)
		r, err = measureDispatch(newOurInformer, events, want, c)
		if err != nil {
			return cg, our, fmt.Errorf("%s: ours: %w", c.name, err)
		}
		ourRuns = append(ourRuns, r)
	}
	return medianDispatch(cgRuns), medianDispatch(ourRuns), nil
}

// compareCacheWrites times applying the W1 events straight to each
// implementation's indexer (with the namespace index): the share of W1 that
// no queue or dispatch design can avoid.
func compareCacheWrites(cfg config, events []watch.Event) (cg, our dispatchResult, err error) {
	pods, err := eventPods(events)
	if err != nil {
		return cg, our, err
	}
	timeWrites := func(update, remove func(*corev1.Pod) error) (dispatchResult, error) {
		runtime.GC()
		cpu, err := benchkit.CPUTime()
		if err != nil {
			return dispatchResult{}, err
		}
		start := time.Now()
		if err := applyWrites(events, pods, update, remove); err != nil {
			return dispatchResult{}, err
		}
		elapsed := time.Since(start)
		cpuEnd, err := benchkit.CPUTime()
		if err != nil {
			return dispatchResult{}, err
		}
		n := float64(len(events))
		return dispatchResult{nsPerEvent: float64(elapsed.Nanoseconds()) / n, cpuPerEvent: float64((cpuEnd - cpu).Nanoseconds()) / n}, nil
	}
	var cgRuns, ourRuns []dispatchResult
	for range cfg.count {
		cgStore := newClientGoIndexer(false)
		r, err := timeWrites(
			func(p *corev1.Pod) error { return cgStore.Update(p) },
			func(p *corev1.Pod) error { return cgStore.Delete(p) })
		if err != nil {
			return cg, our, fmt.Errorf("cache writes: client-go: %w", err)
		}
		cgRuns = append(cgRuns, r)
		ourStore := newOurIndexer(false)
		r, err = timeWrites(ourStore.Update, ourStore.Delete)
		if err != nil {
			return cg, our, fmt.Errorf("cache writes: ours: %w", err)
		}
		ourRuns = append(ourRuns, r)
	}
	return medianDispatch(cgRuns), medianDispatch(ourRuns), nil
}

// eventPods returns the objects of events, which must be pods.
func eventPods(events []watch.Event) ([]*corev1.Pod, error) {
	pods := make([]*corev1.Pod, len(events))
	for i, e := range events {
		pod, ok := e.Object.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("event %d holds a %T, want *v1.Pod", i, e.Object)
		}
		pods[i] = pod
	}
	return pods, nil
}

// applyWrites applies events to a store: remove for a Deleted event, update
// for the others, pods[i] being events[i]'s object. It is not inlined so
// that an instruction count can be limited to it (BenchmarkCacheWrites,
// docs/benchmarks.md: valgrind --toggle-collect).
//
//go:noinline
func applyWrites(events []watch.Event, pods []*corev1.Pod, update, remove func(*corev1.Pod) error) error {
	for i, e := range events {
		write := update
		if e.Type == watch.Deleted {
			write = remove
		}
		if err := write(pods[i]); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
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
	cpu, err := benchkit.CPUTime()
	if err != nil {
		return dispatchResult{}, err
	}
	start := time.Now()
	it.watches.release()
	waitErr := waitAll(handlers, dispatchTimeout)
	elapsed := time.Since(start)
	cpuEnd, cpuErr := benchkit.CPUTime()
	alloc := mem.since()
	if slow != nil {
		slow.Store(false) // let the slow handler's backlog drain quickly at shutdown
	}
	if waitErr != nil {
		return dispatchResult{}, waitErr
	}
	if cpuErr != nil {
		return dispatchResult{}, cpuErr
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
		cpuPerEvent:    float64((cpuEnd - cpu).Nanoseconds()) / n,
	}, nil
}

// medianDispatch returns the median of each W1 metric separately.
func medianDispatch(runs []dispatchResult) dispatchResult {
	return dispatchResult{
		nsPerEvent:     benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.nsPerEvent }),
		allocsPerEvent: benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.allocsPerEvent }),
		bytesPerEvent:  benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.bytesPerEvent }),
		cpuPerEvent:    benchkit.MedianOf(runs, func(r dispatchResult) float64 { return r.cpuPerEvent }),
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
