// Command bench runs, side by side in one process, controller-runtime's own
// cache and this module's drop-in cache on the workloads of issue 15: W7 of
// shared/benchmarks.md (a client.Reader over 100,000 pods: List by label
// over all namespaces and in one namespace, and Get, with deep copies and
// with UnsafeDisableDeepCopy) and a reconcile loop shaped like
// kubernetes-sigs/agent-sandbox#1099 (every reconcile lists its pods by a
// label; 10k to 80k pods). It prints one table of controller-runtime ÷
// ours ratios, headed by a legend and the run's commit, time, versions and
// load average.
//
//	go run ./bench                  # both workloads, full sizes, Markdown table
//	go run ./bench -json            # the same rows as JSON lines
//	go run ./bench -run W7          # pick workloads (W7, reconcile)
//	go run ./bench -quick           # small sizes, for CI
//
// Both caches are built by their public constructors (crcache.New and
// controller-runtime's cache.New) over one in-process stand-in for the API
// server, so each decodes and holds its own copy of the pods. Every figure
// is measured in rounds that alternate which cache goes first.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer/crcache"
	"github.com/kubetyped/informer/internal/benchkit"
)

// config holds the sizes and repetition counts of one run.
type config struct {
	// rounds is how many times each figure is measured on each cache;
	// medians are reported.
	rounds int
	// w7Pods is the number of pods W7 caches.
	w7Pods int
	// opTime is how long one measured batch of a W7 read lasts.
	opTime time.Duration
	// reconcilePods are the cluster sizes of the reconcile loop.
	reconcilePods []int
	// reconciles is the number of reconciles per round and cache.
	reconciles int
}

var (
	fullConfig  = config{rounds: 5, w7Pods: 100_000, opTime: time.Second, reconcilePods: []int{10_000, 20_000, 40_000, 80_000}, reconciles: 200}
	quickConfig = config{rounds: 1, w7Pods: 2_000, opTime: 10 * time.Millisecond, reconcilePods: []int{1_000, 2_000}, reconciles: 40}
)

// workload is one entry of the benchmark menu.
type workload struct {
	id  string
	run func(cfg config) ([]benchkit.Row, error)
}

// workloads lists every workload in the order the table shows them.
var workloads = []workload{
	{id: "W7", run: runW7},
	{id: "reconcile", run: runReconcileLoop},
}

func main() { os.Exit(benchMain()) }

// benchMain parses the flags, runs the benchmark and returns the exit code:
// 0, 1 when a workload fails (wrong result counts, a cache that does not
// sync), or 2 for bad flags.
func benchMain() int {
	jsonOut := flag.Bool("json", false, "print JSON lines instead of a Markdown table")
	runList := flag.String("run", "", "comma-separated workloads to run: W7, reconcile (default: both)")
	quick := flag.Bool("quick", false, "small sizes and one round: a smoke run that still checks every result")
	rounds := flag.Int("rounds", 0, "rounds per figure; medians are reported (default 5, or 1 with -quick)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()

	cfg := fullConfig
	if *quick {
		cfg = quickConfig
	}
	if *rounds > 0 {
		cfg.rounds = *rounds
	}
	var selected []workload
	for _, id := range strings.Split(*runList, ",") {
		id = strings.TrimSpace(id)
		i := slices.IndexFunc(workloads, func(w workload) bool { return strings.EqualFold(w.id, id) })
		switch {
		case id == "" && *runList == "":
			selected = workloads
		case i < 0:
			fmt.Fprintf(os.Stderr, "bench: unknown workload %q (known: W7, reconcile)\n", id)
			return 2
		default:
			selected = append(selected, workloads[i])
		}
	}
	if *cpuProfile != "" {
		stop, err := benchkit.StartCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
		}()
	}
	info := benchkit.StartRun("sigs.k8s.io/controller-runtime", "k8s.io/client-go")
	if *quick {
		info.Smoke = benchkit.QuickNote
	}
	fmt.Fprintf(os.Stderr, "bench: %s, %d rounds per figure, load average %s\n", info.Go, cfg.rounds, info.LoadStart)
	var rows []benchkit.Row
	for _, w := range selected {
		start := time.Now()
		r, err := w.run(cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: FAILED: %s: %v\n", w.id, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "bench: %s took %v; load average %s\n", w.id, time.Since(start).Round(time.Second), benchkit.LoadAverage())
		rows = append(rows, r...)
	}
	info.Finish()
	write := table.WriteMarkdown
	if *jsonOut {
		write = table.WriteJSONLines
	}
	if err := write(os.Stdout, info, rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// caches are controller-runtime's cache and ours over one podServer,
// started and synced for pods.
type caches struct {
	theirs, ours cache.Cache
	stop         func()
}

// startCaches builds both caches over server, starts them, and reads pods
// once through each, so that both pod informers exist and have synced.
func startCaches(server *podServer) (*caches, error) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	opts := cache.Options{HTTPClient: &http.Client{Transport: server}, Mapper: mapper, Scheme: scheme.Scheme}
	config := &rest.Config{Host: "http://apiserver.invalid"}
	theirs, err := cache.New(config, opts)
	if err != nil {
		return nil, fmt.Errorf("controller-runtime's cache: %w", err)
	}
	ours, err := crcache.New(config, opts)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for _, c := range []cache.Cache{theirs, ours} {
		go func() { done <- c.Start(ctx) }()
	}
	c := &caches{theirs: theirs, ours: ours, stop: func() {
		cancel()
		<-done
		<-done
	}}
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Minute)
	defer syncCancel()
	for name, cc := range map[string]cache.Cache{"controller-runtime": theirs, "crcache": ours} {
		if !cc.WaitForCacheSync(syncCtx) {
			c.stop()
			return nil, fmt.Errorf("%s: not started", name)
		}
		if err := cc.List(syncCtx, &corev1.PodList{}, client.Limit(1)); err != nil {
			c.stop()
			return nil, fmt.Errorf("%s: first list: %w", name, err)
		}
	}
	runtime.GC()
	return c, nil
}

// opStats is the cost of one call of a measured operation: wall time, the
// CPU time of the whole process (the garbage collector's included),
// allocations and bytes allocated. On a shared machine, wall time also counts waiting for a
// core; CPU time does not.
type opStats struct {
	nsPerOp, cpuNsPerOp, allocsPerOp, bytesPerOp float64
}

// measureOp calls op in batches, doubling or more, until one lasts at
// least target/10, then collects the garbage and measures one batch sized
// to last about target. The collection keeps the measured batch from paying
// for a collection cycle started by an earlier batch or by the other side
// (on W7's heap, such a cycle makes the same copy several times slower,
// and with three sides in rotation some follow controller-runtime's
// allocations more often than others); bytesPerOp shows what each side
// leaves to the collector instead.
func measureOp(op func() error, target time.Duration) (opStats, error) {
	n := 1
	for {
		start := time.Now()
		for range n {
			if err := op(); err != nil {
				return opStats{}, err
			}
		}
		elapsed := time.Since(start)
		if elapsed >= target/10 || n >= 1<<30 {
			n = max(1, int(float64(n)*float64(target)/float64(max(elapsed, time.Microsecond))))
			break
		}
		n = min(max(int(float64(n)*1.2*float64(target/10)/float64(max(elapsed, time.Microsecond))), 2*n), 100*n)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuStart, err := benchkit.CPUTime()
	if err != nil {
		return opStats{}, err
	}
	start := time.Now()
	for range n {
		if err := op(); err != nil {
			return opStats{}, err
		}
	}
	elapsed := time.Since(start)
	cpuEnd, err := benchkit.CPUTime()
	if err != nil {
		return opStats{}, err
	}
	runtime.ReadMemStats(&after)
	return opStats{
		nsPerOp:     float64(elapsed.Nanoseconds()) / float64(n),
		cpuNsPerOp:  float64((cpuEnd - cpuStart).Nanoseconds()) / float64(n),
		allocsPerOp: float64(after.Mallocs-before.Mallocs) / float64(n),
		bytesPerOp:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}, nil
}

// newRow summarizes the rounds of one measurement: the median of each
// side and, as the row's ratio, the median of the rounds' ratios
// (controller-runtime ÷ ours, each of one round), so every row has one. A
// round's ratio is 1 where both sides measured 0, infinite where only ours
// did.
func newRow(workload, kase, metric string, theirs, ours []float64) benchkit.Row {
	ratios := make([]float64, len(theirs))
	for i := range theirs {
		ratios[i] = theirs[i] / ours[i]
		if ours[i] == 0 && theirs[i] == 0 {
			ratios[i] = 1
		}
	}
	ratio := benchkit.Median(ratios)
	return benchkit.Row{Workload: workload, Case: kase, Metric: metric, Theirs: benchkit.Median(theirs), Ours: benchkit.Median(ours), Ratio: &ratio}
}

// table is this harness's layout of the output contract: controller-runtime
// in the place of client-go (JSON key "controllerruntime"), durations with
// their unit, and a ratio on every row (newRow gives each one).
var table = benchkit.Table{
	Theirs:    "controller-runtime",
	TheirsKey: "controllerruntime",
	Ours:      "crcache",
	Workloads: `docs/benchmarks.md, "The workloads" (W7, reconcile)`,
	Value:     formatValue,
	Ratio: func(r benchkit.Row) string {
		if r.Ratio == nil {
			return "–"
		}
		return formatRatio(*r.Ratio) + "×"
	},
}

// formatValue prints a count (allocs/op, B/op) as an integer and a
// duration in nanoseconds (every other metric) in a unit that suits its
// magnitude.
func formatValue(metric string, v float64) string {
	switch {
	case metric == "allocs/op":
		return fmt.Sprintf("%.0f", v)
	case metric == "B/op":
		return fmt.Sprintf("%.0f", v)
	case v >= 1e9:
		return fmt.Sprintf("%.2f s", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f µs", v/1e3)
	default:
		return fmt.Sprintf("%.0f ns", v)
	}
}

// formatRatio prints a ratio with one decimal below 10, none from 10 up.
func formatRatio(r float64) string {
	switch {
	case math.IsInf(r, 0) || math.IsNaN(r):
		return fmt.Sprint(r)
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.1f", r)
	}
}
