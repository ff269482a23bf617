package crcache

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The side-by-side comparisons with controller-runtime's own cache. They
// are tests that skip unless asked for, since they hold 100,000 pods and
// run for minutes:
//
//	go test -run TestW7 -w7 .               # W7 of ../../shared/benchmarks.md
//	go test -run TestReconcileLoop -reconcile -timeout 30m .
//
// Both caches run in one process on one fakeCluster (the same objects,
// served through client-go ListerWatchers), and every measurement
// alternates between them (controller-runtime, ours, ours,
// controller-runtime, ...); the tables give medians over the rounds and the median of the
// rounds' ratios controller-runtime ÷ ours.
var (
	w7        = flag.Bool("w7", false, "run W7 (100,000 pods) and print its table")
	reconcile = flag.Bool("reconcile", false, "run the reconcile-loop benchmark (10k to 80k pods) and print its table")
	rounds    = flag.Int("rounds", 5, "alternating rounds per W7 case")
)

// row is one line of a comparison table: the medians of the rounds and the
// median of the rounds' ratios (controller-runtime ÷ ours, each measured in
// the same round).
type row struct {
	workload, name, metric string
	theirs, ours, ratio    float64
}

// newRow summarizes the rounds of one measurement.
func newRow(workload, name, metric string, theirs, ours []float64) row {
	ratios := make([]float64, len(theirs))
	for i := range theirs {
		ratios[i] = theirs[i] / ours[i]
	}
	return row{workload, name, metric, median(theirs), median(ours), median(ratios)}
}

func printTable(rows []row) {
	fmt.Println("| workload | case | metric | controller-runtime | crcache | ratio |")
	fmt.Println("|---|---|---|---:|---:|---:|")
	for _, r := range rows {
		ratio := fmt.Sprintf("%.1f×", r.ratio)
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.workload, r.name, r.metric, format(r.metric, r.theirs), format(r.metric, r.ours), ratio)
	}
}

// format prints a duration in nanoseconds with its unit, anything else as
// a number.
func format(metric string, v float64) string {
	switch {
	case metric == "allocs/op":
		return fmt.Sprintf("%.0f", v)
	case v >= 1e6:
		return fmt.Sprintf("%.2f ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f µs", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestW7 is W7: a client.Reader over 100,000 pods answering List by label
// over all namespaces (1,000 hits) and in one namespace (100 hits), and
// Get, with controller-runtime's default deep copy and with
// UnsafeDisableDeepCopy.
func TestW7(t *testing.T) {
	if !*w7 {
		t.Skip("run with -w7")
	}
	const n = 100_000
	cluster := newFakeCluster()
	pods := make([]client.Object, n)
	for i := range n {
		pods[i] = benchPod(i, 1000)
	}
	cluster.CreateAll(pods...)
	pods = nil
	theirs := newControllerRuntimeCache(t, cluster, testOptions(t))
	ours := newTestCache(t, cluster, testOptions(t))

	type readCase struct {
		name string
		hits int
		read func(c cache.Cache, deepCopyOff bool) (int, error)
	}
	ctx := context.Background()
	list := func(opts ...client.ListOption) func(c cache.Cache, off bool) (int, error) {
		return func(c cache.Cache, off bool) (int, error) {
			var l corev1.PodList
			o := opts
			if off {
				o = append(slices.Clone(opts), client.UnsafeDisableDeepCopy)
			}
			err := c.List(ctx, &l, o...)
			return len(l.Items), err
		}
	}
	cases := []readCase{
		{"List app=app-7, all namespaces", 1000, list(client.MatchingLabels{"app": "app-7"})},
		{"List app=app-7, namespace ns-7", 100, list(client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"})},
		{"Get ns-7/pod-7007", 1, func(c cache.Cache, off bool) (int, error) {
			var p corev1.Pod
			var opts []client.GetOption
			if off {
				opts = append(opts, client.UnsafeDisableDeepCopy)
			}
			return 1, c.Get(ctx, client.ObjectKey{Namespace: "ns-7", Name: "pod-7007"}, &p, opts...)
		}},
	}
	var rows []row
	for _, off := range []bool{false, true} {
		copyNote := "deep copy"
		if off {
			copyNote = "UnsafeDisableDeepCopy"
		}
		for _, rc := range cases {
			for _, c := range []cache.Cache{theirs, ours} {
				if got, err := rc.read(c, off); err != nil || got != rc.hits {
					t.Fatalf("%s: %d hits, %v; want %d", rc.name, got, err, rc.hits)
				}
			}
			var ns, allocs [2][]float64
			for round := range *rounds {
				// Which cache goes first alternates too, so that neither
				// inherits the other's garbage-collector debt every round.
				for k := range 2 {
					i := (k + round) % 2
					c := []cache.Cache{theirs, ours}[i]
					res := testing.Benchmark(func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							if _, err := rc.read(c, off); err != nil {
								b.Fatal(err)
							}
						}
					})
					ns[i] = append(ns[i], float64(res.NsPerOp()))
					allocs[i] = append(allocs[i], float64(res.AllocsPerOp()))
				}
			}
			name := rc.name + ", " + copyNote
			rows = append(rows,
				newRow("W7", name, "ns/op", ns[0], ns[1]),
				newRow("W7", name, "allocs/op", allocs[0], allocs[1]))
			fmt.Fprintf(os.Stderr, "%s: controller-runtime %v, ours %v ns/op\n", name, ns[0], ns[1])
		}
	}
	printTable(rows)
}

// TestReconcileLoop is shaped like the controller of
// kubernetes-sigs/agent-sandbox#1099: every pod of one namespace carries a
// label naming its sandbox, and each reconcile lists the pods of its
// sandbox by that label (one hit, deep-copied), with several workers
// reconciling concurrently. It reports the reconcile p50 and p99 at 10k,
// 20k, 40k and 80k pods.
func TestReconcileLoop(t *testing.T) {
	if !*reconcile {
		t.Skip("run with -reconcile")
	}
	const (
		workers    = 8
		reconciles = 200 // per round and cache
		sandboxKey = "agents.x-k8s.io/sandbox-name-hash"
	)
	var rows []row
	for _, n := range []int{10_000, 20_000, 40_000, 80_000} {
		cluster := newFakeCluster()
		pods := make([]client.Object, n)
		for i := range n {
			p := benchPod(i, 1)
			p.Namespace = "sandboxes"
			p.Labels[sandboxKey] = fmt.Sprintf("%08x", i)
			pods[i] = p
		}
		cluster.CreateAll(pods...)
		pods = nil
		ctx, cancel := context.WithCancel(context.Background())
		theirs := newControllerRuntimeCache(t, cluster, testOptions(t))
		ours := newTestCache(t, cluster, testOptions(t))
		reconcileOne := func(c cache.Cache, i int) error {
			var l corev1.PodList
			err := c.List(ctx, &l, client.InNamespace("sandboxes"), client.MatchingLabels{sandboxKey: fmt.Sprintf("%08x", i)})
			if err == nil && len(l.Items) != 1 {
				err = fmt.Errorf("sandbox %d: %d pods", i, len(l.Items))
			}
			return err
		}
		var p50, p99 [2][]float64
		for range 3 {
			for ci, c := range []cache.Cache{theirs, ours} {
				lat := make([]time.Duration, reconciles)
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := range workers {
					wg.Go(func() {
						for k := w; k < reconciles; k += workers {
							start := time.Now()
							if err := reconcileOne(c, (k*7919)%n); err != nil {
								errs <- err
								return
							}
							lat[k] = time.Since(start)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				slices.Sort(lat)
				p50[ci] = append(p50[ci], float64(lat[len(lat)/2]))
				p99[ci] = append(p99[ci], float64(lat[len(lat)*99/100]))
			}
		}
		name := fmt.Sprintf("%dk pods, %d workers", n/1000, workers)
		rows = append(rows,
			newRow("reconcile", name, "p50", p50[0], p50[1]),
			newRow("reconcile", name, "p99", p99[0], p99[1]))
		fmt.Fprintf(os.Stderr, "%s: p50 controller-runtime %v, ours %v\n", name, p50[0], p50[1])
		cancel()
	}
	printTable(rows)
}

// BenchmarkW7 runs W7's reads as Go benchmarks, for profiling:
//
//	go test -run '^$' -bench 'W7/ours/list-all-deep' -cpuprofile cpu.out .
func BenchmarkW7(b *testing.B) {
	const n = 100_000
	cluster := newFakeCluster()
	pods := make([]client.Object, n)
	for i := range n {
		pods[i] = benchPod(i, 1000)
	}
	cluster.CreateAll(pods...)
	caches := map[string]cache.Cache{
		"controller-runtime": newControllerRuntimeCache(b, cluster, testOptions(b)),
		"ours":               newTestCache(b, cluster, testOptions(b)),
	}
	ctx := context.Background()
	for _, c := range caches { // create and sync the informers
		if err := c.List(ctx, &corev1.PodList{}, client.Limit(1)); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"controller-runtime", "ours"} {
		c := caches[name]
		for _, off := range []bool{false, true} {
			suffix := "deep"
			var lo []client.ListOption
			var gopts []client.GetOption
			if off {
				suffix = "unsafe"
				lo = append(lo, client.UnsafeDisableDeepCopy)
				gopts = append(gopts, client.UnsafeDisableDeepCopy)
			}
			b.Run(name+"/list-all-"+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var l corev1.PodList
					if err := c.List(ctx, &l, append(lo, client.MatchingLabels{"app": "app-7"})...); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/list-ns-"+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var l corev1.PodList
					if err := c.List(ctx, &l, append(lo, client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"})...); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/get-"+suffix, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var p corev1.Pod
					if err := c.Get(ctx, client.ObjectKey{Namespace: "ns-7", Name: "pod-7007"}, &p, gopts...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
