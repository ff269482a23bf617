// Command realbench runs the real-server workloads of shared/benchmarks.md,
// E1 (initial sync) and E2 (end-to-end latency), comparing client-go v0.37's
// shared informer with this library's, against an etcd and kube-apiserver it
// starts itself on 127.0.0.1 (from the binaries hack/build-assets.sh builds,
// as the e2e suite does):
//
//	cd e2e && go run ./cmd/realbench [-quick] [-json] [-n 5000] [-profile DIR]
//
// It creates N production-like pods (internal/prodpods) the way a cluster
// writes them: created by kube-controller-manager, status set by
// kube-scheduler and kubelet through the status subresource, so that each
// has managed fields of three managers. Each informer then runs in a process
// of its own (this command run again as a child), so that CPU time from
// getrusage and heap figures belong to one implementation only.
//
// With -e4 it also runs E4, the warm restart (a restart child per start:
// client-go cold, ours cold writing a snapshot, ours warm within the watch
// window and after compacting etcd and restarting kube-apiserver), printed
// as a table of its own (cold ÷ ours warm); see docs/benchmarks.md, "Real
// server: E4".
//
// With -profile, each sync child (E1, E1 through crcache, E5) writes a CPU profile and an allocation
// profile of its sync into DIR, for go tool pprof; the allocation profile is
// written after a collection, so that it counts every allocation of the
// sync.
//
// It prints one Markdown table (workload, case, metric, client-go, ours,
// ratio = client-go ÷ ours, so that >1 means ours is faster or smaller),
// headed by a legend and the run's commit, time, versions and load average,
// with notes under it; or with -json the same as JSON lines (the header
// and notes first, as one object under the key "run").
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/synctrial"
)

// config is the command line.
type config struct {
	pods        int
	runs        int
	updates     int
	writers     int
	json        bool
	quick       bool
	assets      string
	droppedCase bool
	dedupCase   bool
	// e1 and e2 run those workloads (both by default).
	e1, e2 bool
	// e5 runs E5 over e5Objects Workloads.
	e5        bool
	e5Objects int
	// e4 runs E4, the warm restart (docs/benchmarks.md, "E4").
	e4 bool
	// e4Probe, if positive, measures the ways a resumed watch can learn
	// it has caught up, that many times each (runE4Probe).
	e4Probe int
	// crcache adds "E1 through crcache": controller-runtime's cache
	// against crcache, in a section of its own.
	crcache bool
	// kinds runs the per-kind memory benchmark (kinds.go) over the kinds
	// of kindsOnly and the forms of kindsForms (all when empty), with
	// kindsScale times each kind's objects.
	kinds      bool
	kindsOnly  string
	kindsForms string
	kindsScale float64
	// profileDir, if set, is where each sync child writes a CPU profile
	// and an allocation profile of its sync.
	profileDir string
	// e7 runs E7 alone (e7.go): the scale curve over e7Sizes, its chart
	// written to e7SVG, and with e7Limit the memory-limit bisection at
	// e7LimitPods (e7limit.go).
	e7          bool
	e7Sizes     []int
	e7SVG       string
	e7Limit     bool
	e7LimitPods int
	// e7SeedEtcd writes E7's pods into etcd rather than through the API
	// (seed_etcd.go).
	e7SeedEtcd bool
	// apiserverMemLimit, if set, is kube-apiserver's GOMEMLIMIT.
	apiserverMemLimit string
}

func main() {
	// E7's trials are this command run again (internal/synctrial), with
	// the caches among their implementations.
	for _, impl := range []string{implControllerRuntime, implCRCache} {
		synctrial.Register(impl, cacheTrial(impl))
	}
	synctrial.RunIfChild()
	var cfg config
	quick := flag.Bool("quick", false, "CI mode: 1,000 updates in E2 instead of 10,000 (N stays 5,000 unless -n)")
	flag.IntVar(&cfg.pods, "n", 5000, "production-like pods on the server (E1 and E2)")
	flag.IntVar(&cfg.runs, "runs", 3, "E1 syncs per implementation, interleaved, and E2 rounds; medians are reported")
	flag.IntVar(&cfg.updates, "updates", 10000, "E2: pod updates made through the API while both informers watch")
	flag.IntVar(&cfg.writers, "writers", 4, "E2: concurrent writers")
	flag.BoolVar(&cfg.json, "json", false, "print JSON lines instead of a Markdown table")
	flag.BoolVar(&cfg.droppedCase, "dropped-case", true, "E1: also sync with managed fields dropped on both sides (client-go: a transform; ours: DropFields)")
	flag.BoolVar(&cfg.dedupCase, "dedup-case", true, "E1 and E5: also sync ours with Deduplicate on, beside the same client-go runs")
	flag.BoolVar(&cfg.e1, "e1", true, "run E1 (client-go against ours)")
	flag.BoolVar(&cfg.e2, "e2", true, "run E2 (client-go against ours)")
	flag.BoolVar(&cfg.crcache, "crcache", true, "E1 through crcache: also sync the pods with controller-runtime's cache and with crcache, default settings on both (about 20 s)")
	flag.BoolVar(&cfg.e5, "e5", false, "E5: sync Workloads of a real CRD with client-go's typed and dynamic informers, ours (typed and unstructured), controller-runtime's cache and crcache (several minutes, most of it creating the Workloads)")
	flag.BoolVar(&cfg.e4, "e4", false, "E4: cold starts of client-go and ours against warm starts of ours from a snapshot, within the watch window and after compaction (restarts kube-apiserver; with -e1=false -e2=false -crcache=false to run it alone)")
	flag.IntVar(&cfg.e4Probe, "e4-probe", 0, "E4: measure this many times each way a resumed watch can learn it has caught up (a short watch's bookmark, a metadata-only list, a streaming list; docs/restart.md), before E4 if -e4 is set")
	flag.IntVar(&cfg.e5Objects, "e5-n", 5000, "E5: Workloads on the server")
	flag.BoolVar(&cfg.kinds, "kinds", false, "the per-kind memory benchmark: pods, ConfigMaps, Secrets, Services, EndpointSlices, Events and Workloads, typed, metadata-only and unstructured, each alone in a process: client-go against ours and controller-runtime's cache against crcache (with -e1=false -e2=false -crcache=false to run it alone; about 15 minutes, a third of it creating the objects)")
	flag.StringVar(&cfg.kindsOnly, "kinds-only", "", "-kinds: only these kinds, comma-separated (pods, configmaps, secrets, services, endpointslices, events, workloads)")
	flag.StringVar(&cfg.kindsForms, "kinds-forms", "", "-kinds: only these forms, comma-separated (typed, metadata, unstructured)")
	flag.Float64Var(&cfg.kindsScale, "kinds-scale", 1, "-kinds: the objects of each kind, times this (1: 5,000 pods, 4,200 ConfigMaps, 2,000 Secrets, 1,000 Services and EndpointSlices, 10,000 Events, 2,000 Workloads)")
	flag.StringVar(&cfg.assets, "assets", defaultAssets(), "directory with the etcd and kube-apiserver binaries")
	flag.StringVar(&cfg.profileDir, "profile", "", "E1, E1 through crcache, E4, E5 and -kinds: directory where each sync or restart child writes a CPU profile (*.cpu.pprof) and an allocation profile (*.allocs.pprof; a sync child samples every 4 KB, and its inuse_space is the heap once synced) of its sync (E4: of its start until synced)")
	flag.BoolVar(&cfg.e7, "e7", false, "E7 alone: the scale curve (client-go, ours, ours with Deduplicate; controller-runtime's cache and crcache at 50,000) over -e7-sizes, each trial a sync and a relist in its own process")
	e7Sizes := flag.String("e7-sizes", "5000,20000,50000,150000", "E7: the pod counts of the curve, seeded one after the other")
	flag.StringVar(&cfg.e7SVG, "e7-svg", "", "E7: write the chart of the ratios against N to this SVG file")
	flag.BoolVar(&cfg.e7Limit, "e7-limit", false, "E7: also find each side's lowest memory cgroup limit for a sync and a relist at -e7-limit-n pods (bisection; needs root; 21 minutes at 50,000 pods on a 2-core machine at load 5-7, docs/scale.md)")
	flag.BoolVar(&cfg.e7SeedEtcd, "e7-seed-etcd", true, "E7: write the pods into etcd as kube-apiserver stores them (after 200 through the API, compared), instead of all through the API (hours at 150,000 on this machine)")
	flag.StringVar(&cfg.apiserverMemLimit, "apiserver-gomemlimit", "", "kube-apiserver's GOMEMLIMIT (as 9GiB), none if empty: at 150,000 pods its heap, left to GOGC, reached 16.7 GB of this 24-GB machine while client-go's trial synced, and the machine ran out of memory")
	flag.IntVar(&cfg.e7LimitPods, "e7-limit-n", 50000, "E7: the pod count of the memory-limit bisection (one of -e7-sizes)")
	var child childSpec
	flag.StringVar(&child.Mode, "child", "", "internal: run as the informer process of one implementation (sync or watch)")
	flag.StringVar(&child.Impl, "impl", "", "internal: the child's implementation (client-go, ours, controller-runtime or crcache)")
	flag.StringVar(&child.Kubeconfig, "kubeconfig", "", "internal: the child's kubeconfig")
	flag.BoolVar(&child.DropManagedFields, "drop-managed-fields", false, "internal: the child drops managed fields")
	flag.BoolVar(&child.Deduplicate, "deduplicate", false, "internal: the child (ours) deduplicates")
	flag.StringVar(&child.Profile, "profile-prefix", "", "internal: the path prefix of the child's profiles")
	flag.StringVar(&child.Kind, "kind", "", "internal: what the child syncs: E1's pods (empty) or a kind of -kinds (E5: workloads)")
	flag.StringVar(&child.SnapshotDir, "snapshot-dir", "", "internal: E4: the child's (ours) SnapshotOptions.Dir")
	flag.StringVar(&child.Form, "form", "", "internal: -kinds and E5: the child's form of objects (typed, metadata or unstructured)")
	flag.Parse()
	if child.Mode != "" {
		child.Pods = cfg.pods
		if err := runChild(child); err != nil {
			fmt.Fprintln(os.Stderr, "realbench child:", err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		setUnlessGiven("updates", &cfg.updates, 1000)
		cfg.quick = true
		if cfg.e7 {
			// E7's smoke run: one size, one run per side.
			if !given("e7-sizes") {
				*e7Sizes = "5000"
			}
			setUnlessGiven("runs", &cfg.runs, 1)
		}
	}
	var err error
	if cfg.e7Sizes, err = parseSizes(*e7Sizes); err != nil {
		fmt.Fprintln(os.Stderr, "realbench: -e7-sizes:", err)
		os.Exit(2)
	}
	if cfg.runs < 1 || cfg.pods < 1 || cfg.updates < 1 || cfg.writers < 1 || cfg.e5Objects < 1 || cfg.kindsScale <= 0 {
		fmt.Fprintln(os.Stderr, "realbench: -n, -runs, -updates, -writers, -e5-n and -kinds-scale must be positive")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "realbench:", err)
		os.Exit(1)
	}
}

// setUnlessGiven sets *v to quick unless flag name was given.
func setUnlessGiven(name string, v *int, quick int) {
	if !given(name) {
		*v = quick
	}
}

// given reports whether flag name was given on the command line.
func given(name string) bool {
	found := false
	flag.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// defaultAssets is where hack/lib.sh puts the binaries: $KUBE_ASSETS, or the
// per-user cache directory for kube-apiserver v1.37.1.
func defaultAssets() string {
	if dir := os.Getenv("KUBE_ASSETS"); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "kubetyped-informer", "kube-v1.37.1")
}

// quickNote is the header's line for a -quick run: only E2 is smaller.
const quickNote = "-quick: CI mode: E2 makes rounds of 1,000 updates instead of 10,000, so its ratios are a smoke run, not the product's figures; E1 runs as in a full run"

// e2Note explains E2's figures under the table.
const e2Note = "E2: latency \"from response\" is the time from the writer reading the response to its write until the handler's notification; it is negative when the handler hears of the write (its watch event) before the writer has read the write's response, which is why its p50 is often negative and has no ratio. Latency \"from request\" counts from sending the write, and is always positive."

func run(cfg config) (err error) {
	info := benchkit.StartRun("k8s.io/client-go")
	if cfg.quick {
		info.Smoke = quickNote
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "realbench-")
	if err != nil {
		return err
	}
	logf("starting etcd and kube-apiserver in %s", dir)
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	// A service range of 65,534 addresses: -kinds creates a ClusterIP
	// Service per application.
	opts := cluster.Options{Assets: cfg.assets, Dir: dir, APIServerArgs: []string{"--service-cluster-ip-range=10.96.0.0/16"}}
	if cfg.apiserverMemLimit != "" {
		opts.APIServerEnv = []string{"GOMEMLIMIT=" + cfg.apiserverMemLimit}
	}
	if cfg.e7 {
		// 150,000 pods written three times each outgrow etcd's default
		// quota of 2 GiB before kube-apiserver compacts.
		opts.EtcdArgs = []string{"--quota-backend-bytes=" + strconv.Itoa(16<<30)}
	}
	c, err := cluster.Start(startCtx, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("starting the servers (logs kept in %s): %w", dir, err)
	}
	defer func() {
		if stopErr := c.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err == nil {
			err = os.RemoveAll(dir)
		} else {
			logf("servers' logs kept in %s", dir)
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	if cfg.e7 {
		return runE7Mode(ctx, c, cfg, info, kubeconfig)
	}
	var size float64
	if cfg.e1 || cfg.e2 || cfg.crcache || cfg.e4 || cfg.e4Probe > 0 {
		start := time.Now()
		if size, err = seed(ctx, c, cfg.pods); err != nil {
			return fmt.Errorf("creating %d pods: %w", cfg.pods, err)
		}
		logf("created %d pods in %s (3 writes each); %.0f B each as protobuf on the server", cfg.pods, time.Since(start).Round(time.Second), size)
	}
	var workloadSize float64
	if cfg.e5 {
		start := time.Now()
		if workloadSize, err = seedE5(ctx, c, cfg.e5Objects); err != nil {
			return fmt.Errorf("creating %d Workloads: %w", cfg.e5Objects, err)
		}
		logf("created %d Workloads in %s (3 writes each); %.0f B each as JSON on the server", cfg.e5Objects, time.Since(start).Round(time.Second), workloadSize)
	}

	var kinds []benchKind
	var forms []string
	var kindsHeld kindsOnServer
	if cfg.kinds {
		if kinds, forms, err = selectedKinds(cfg.kindsOnly, cfg.kindsForms); err != nil {
			return err
		}
		start := time.Now()
		// The pods and Workloads of the other workloads, if created, are
		// the kinds' too.
		seeded := map[string]bool{"pods": cfg.e1 || cfg.e2 || cfg.crcache || cfg.e4, kindWorkloads: cfg.e5}
		if kindsHeld, err = seedKinds(ctx, c, cfg, kinds, seeded); err != nil {
			return fmt.Errorf("-kinds: %w", err)
		}
		logf("created the objects of -kinds in %s: %v", time.Since(start).Round(time.Second), kindsHeld.counts)
	}

	var rows []benchkit.Row
	if cfg.e1 {
		e1, err := runE1(ctx, cfg, kubeconfig)
		if err != nil {
			return fmt.Errorf("E1: %w", err)
		}
		rows = append(rows, e1...)
	}
	if cfg.e2 {
		e2, err := runE2(ctx, c, cfg, kubeconfig)
		if err != nil {
			return fmt.Errorf("E2: %w", err)
		}
		rows = append(rows, e2...)
	}
	var cacheRows []benchkit.Row
	if cfg.crcache {
		e1cr, err := runE1CRCache(ctx, cfg, kubeconfig)
		if err != nil {
			return fmt.Errorf("E1 through crcache: %w", err)
		}
		cacheRows = append(cacheRows, e1cr...)
	}
	if cfg.e5 {
		e5, e5Caches, err := runE5(ctx, cfg, kubeconfig)
		if err != nil {
			return fmt.Errorf("E5: %w", err)
		}
		rows, cacheRows = append(rows, e5...), append(cacheRows, e5Caches...)
	}
	if cfg.kinds {
		kindRows, kindCacheRows, err := runKinds(ctx, cfg, kubeconfig, kinds, forms, kindsHeld)
		if err != nil {
			return fmt.Errorf("-kinds: %w", err)
		}
		rows, cacheRows = append(rows, kindRows...), append(cacheRows, kindCacheRows...)
	}
	var e4Rows []benchkit.Row
	var e4Notes []string
	if cfg.e4Probe > 0 {
		notes, err := runE4Probe(ctx, c, cfg.e4Probe)
		if err != nil {
			return fmt.Errorf("E4 probe: %w", err)
		}
		for _, n := range notes {
			logf("%s", n)
		}
		info.Notes = append(info.Notes, notes...)
	}
	if cfg.e4 {
		// Last: it restarts kube-apiserver.
		if e4Rows, e4Notes, err = runE4(ctx, c, cfg, kubeconfig); err != nil {
			return fmt.Errorf("E4: %w", err)
		}
	}
	info.Finish()
	if cfg.kinds {
		info.Notes = append(info.Notes, kindsNote(cfg, kinds, kindsHeld))
	}
	if len(rows) > 0 || len(cacheRows) > 0 || !cfg.e4 {
		if err := report(os.Stdout, cfg, info, size, workloadSize, rows, cacheRows); err != nil {
			return err
		}
	}
	if !cfg.e4 {
		return nil
	}
	info.Notes = append(info.Notes, e4Notes...)
	if cfg.json {
		return e4Table.WriteJSONLines(os.Stdout, info, e4Rows)
	}
	if len(rows) > 0 || len(cacheRows) > 0 {
		if _, err := io.WriteString(os.Stdout, "\n"); err != nil {
			return err
		}
	}
	return e4Table.WriteMarkdown(os.Stdout, info, e4Rows)
}

// report writes rows under info's header, with the notes that say what the
// figures are: the pods (size, the server's protobuf bytes each), how many
// runs and rounds the medians are of, and why E2's p50 from the response
// is negative. cacheRows, controller-runtime's cache against crcache, follow
// in a section of their own (with -json, a second header line and its
// rows), whose columns say which cache is which.
func report(w io.Writer, cfg config, info benchkit.Run, size, workloadSize float64, rows, cacheRows []benchkit.Row) error {
	notes := info.Notes
	if cfg.e1 || cfg.e2 {
		info.Notes = append(notes,
			fmt.Sprintf("%d production-like pods, %.0f B each as protobuf on the server; E1 medians of %d interleaved runs per side; E2 medians of %d rounds of %d updates by %d writers.",
				cfg.pods, size, cfg.runs, cfg.runs, cfg.updates, cfg.writers))
	}
	if cfg.e2 {
		info.Notes = append(info.Notes, e2Note)
	}
	e5Note := fmt.Sprintf("E5: %d Workloads of a real CRD (internal/crdtypes), %.0f B each as JSON on the server, synced by each implementation with its default settings (and, in the rows that say so, ours with Deduplicate) in its own process; medians of %d interleaved runs per side.", cfg.e5Objects, workloadSize, cfg.runs)
	if cfg.e5 {
		info.Notes = append(info.Notes, e5Note)
	}
	write := table.WriteMarkdown
	if cfg.json {
		write = table.WriteJSONLines
	}
	if len(rows) > 0 || len(cacheRows) == 0 {
		if err := write(w, info, rows); err != nil || len(cacheRows) == 0 {
			return err
		}
		if !cfg.json {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	}
	info.Notes = notes
	if cfg.crcache {
		info.Notes = append(info.Notes, fmt.Sprintf("E1 through crcache: the same %d pods synced by a cache.Cache built by controller-runtime's cache.New and by crcache.New with default options, each in its own process; medians of %d interleaved runs per side.", cfg.pods, cfg.runs))
	}
	if cfg.e5 {
		info.Notes = append(info.Notes, e5Note)
	}
	write = cacheTable.WriteMarkdown
	if cfg.json {
		write = cacheTable.WriteJSONLines
	}
	return write(w, info, cacheRows)
}

// logf reports progress on stderr, so that stdout holds only the results.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s realbench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// newRow returns a row with its ratio, client-go ÷ ours; the row has none
// when a figure is not positive, as a latency can be (see runE2), where a
// ratio would mean nothing.
func newRow(workload, kase, metric string, clientGo, ours float64) benchkit.Row {
	r := benchkit.Row{Workload: workload, Case: kase, Metric: metric, Theirs: clientGo, Ours: ours}
	if clientGo > 0 && ours > 0 {
		ratio := clientGo / ours
		r.Ratio = &ratio
	}
	return r
}

// table is this command's layout of the output contract: figures with
// three significant digits at most, ratios with two decimals, "–" for a row
// without a ratio.
var table = benchkit.Table{
	Theirs:    "client-go",
	TheirsKey: "clientgo",
	Ours:      "ours",
	Workloads: `docs/benchmarks.md, "The workloads" (E1, E2, E5)`,
	Value:     func(_ string, v float64) string { return format(v) },
	Ratio: func(r benchkit.Row) string {
		if r.Ratio == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f×", *r.Ratio)
	},
}

// cacheTable is table for the rows comparing controller-runtime's cache
// with crcache.
var cacheTable = func() benchkit.Table {
	t := table
	t.Theirs, t.TheirsKey, t.Ours = "controller-runtime", "controllerruntime", "crcache"
	t.Workloads = `docs/benchmarks.md, "The workloads" (E1 through crcache, E5)`
	return t
}()

// format prints a figure with three significant digits at most.
func format(v float64) string {
	switch {
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
