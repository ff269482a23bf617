package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/synctrial"
)

// E7's real-server rows (shared/benchmarks.md): the scale curve. At each
// size of cfg.e7Sizes, in increasing order, the server is seeded up to that
// many production-like pods, and client-go's informer, ours with default
// settings and ours with Deduplicate each sync them and then relist once
// (a "410 Gone" injected by the client's transport, so that the relist is
// the server's), each trial in a process of its own
// (internal/synctrial), cfg.runs times, interleaved. At the size
// e7CacheSize (if it is one of the sizes) controller-runtime's cache and
// crcache do the same with default settings. The ratios against N go to
// an SVG (cfg.e7SVG).

// e7CacheSize is the size at which the caches are compared.
const e7CacheSize = 50_000

// e7Writers is how many pods are created concurrently while seeding E7:
// more than E1's, as kube-apiserver, etcd (without fsync, see
// internal/cluster) and the client share two cores.
const e7Writers = 32

// e7Sides are the trials of each size, the first the baseline of the
// others' ratios.
var e7Sides = []synctrial.Spec{
	{Impl: synctrial.ImplClientGo},
	{Impl: synctrial.ImplOurs},
	{Impl: synctrial.ImplOurs, Deduplicate: true},
}

// e7CacheSides are the caches compared at e7CacheSize.
var e7CacheSides = []synctrial.Spec{
	{Impl: implControllerRuntime},
	{Impl: implCRCache},
}

// e7Point is the medians of one size's trials, by side.
type e7Point struct {
	pods    int
	results [][]synctrial.Result // by side, by run
}

// e7Output is what E7 prints: the rows of client-go against ours, of the
// caches, and of the memory limits, and the notes under them.
type e7Output struct {
	rows, cacheRows, limitRows []benchkit.Row
	notes                      []string
}

// runE7Mode runs E7 on c and prints its tables under info's header: the
// curve (client-go against ours), the caches at e7CacheSize, the memory
// limits if asked.
func runE7Mode(ctx context.Context, c *cluster.Cluster, cfg config, info benchkit.Run, kubeconfig string) error {
	out, err := runE7(ctx, c, cfg, kubeconfig)
	if err != nil {
		return fmt.Errorf("E7: %w", err)
	}
	info.Finish()
	info.Notes = append(info.Notes, out.notes...)
	info.Notes = append(info.Notes, fmt.Sprintf("E7: each figure is the median of %d runs per side, interleaved; each trial syncs in a process of its own and then relists once, made to by a 410 Gone its client's transport injects (the relist is served by kube-apiserver). Peak RSS is the process's VmHWM; peak heap is sampled every millisecond across at least one GC cycle.", cfg.runs))
	type tableRows struct {
		t    benchkit.Table
		rows []benchkit.Row
	}
	tables := slices.DeleteFunc([]tableRows{{e7Table(table), out.rows}, {e7Table(cacheTable), out.cacheRows}, {e7Table(table), out.limitRows}},
		func(tb tableRows) bool { return len(tb.rows) == 0 })
	for i, tb := range tables {
		if i > 0 && !cfg.json {
			fmt.Println()
		}
		write := tb.t.WriteMarkdown
		if cfg.json {
			write = tb.t.WriteJSONLines
		}
		// The notes are the run's, not a table's: they follow the last.
		tableInfo := info
		if i < len(tables)-1 {
			tableInfo.Notes = nil
		}
		if err := write(os.Stdout, tableInfo, tb.rows); err != nil {
			return err
		}
	}
	return nil
}

// runE7 seeds the server size by size and runs the trials of each (and at
// e7LimitPods, with e7Limit, the memory-limit bisection), and writes the
// chart.
func runE7(ctx context.Context, c *cluster.Cluster, cfg config, kubeconfig string) (out e7Output, err error) {
	sizes := slices.Clone(cfg.e7Sizes)
	slices.Sort(sizes)
	seeded := 0
	var points []e7Point
	for _, n := range sizes {
		note, err := e7Seed(ctx, c, cfg, seeded, n)
		if err != nil {
			return out, err
		}
		out.notes = append(out.notes, note...)
		seeded = n
		results, err := e7Runs(ctx, cfg, kubeconfig, n, e7Sides)
		if err != nil {
			return out, err
		}
		points = append(points, e7Point{pods: n, results: results})
		for i := 1; i < len(e7Sides); i++ {
			out.rows = append(out.rows, e7Rows("E7", e7CaseName(n, e7Sides[i]), n, results[0], results[i])...)
		}
		if n == e7CacheSize && cfg.crcache {
			caches, err := e7Runs(ctx, cfg, kubeconfig, n, e7CacheSides)
			if err != nil {
				return out, err
			}
			out.cacheRows = append(out.cacheRows, e7Rows("E7", fmt.Sprintf("%d pods, default settings", n), n, caches[0], caches[1])...)
		}
		if n == cfg.e7LimitPods && cfg.e7Limit {
			rows, notes, err := runE7Limit(ctx, cfg, kubeconfig, n, results)
			if err != nil {
				return out, err
			}
			out.limitRows, out.notes = append(out.limitRows, rows...), append(out.notes, notes...)
		}
	}
	if cfg.e7SVG != "" {
		if err := os.WriteFile(cfg.e7SVG, []byte(e7Chart(points).SVG()), 0o644); err != nil {
			return out, err
		}
	}
	return out, nil
}

// e7APISample is how many pods E7 writes through the API before writing
// the rest into etcd (-e7-seed etcd), to compare the two forms.
const e7APISample = 200

// e7Seed creates pods from to to, through the API or into etcd as
// cfg.e7SeedEtcd says, and returns the notes that say how, how fast, and
// (for etcd, the first time) how the pods written into etcd compare with
// those the API stores.
func e7Seed(ctx context.Context, c *cluster.Cluster, cfg config, from, to int) ([]string, error) {
	var notes []string
	if cfg.e7SeedEtcd && from == 0 {
		sample := min(e7APISample, to)
		if _, err := seedRange(ctx, c, 0, sample, e7Writers); err != nil {
			return nil, err
		}
		diff, apiBytes, etcdBytes, err := checkEtcdForm(ctx, c, sample)
		if err != nil {
			return nil, err
		}
		what := "no difference besides UIDs, times and the managed fields' sets, which the server computes"
		if diff != "" {
			what = "these differences:\n" + diff
			logf("E7: the pods written into etcd differ from those written through the API: %s", diff)
		}
		notes = append(notes, fmt.Sprintf("E7: the first %d pods were written through the API and compared with the same pods as written into etcd: %s; mean protobuf size %.0f B through the API, %.0f B into etcd.", sample, what, apiBytes, etcdBytes))
		from = sample
	}
	if from >= to {
		return notes, nil
	}
	start := time.Now()
	how := fmt.Sprintf("by %d concurrent writers through the API (3 writes each: create, scheduler's and kubelet's status updates)", e7Writers)
	var err error
	if cfg.e7SeedEtcd {
		how = fmt.Sprintf("straight into etcd (one put a pod, %d in flight)", etcdWriters)
		err = seedRangeEtcd(ctx, c, from, to)
	} else {
		_, err = seedRange(ctx, c, from, to, e7Writers)
	}
	if err != nil {
		return nil, fmt.Errorf("creating pods %d to %d: %w", from, to, err)
	}
	took := time.Since(start)
	// The generated pods and their encodings are garbage now: give their
	// memory back at once, not as the scavenger gets to it, for the trials
	// that follow (at 150,000 pods this process held 3.9 GB after the seed).
	debug.FreeOSMemory()
	logf("E7: created pods %d to %d in %s %s, %.0f pods/s", from, to, took.Round(time.Second), how, float64(to-from)/took.Seconds())
	return append(notes, fmt.Sprintf("E7: pods %d to %d created in %s %s, %.0f pods/s; etcd without fsync.", from, to, took.Round(time.Second), how, float64(to-from)/took.Seconds())), nil
}

// e7Table is t naming E7's definition as its workload.
func e7Table(t benchkit.Table) benchkit.Table {
	t.Workloads = `docs/scale.md, "How it is measured" (E7)`
	return t
}

// e7CaseName names the case of ours' side against client-go at n pods.
func e7CaseName(n int, ours synctrial.Spec) string {
	if ours.Deduplicate {
		return fmt.Sprintf("%d pods, ours with Deduplicate", n)
	}
	return fmt.Sprintf("%d pods, default settings", n)
}

// e7Runs runs each side's trial at n pods cfg.runs times, interleaved, and
// returns the results by side.
func e7Runs(ctx context.Context, cfg config, kubeconfig string, n int, sides []synctrial.Spec) ([][]synctrial.Result, error) {
	out := make([][]synctrial.Result, len(sides))
	for run := range cfg.runs {
		for i, side := range sides {
			spec := side
			spec.Kubeconfig, spec.Pods, spec.Relist, spec.Timeout = kubeconfig, n, synctrial.RelistInject, e7TrialTimeout(n)
			if cfg.profileDir != "" {
				spec.Profile = filepath.Join(cfg.profileDir, fmt.Sprintf("e7-%d-%s-run%d", n, e7SideName(side), run+1))
			}
			res, err := synctrial.RunChild(ctx, spec)
			if err != nil {
				return nil, fmt.Errorf("E7 at %d pods: %w", n, err)
			}
			logf("E7 %d pods, run %d, %s: %.2f CPU s, %.2f s wall, peak RSS %.0f MiB, peak heap %.0f MiB (%d GC), retained %.0f MiB; relist %.1f s, peak RSS %.0f MiB",
				n, run+1, e7SideName(side), res.CPUSeconds, res.WallSeconds, mib(res.PeakRSS), mib(res.PeakHeap), res.PeakGCCycles, mib(res.RetainedHeap),
				res.RelistWallSeconds, mib(res.RelistPeakRSS))
			out[i] = append(out[i], res)
		}
	}
	return out, nil
}

// e7TrialTimeout bounds the sync and the relist of a trial at n pods each:
// a trial that misses pods fails in minutes, not in synctrial's default 30
// (what one did to CI), while client-go's, 80 s at 50,000 on this machine
// (docs/scale.md), has 17.5 minutes at 150,000.
func e7TrialTimeout(n int) time.Duration {
	return 5*time.Minute + time.Duration(n)*5*time.Millisecond
}

// e7SideName names a side in logs and file names.
func e7SideName(s synctrial.Spec) string {
	if s.Deduplicate {
		return s.Impl + "-dedup"
	}
	return s.Impl
}

// e7Metrics are E7's figures, each with its row's label.
var e7Metrics = []struct {
	label string
	value func(r synctrial.Result, n int) float64
}{
	{"client CPU s until synced", func(r synctrial.Result, _ int) float64 { return r.CPUSeconds }},
	{"wall s until synced", func(r synctrial.Result, _ int) float64 { return r.WallSeconds }},
	{"peak RSS MiB until synced (VmHWM)", func(r synctrial.Result, _ int) float64 { return mib(r.PeakRSS) }},
	{"peak heap MiB until synced", func(r synctrial.Result, _ int) float64 { return mib(r.PeakHeap) }},
	{"retained heap B/pod", func(r synctrial.Result, n int) float64 {
		return (float64(r.RetainedHeap) - float64(r.BaselineHeap)) / float64(n)
	}},
	{"relist CPU s", func(r synctrial.Result, _ int) float64 { return r.RelistCPUSeconds }},
	{"relist peak RSS MiB", func(r synctrial.Result, _ int) float64 { return mib(r.RelistPeakRSS) }},
}

// e7Rows returns the rows of one comparison at n pods: medians of each
// side's runs and their ratio.
func e7Rows(workload, kase string, n int, theirs, ours []synctrial.Result) []benchkit.Row {
	var rows []benchkit.Row
	for _, m := range e7Metrics {
		f := func(r synctrial.Result) float64 { return m.value(r, n) }
		rows = append(rows, newRow(workload, kase, m.label, benchkit.MedianOf(theirs, f), benchkit.MedianOf(ours, f)))
	}
	return rows
}

// e7Chart draws client-go ÷ ours against N for the headline figures, for
// ours by default (solid) and with Deduplicate (dashed).
func e7Chart(points []e7Point) benchkit.LineChart {
	chart := benchkit.LineChart{
		Title:     "E7: client-go ÷ ours against the number of pods (real kube-apiserver)",
		XLabel:    "production-like pods (log scale)",
		YLabel:    "client-go ÷ ours",
		Reference: 1,
	}
	for side := 1; side < len(e7Sides); side++ {
		for _, m := range []int{0, 2, 3, 4} { // CPU, peak RSS, peak heap, retained
			name := strings.TrimSuffix(strings.TrimSuffix(e7Metrics[m].label, " (VmHWM)"), " until synced")
			s := benchkit.Series{Name: name, Dashed: e7Sides[side].Deduplicate}
			if s.Dashed {
				s.Name += ", Deduplicate"
			}
			for _, p := range points {
				f := func(r synctrial.Result) float64 { return e7Metrics[m].value(r, p.pods) }
				theirs, ours := benchkit.MedianOf(p.results[0], f), benchkit.MedianOf(p.results[side], f)
				if ours > 0 {
					s.Points = append(s.Points, benchkit.Point{X: float64(p.pods), Y: theirs / ours})
				}
			}
			chart.Series = append(chart.Series, s)
		}
	}
	return chart
}

// parseSizes parses a comma-separated list of pod counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(part, "_", "")))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q in %q", part, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// mib converts bytes to mebibytes.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }
