package informer

import (
	"context"
	"flag"
	"net/http"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/benchkit"
)

// BenchmarkCost measures Informer.Cost on 100,000 production-like pods
// (W6's fixture) decoded by the REST ListerWatcher, by default and with
// Deduplicate: the wall and process CPU time (the collector's included)
// and the allocations per cached object, and the time the store's read
// lock is held (lock: costLocked alone, uncontended).
func BenchmarkCost(b *testing.B) {
	n := costBenchPods
	for _, dedup := range []bool{false, true} {
		name := "default"
		if dedup {
			name = "Deduplicate"
		}
		b.Run(name, func(b *testing.B) {
			client := prodPodsClient(b, n, "application/vnd.kubernetes.protobuf", protobufPodPage)
			lw, err := NewRESTListerWatcher[*corev1.Pod](costConfig, RESTOptions{ContentType: ContentTypeProtobuf, HTTPClient: client})
			if err != nil {
				b.Fatal(err)
			}
			inf, err := NewInformer(lw, InformerOptions[*corev1.Pod]{DisableWatchList: true, Deduplicate: new(dedup)})
			if err != nil {
				b.Fatal(err)
			}
			// 100,000 pods take minutes to sync on a loaded machine.
			runUntilCleanup(b, inf)
			for start := time.Now(); !inf.HasSynced(); time.Sleep(10 * time.Millisecond) {
				if time.Since(start) > 10*time.Minute {
					b.Fatal("the informer did not sync in 10 minutes")
				}
			}
			// The served pages are garbage from here on.
			client.Transport = http.DefaultTransport
			runtime.GC()
			b.Run("report", func(b *testing.B) {
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				cpu0, err := benchkit.CPUTime()
				if err != nil {
					b.Fatal(err)
				}
				var report CostReport
				for b.Loop() {
					if report, err = inf.Cost(context.Background()); err != nil || report.Objects != n {
						b.Fatal(err, report.Objects)
					}
				}
				cpu1, err := benchkit.CPUTime()
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&ms1)
				objects := float64(b.N) * float64(n)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/objects, "ns/object")
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/objects, "cpu-ns/object")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/objects, "B/object")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/objects, "allocs/object")
				b.ReportMetric(float64(report.Bytes)/float64(n), "cached-B/object")
			})
			b.Run("lock", func(b *testing.B) {
				var held time.Duration
				for b.Loop() {
					start := time.Now()
					if l := inf.indexer.costLocked(); len(l.objects) != n {
						b.Fatal(len(l.objects))
					}
					held += time.Since(start)
				}
				b.ReportMetric(float64(held.Microseconds())/float64(b.N), "µs-held")
				b.ReportMetric(float64(held.Nanoseconds())/float64(b.N)/float64(n), "ns-held/object")
			})
		})
	}
}

// costBenchPods is BenchmarkCost's number of pods (-costpods).
var costBenchPods = 100_000

func init() { flag.IntVar(&costBenchPods, "costpods", costBenchPods, "BenchmarkCost's number of pods") }
