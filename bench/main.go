// Command bench runs the workloads of shared/benchmarks.md (W1–W5 and churn, and W6, W8, W8u and W1save on request) on
// client-go's informer machinery and on this module's, side by side in one
// process, and prints one table of client-go ÷ ours ratios, headed by a
// legend and the run's commit, time, versions and load average.
//
//	go run ./bench                 # full sizes, Markdown table
//	go run ./bench -json           # the same rows as JSON lines
//	go run ./bench -run W1,W3      # pick workloads (W6, W8, W8u and W1save run only when named)
//	go run ./bench -run churn      # what Job-like churn leaves on the heap (bench/churn.go)
//	go run ./bench -run E6         # the fleet: 100 clusters × 1,000 pods side by side, the edge fleet (bench/e6.go)
//	go run ./bench -run E6 -e6large  # ours alone at 1,000 × 1,000 pods and its warm restart
//	go run ./bench -quick          # small sizes, for CI
//	go run ./bench -svg docs/benchmarks.svg
//	go run ./bench -run W6 -retainedsvg docs/retained.svg
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/fleettrial"
	"github.com/kubetyped/informer/internal/replayserver"
	"github.com/kubetyped/informer/internal/synctrial"
)

// config holds the sizes and repetition counts of one run.
type config struct {
	// count is how many times each figure is measured; medians are reported.
	count int
	// storePods is the number of pods in the W2 list and the W3–W5 stores.
	storePods int
	// dispatchPods is the number of pods W1 adds, modifies twice and deletes.
	dispatchPods int
	// opTime is how long one measured batch of a W3–W5 operation lasts.
	opTime time.Duration
	// prodPods is the number of production-like pods W6 caches.
	prodPods int
	// churnCycles is the number of pods the churn workload creates,
	// updates and deletes.
	churnCycles int
	// w8Objects is the number of custom resources W8 decodes.
	w8Objects int
	// e7 is E7's configuration (e7.go).
	e7 e7Config
	// e6 is E6's configuration (e6.go).
	e6 e6Config
}

var (
	fullConfig = config{count: 3, storePods: 100_000, dispatchPods: 50_000, opTime: 300 * time.Millisecond, prodPods: 100_000, churnCycles: 200_000, w8Objects: 50_000,
		e7: e7Config{pods: 1_000_000, box: 10 << 30},
		e6: e6Config{clusters: 100, pods: 1000, edgeClusters: 1000, edgePods: []int{0, 20}, largeClusters: 1000, largePods: 1000}}
	quickConfig = config{count: 1, storePods: 10_000, dispatchPods: 2_000, opTime: 5 * time.Millisecond, prodPods: 2_000, churnCycles: 20_000, w8Objects: 2_000,
		e7: e7Config{pods: 5_000, clientGoPods: 5_000, box: 10 << 30},
		e6: e6Config{clusters: 4, pods: 200, edgeClusters: 20, edgePods: []int{0, 20}, largeClusters: 20, largePods: 200, restartClusters: 4, restartP: 200}}
)

// workload is one entry of the benchmark menu.
type workload struct {
	id  string
	run func(cfg config) ([]benchkit.Row, error)
	// onRequest leaves the workload out of the default run: W6 caches
	// 100,000 production-like pods on each side (about 4 minutes of CPU and
	// 7 GB of memory), so it runs only when -run names it.
	onRequest bool
}

// workloads lists every workload in the order the table shows them.
var workloads = []workload{
	{id: "W1", run: runDispatch},
	{id: "W2", run: runInitialSync},
	{id: "W3", run: runList},
	{id: "W4", run: runIndex},
	{id: "W5", run: runGet},
	{id: "churn", run: runChurn},
	{id: "W6", run: runMemory, onRequest: true},
	// W8 decodes 50,000 custom resources of about 11 KB on each side, three
	// times (several minutes): only when -run names it.
	{id: "W8", run: runCustomResources, onRequest: true},
	{id: "W8u", run: runW8Unstructured, onRequest: true},
	// W1save writes snapshots of 100,000 pods back to back (a few hundred
	// MB each, synced to disk): only when -run names it.
	{id: "W1save", run: runDispatchWhileSaving, onRequest: true},
	// E7 syncs a million pods from a replay server (minutes, most of the
	// machine's memory): only when -run names it.
	{id: "E7", run: runE7, onRequest: true},
	// E6 (a) and (c) sync fleets of 100 clusters × 1,000 pods and 1,000
	// clusters on each side, three times (about N minutes; -e6large:
	// 1,000,000 pods of ours, about 7 GB): only when -run names it.
	{id: "E6", run: runE6, onRequest: true},
}

func main() {
	// A replay server's process (E6, E7), an E7 trial's and an E6 trial's
	// are this program run again.
	replayserver.RunIfChild()
	synctrial.RunIfChild()
	fleettrial.RunIfChild()
	os.Exit(benchMain())
}

// benchMain parses the flags, runs the benchmark and returns the exit code:
// 0, 1 when a workload fails (wrong result counts, a stalled informer), or
// 2 for bad flags.
func benchMain() int {
	jsonOut := flag.Bool("json", false, "print JSON lines instead of a Markdown table")
	runList := flag.String("run", "", "comma-separated workloads to run (default: W1,W2,W3,W4,W5,churn; W6, W8, W8u, W1save, E7 and E6 only when named)")
	quick := flag.Bool("quick", false, "small sizes and one repetition: a smoke run that still checks every result")
	count := flag.Int("count", 0, "repetitions per figure; medians are reported (default 3, or 1 with -quick)")
	svgPath := flag.String("svg", "", "also write a bar chart of the ratios to this SVG file")
	retainedSVGPath := flag.String("retainedsvg", "", "also write a bar chart of W6's retained heap per pod by configuration to this SVG file (needs -run W6)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	w8Objects := flag.Int("w8objects", 0, "number of custom resources W8 and W8u decode (default 50,000, or 2,000 with -quick)")
	e7Pods := flag.Int("e7pods", -1, "E7: pods of ours' large case (0: none; default 1,000,000, or 5,000 with -quick)")
	e7ClientGo := flag.Int("e7clientgo", -1, "E7: pods of the comparison with client-go (0: none; default none, or 5,000 with -quick)")
	e7Fit := flag.Bool("e7fit", false, "E7: find the comparison's pod count: the largest at which client-go fits in -e7box (bisection, each probe a trial in a memory cgroup; needs root)")
	e7FitRange := flag.String("e7fitrange", "", "E7: LOW,HIGH: -e7fit's search starts knowing that LOW pods fit and HIGH do not (default 0 and -e7pods)")
	e7Box := flag.Uint64("e7box", 0, "E7: the memory cgroup limit of -e7fit, in bytes (default 10 GiB)")
	profileDir := flag.String("profile", "", "E6, E7: directory where each trial writes a CPU profile of its sync and a heap profile once synced")
	e6Large := flag.Bool("e6large", false, "E6: ours alone at 1,000 clusters × 1,000 pods (DropFields and Deduplicate) and its warm restart from snapshots, instead of (a) and (c) (about 7 GB of heap)")
	e6MemLimit := flag.String("e6memlimit", "", "E6: GOMEMLIMIT of ours' trials of the warm-restart case (-e6large's), as the runtime reads it (\"6GiB\"; default: none, the runtime's)")
	flag.Parse()

	cfg := fullConfig
	if *quick {
		cfg = quickConfig
	}
	if *count > 0 {
		cfg.count = *count
	}
	if *w8Objects > 0 {
		cfg.w8Objects = *w8Objects
	}
	if *e7Pods >= 0 {
		cfg.e7.pods = *e7Pods
	}
	if *e7ClientGo >= 0 {
		cfg.e7.clientGoPods = *e7ClientGo
	}
	if *e7Box > 0 {
		cfg.e7.box = *e7Box
	}
	cfg.e7.fit, cfg.e7.profileDir = *e7Fit, *profileDir
	cfg.e6.large, cfg.e6.profileDir, cfg.e6.memLimit = *e6Large, *profileDir, *e6MemLimit
	if *e7FitRange != "" {
		if _, err := fmt.Sscanf(*e7FitRange, "%d,%d", &cfg.e7.fitLow, &cfg.e7.fitHigh); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -e7fitrange:", err)
			return 2
		}
	}
	selected, err := selectWorkloads(*runList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
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
	info := benchkit.StartRun("k8s.io/client-go")
	if *quick {
		info.Smoke = benchkit.QuickNote
	}
	if err := run(cfg, selected, info, *jsonOut, charts{ratios: *svgPath, retained: *retainedSVGPath}); err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		return 1
	}
	return 0
}

// selectWorkloads returns the workloads named in list or, when list is
// empty, those not run only on request (W1–W5 and churn).
func selectWorkloads(list string) ([]workload, error) {
	if list == "" {
		var out []workload
		for _, w := range workloads {
			if !w.onRequest {
				out = append(out, w)
			}
		}
		return out, nil
	}
	ids := strings.Split(list, ",")
	var out []workload
	for _, w := range workloads {
		if slices.ContainsFunc(ids, func(id string) bool { return strings.EqualFold(strings.TrimSpace(id), w.id) }) {
			out = append(out, w)
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(workloads, func(w workload) bool { return strings.EqualFold(strings.TrimSpace(id), w.id) }) {
			return nil, fmt.Errorf("unknown workload %q (known: W1,W2,W3,W4,W5,churn,W6,W8,W8u,W1save,E7,E6)", id)
		}
	}
	return out, nil
}

// charts names the SVG files run writes beside its table ("": none).
type charts struct {
	// ratios gets every row's ratio (writeSVGFile).
	ratios string
	// retained gets W6's retained bytes per pod (writeRetainedSVGFile).
	retained string
}

// progress writes a line to stderr about a step of a long workload, so
// that a run shows that it moves; the table, on stdout, is unchanged.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// run measures the selected workloads, prints their rows under the header
// of info (finished once they are measured) and writes the charts asked
// for.
func run(cfg config, selected []workload, info benchkit.Run, jsonOut bool, out charts) error {
	jsonSize, heapSize, err := podSizes(1000)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: pod size %.0f B as JSON, %.0f B on the heap; %d repetitions per figure\n",
		jsonSize, heapSize, cfg.count)

	var rows []benchkit.Row
	for _, w := range selected {
		start := time.Now()
		rs, err := w.run(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", w.id, err)
		}
		progress("%s done in %v", w.id, time.Since(start).Round(time.Millisecond))
		rows = append(rows, rs...)
	}
	if out.ratios != "" {
		if err := writeSVGFile(out.ratios, rows); err != nil {
			return err
		}
	}
	if out.retained != "" {
		if err := writeRetainedSVGFile(out.retained, rows); err != nil {
			return err
		}
	}
	info.Finish()
	if jsonOut {
		return table.WriteJSONLines(os.Stdout, info, rows)
	}
	return table.WriteMarkdown(os.Stdout, info, rows)
}
