package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/benchkit"
)

// BenchmarkCacheWrites is W1's "cache writes alone" row as a benchmark:
// each iteration applies the W1 events of 10,000 pods (each added,
// modified twice and deleted) to a fresh indexer with the namespace index,
// on one goroutine. It reports wall and process CPU time per event. Run it
// under callgrind with --toggle-collect='*applyWrites*' to count the write
// path's instructions alone (docs/benchmarks.md).
func BenchmarkCacheWrites(b *testing.B) {
	events := dispatchEvents(10_000)
	pods, err := eventPods(events)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, newStore func() (update, remove func(*corev1.Pod) error)) {
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			update, remove := newStore()
			start, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := applyWrites(events, pods, update, remove); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			end, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			cpu += end - start
			b.StartTimer()
		}
		n := float64(b.N * len(events))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "CPU-ns/event")
	}
	b.Run("client-go", func(b *testing.B) {
		run(b, func() (update, remove func(*corev1.Pod) error) {
			store := newClientGoIndexer(false)
			return func(p *corev1.Pod) error { return store.Update(p) }, func(p *corev1.Pod) error { return store.Delete(p) }
		})
	})
	b.Run("ours", func(b *testing.B) {
		run(b, func() (update, remove func(*corev1.Pod) error) {
			store := newOurIndexer(false)
			return store.Update, store.Delete
		})
	})
}
