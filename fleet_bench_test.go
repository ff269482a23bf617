package informer

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkFleetAddRemoveClusters adds 100 clusters of 10 pods each to a
// running fleet, waits for them to sync, removes them, and does so 10
// times per iteration; it reports the heap after a GC at the end against
// at the start (heap-growth-%) and the goroutines left (goroutines-left),
// which a fleet that releases what a removed cluster held keeps at 0.
func BenchmarkFleetAddRemoveClusters(b *testing.B) {
	pods := make([]*corev1.Pod, 10)
	for i := range pods {
		pods[i] = NewPod("ns", fmt.Sprintf("p%d", i), "1")
	}
	heapAfterGC := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // the intern table's weak entries go at the GC after the objects'
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	f, err := NewFleet(FleetOptions[*corev1.Pod]{})
	plMust(b, err)
	_, err = f.AddEventHandler(FleetEventHandlerFuncs[*corev1.Pod]{})
	plMust(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	round := func() {
		for k := range 100 {
			plMust(b, f.AddClusterListerWatcher(fmt.Sprintf("c%d", k), fakeCluster("1", pods...)))
		}
		for !f.HasSynced() {
			runtime.Gosched()
		}
		for k := range 100 {
			plMust(b, f.RemoveCluster(fmt.Sprintf("c%d", k)))
		}
		for {
			f.mu.Lock()
			leaving := len(f.leaving)
			f.mu.Unlock()
			if leaving == 0 {
				return
			}
			runtime.Gosched()
		}
	}
	round() // warm up: the first round allocates what later rounds reuse
	startHeap, startGoroutines := heapAfterGC(), runtime.NumGoroutine()
	b.ResetTimer()
	for range b.N {
		for range 10 {
			round()
		}
	}
	b.StopTimer()
	endHeap := heapAfterGC()
	b.ReportMetric(100*(float64(endHeap)-float64(startHeap))/float64(startHeap), "heap-growth-%")
	b.ReportMetric(float64(runtime.NumGoroutine()-startGoroutines), "goroutines-left")
}
