package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
)

// e4TickInterval is how often the background writer changes a pod while a
// restart child syncs: a cluster where something changes, as the issue's
// target ("with the writer running") asks, and what lets a resumed watch see
// that it has caught up without waiting for a bookmark (docs/restart.md).
const e4TickInterval = 100 * time.Millisecond

// e4Measure is one restart child's figures, as the parent adds them up.
type e4Measure struct {
	SyncedSeconds     float64 // from starting the process until synced
	CPUSeconds        float64
	BytesReceived     float64
	APIServerCPU      float64 // kube-apiserver's CPU seconds from start until synced
	PeakHeap          float64
	Differences       int // cache against a fresh LIST, by namespace/name and resource version
	SaveSeconds       float64
	SaveCPUSeconds    float64
	SavedBytes        float64
	ResumedWatch      bool
	RestoreRelist     bool
	RestoredObjects   int64
	differencesReport string
}

// e4Runs are one E4 run's children: client-go cold, ours cold (which
// writes the snapshot), ours warm within the watch window with the writer
// running (a) and on a quiet resource (q), and ours warm after compaction
// (b); and crcache cold, warm (a) and warm (q).
type e4Runs struct {
	clientGoCold, oursCold, warmA, warmQ, warmB e4Measure
	crcacheCold, crcacheWarmA, crcacheWarmQ     e4Measure
}

// runE4 runs E4 cfg.runs times (once with -quick unless -runs is given) on
// the cluster's cfg.pods pods, with the snapshots in a directory of its
// own, and returns its rows and notes.
func runE4(ctx context.Context, c *cluster.Cluster, cfg config, kubeconfig string) ([]benchkit.Row, []string, error) {
	runs := cfg.runs
	if cfg.quick && !given("runs") {
		runs = 1
	}
	client, err := clientset(c.Config())
	if err != nil {
		return nil, nil, err
	}
	keys, err := podKeys(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	// MkdirTemp creates the directory 0700, as snapshots require.
	dir, err := os.MkdirTemp("", "realbench-e4-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	w := &e4Writer{client: client, keys: keys}
	var all []e4Runs
	for run := range runs {
		var r e4Runs
		child := func(impl string) childSpec {
			spec := childSpec{Mode: "restart", Impl: impl, Kubeconfig: kubeconfig, Pods: cfg.pods, SnapshotDir: dir}
			if impl == implCRCache {
				spec.SnapshotDir = filepath.Join(dir, "crcache")
			}
			return spec
		}
		// profiled names a child's profiles after its start, as E1's are.
		profiled := func(c childSpec, start string) childSpec {
			if cfg.profileDir != "" {
				c.Profile = filepath.Join(cfg.profileDir, fmt.Sprintf("e4-%s-run%d", start, run+1))
			}
			return c
		}
		// A cold start of ours needs no snapshot: remove the last run's.
		if err := clearDir(dir); err != nil {
			return nil, nil, err
		}
		// MkdirAll creates it 0700, as snapshots require.
		if err := os.MkdirAll(filepath.Join(dir, "crcache"), 0o700); err != nil {
			return nil, nil, err
		}
		for _, start := range []struct {
			into  *e4Measure
			impl  string
			name  string
			quiet bool
		}{
			{&r.clientGoCold, implClientGo, "client-go-cold", false},
			{&r.oursCold, implOurs, "ours-cold", false},
			{&r.crcacheCold, implCRCache, "crcache-cold", false},
			{nil, "", "changes", false},
			// Each quiet start follows the warm start (a) of its side at
			// once, with no write to the pods in between: the snapshot
			// (a) wrote is current, and only kube-apiserver's own Lease
			// renewals move the cluster's resource version. (crcache's
			// (a), whose writer changes pods, must not come between ours'
			// (a) and (q).)
			{&r.warmA, implOurs, "ours-warm-a", false},
			{&r.warmQ, implOurs, "ours-warm-q", true},
			{&r.crcacheWarmA, implCRCache, "crcache-warm-a", false},
			{&r.crcacheWarmQ, implCRCache, "crcache-warm-q", true},
		} {
			if start.into == nil {
				if err := w.changeShare(ctx, run*2); err != nil {
					return nil, nil, err
				}
				continue
			}
			if start.quiet {
				// As on a quiet cluster: the current resource version has
				// moved past the snapshot's.
				if err := waitVersionMoved(ctx, client); err != nil {
					return nil, nil, err
				}
			}
			spec := profiled(child(start.impl), start.name)
			if *start.into, err = restartOnce(ctx, c, w, spec, start.quiet); err != nil {
				return nil, nil, err
			}
			if strings.Contains(start.name, "warm") && !start.into.ResumedWatch {
				return nil, nil, fmt.Errorf("E4 %s: the warm start did not resume its watch: %+v", start.name, *start.into)
			}
		}
		if err := w.changeShare(ctx, run*2+1); err != nil {
			return nil, nil, err
		}
		if err := compact(ctx, c, client); err != nil {
			return nil, nil, err
		}
		if r.warmB, err = restartOnce(ctx, c, w, profiled(child(implOurs), "ours-warm-b"), false); err != nil {
			return nil, nil, err
		}
		if !r.warmB.RestoreRelist {
			return nil, nil, fmt.Errorf("E4 (b): the warm start after compaction did not list: %+v", r.warmB)
		}
		logf("E4 run %d: client-go cold %.2f s, ours cold %.2f s, ours warm (a) %.2f s, (q) %.2f s, (b) %.2f s; crcache cold %.2f s, warm (a) %.2f s, (q) %.2f s to synced",
			run+1, r.clientGoCold.SyncedSeconds, r.oursCold.SyncedSeconds, r.warmA.SyncedSeconds, r.warmQ.SyncedSeconds, r.warmB.SyncedSeconds,
			r.crcacheCold.SyncedSeconds, r.crcacheWarmA.SyncedSeconds, r.crcacheWarmQ.SyncedSeconds)
		all = append(all, r)
	}
	notes := e4Notes(cfg.pods, all)
	if cfg.quick && !given("runs") {
		notes = append(notes, "E4 with -quick: one run per side (the same N), so no medians: a smoke run.")
	}
	return e4Rows(all), notes, nil
}

// e4Metrics are E4's rows' metrics, each with its figure of a measure.
var e4Metrics = []struct {
	name  string
	value func(e4Measure) float64
}{
	{"time from process start to synced (s)", func(m e4Measure) float64 { return m.SyncedSeconds }},
	{"client CPU (s)", func(m e4Measure) float64 { return m.CPUSeconds }},
	{"bytes received (MB)", func(m e4Measure) float64 { return m.BytesReceived / 1e6 }},
	{"kube-apiserver CPU during the sync (s)", func(m e4Measure) float64 { return m.APIServerCPU }},
	{"peak heap (MB)", func(m e4Measure) float64 { return m.PeakHeap / 1e6 }},
}

// e4Rows returns E4's rows: for each warm start, each metric against
// client-go's cold start and against ours, medians of the runs.
func e4Rows(all []e4Runs) []benchkit.Row {
	median := func(pick func(e4Runs) e4Measure, value func(e4Measure) float64) float64 {
		return benchkit.MedianOf(all, func(r e4Runs) float64 { return value(pick(r)) })
	}
	cases := []struct {
		name       string
		cold, warm func(e4Runs) e4Measure
	}{
		{"(a) within the watch window: client-go cold / ours warm", func(r e4Runs) e4Measure { return r.clientGoCold }, func(r e4Runs) e4Measure { return r.warmA }},
		{"(a) within the watch window: ours cold / ours warm", func(r e4Runs) e4Measure { return r.oursCold }, func(r e4Runs) e4Measure { return r.warmA }},
		{"(b) after compaction: client-go cold / ours warm", func(r e4Runs) e4Measure { return r.clientGoCold }, func(r e4Runs) e4Measure { return r.warmB }},
		{"(b) after compaction: ours cold / ours warm", func(r e4Runs) e4Measure { return r.oursCold }, func(r e4Runs) e4Measure { return r.warmB }},
		{"(q) quiet, within the watch window: client-go cold / ours warm", func(r e4Runs) e4Measure { return r.clientGoCold }, func(r e4Runs) e4Measure { return r.warmQ }},
		{"(q) quiet, within the watch window: ours cold / ours warm", func(r e4Runs) e4Measure { return r.oursCold }, func(r e4Runs) e4Measure { return r.warmQ }},
		{"through crcache, (a) within the watch window: crcache cold / crcache warm", func(r e4Runs) e4Measure { return r.crcacheCold }, func(r e4Runs) e4Measure { return r.crcacheWarmA }},
		{"through crcache, (q) quiet: crcache cold / crcache warm", func(r e4Runs) e4Measure { return r.crcacheCold }, func(r e4Runs) e4Measure { return r.crcacheWarmQ }},
	}
	var rows []benchkit.Row
	for _, c := range cases {
		for _, m := range e4Metrics {
			rows = append(rows, newRow("E4", c.name, m.name, median(c.cold, m.value), median(c.warm, m.value)))
		}
	}
	return rows
}

// e4Notes says what E4's figures are, the snapshot's size and save cost,
// the differences found, and whether issue 26's targets are met.
func e4Notes(pods int, all []e4Runs) []string {
	med := func(pick func(e4Runs) float64) float64 { return benchkit.MedianOf(all, pick) }
	cg := func(f func(e4Measure) float64) float64 {
		return med(func(r e4Runs) float64 { return f(r.clientGoCold) })
	}
	oc := func(f func(e4Measure) float64) float64 { return med(func(r e4Runs) float64 { return f(r.oursCold) }) }
	wa := func(f func(e4Measure) float64) float64 { return med(func(r e4Runs) float64 { return f(r.warmA) }) }
	wb := func(f func(e4Measure) float64) float64 { return med(func(r e4Runs) float64 { return f(r.warmB) }) }
	wq := func(f func(e4Measure) float64) float64 { return med(func(r e4Runs) float64 { return f(r.warmQ) }) }
	cc := func(f func(e4Measure) float64) float64 {
		return med(func(r e4Runs) float64 { return f(r.crcacheCold) })
	}
	cq := func(f func(e4Measure) float64) float64 {
		return med(func(r e4Runs) float64 { return f(r.crcacheWarmQ) })
	}
	peak := func(m e4Measure) float64 { return m.PeakHeap }
	bytesOf := func(m e4Measure) float64 { return m.BytesReceived }
	apiCPU := func(m e4Measure) float64 { return m.APIServerCPU }
	cpu := func(m e4Measure) float64 { return m.CPUSeconds }
	synced := func(m e4Measure) float64 { return m.SyncedSeconds }
	diffsA, diffsB, diffsQ, diffsCR := 0, 0, 0, 0
	for _, r := range all {
		diffsA += r.warmA.Differences
		diffsB += r.warmB.Differences
		diffsQ += r.warmQ.Differences
		diffsCR += r.crcacheWarmA.Differences + r.crcacheWarmQ.Differences
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	savedPerObject := oc(func(m e4Measure) float64 { return m.SavedBytes }) / float64(pods)
	return []string{
		fmt.Sprintf("E4: %d production-like pods; each start is a process of its own that syncs, then stops cleanly (ours writes its snapshot, default settings, informer.For with SnapshotOptions.Dir); medians of %d runs. "+
			"Per run: client-go cold, ours cold, a writer changes 1%% of the pods (one annotation each) while no child runs, ours warm (a); another 1%% changed, etcd compacted at the current revision and kube-apiserver restarted (emptying its watch cache), ours warm (b). "+
			"A background writer changes one pod every %v while each child syncs. Bytes received: response bodies counted in the child by a RoundTripper wrapper (after transparent gzip decoding). "+
			"kube-apiserver CPU: utime+stime from /proc/<pid>/stat from the child's start until it reported synced.", pods, len(all), e4TickInterval),
		fmt.Sprintf("E4 snapshot: %.0f B per object on disk; save at a clean stop (cancel + Factory.Shutdown, ours cold): %.2f s wall, %.2f s CPU.",
			savedPerObject, oc(func(m e4Measure) float64 { return m.SaveSeconds }), oc(func(m e4Measure) float64 { return m.SaveCPUSeconds })),
		fmt.Sprintf("E4 consistency: the warm child's cache against a fresh LIST (namespace/name and resource version, after the background writer's last write): %d differences in (a), %d in (b), %d in (q), %d through crcache.", diffsA, diffsB, diffsQ, diffsCR),
		fmt.Sprintf("E4 (q), quiet: right after (a) of the same side, no write to the pods (the snapshot (a) wrote is current) and no writer during the sync; each quiet start waits until kube-apiserver's own Lease renewals have moved the cluster's resource version. Through crcache: crcache.NewWith(crcache.Options{Snapshot: ...}) with a pod informer, its cold start writing the snapshot that its (a) starts from, with the same writer as ours."),
		fmt.Sprintf("E4 targets (issue 32): (q) time to synced %.2f× ours cold's, client CPU %.2f× (both ≤ 0.3×: %s, %s); through crcache (q) time %.2f×, client CPU %.2f× crcache cold's (≤ 0.3×: %s, %s); (b) peak heap %.2f× ours cold's (≤ 1×: %s).",
			wq(synced)/oc(synced), wq(cpu)/oc(cpu), met(wq(synced) <= 0.3*oc(synced)), met(wq(cpu) <= 0.3*oc(cpu)),
			cq(synced)/cc(synced), cq(cpu)/cc(cpu), met(cq(synced) <= 0.3*cc(synced)), met(cq(cpu) <= 0.3*cc(cpu)),
			wb(peak)/oc(peak), met(wb(peak) <= oc(peak))),
		fmt.Sprintf("E4 targets (issue 26): (a) bytes %.1f%% of client-go cold's, %.1f%% of ours cold's (≤ 5%%: %s); kube-apiserver CPU %.2f× client-go cold's (≤ 0.2×: %s); client CPU %.2f× (≤ 0.3×: %s); time to synced %.2f× (≤ 0.5×: %s). (b) %d differences (0: %s); client CPU %.2f× ours cold's (≤ 0.6×: %s).",
			100*wa(bytesOf)/cg(bytesOf), 100*wa(bytesOf)/oc(bytesOf), met(wa(bytesOf) <= 0.05*cg(bytesOf) && wa(bytesOf) <= 0.05*oc(bytesOf)),
			wa(apiCPU)/cg(apiCPU), met(wa(apiCPU) <= 0.2*cg(apiCPU)),
			wa(cpu)/cg(cpu), met(wa(cpu) <= 0.3*cg(cpu)),
			wa(synced)/cg(synced), met(wa(synced) <= 0.5*cg(synced)),
			diffsB, met(diffsB == 0), wb(cpu)/oc(cpu), met(wb(cpu) <= 0.6*oc(cpu))),
	}
}

// e4Table is the layout of E4's rows: each compares a cold start (client-go's
// or ours, as the case says) with ours warm.
var e4Table = func() benchkit.Table {
	t := table
	t.Theirs, t.TheirsKey, t.Ours = "cold", "cold", "ours warm"
	t.Workloads = `docs/benchmarks.md, "E4"`
	return t
}()

// restartOnce runs the restart child c while w changes a pod every
// e4TickInterval, and returns its figures, its cache compared with a LIST
// made once w has stopped and the child has seen w's last write. With
// quiet, nothing is written: the child is asked for a pod at the version a
// LIST made once it synced shows.
func restartOnce(ctx context.Context, c *cluster.Cluster, w *e4Writer, spec childSpec, quiet bool) (e4Measure, error) {
	cmd, err := spec.command(ctx)
	if err != nil {
		return e4Measure{}, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return e4Measure{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return e4Measure{}, err
	}
	pid := c.APIServerPID()
	serverBefore, err := processCPU(pid)
	if err != nil {
		return e4Measure{}, err
	}
	tickCtx, stopTicks := context.WithCancel(ctx)
	var ticks <-chan e4Write
	if quiet {
		stopTicks()
		ticks = w.current(ctx)
	} else {
		ticks = w.tick(tickCtx)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		stopTicks()
		return e4Measure{}, err
	}
	fail := func(err error) (e4Measure, error) {
		stopTicks()
		<-ticks
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return e4Measure{}, fmt.Errorf("%s restart child: %w", spec.Impl, err)
	}
	out := json.NewDecoder(bufio.NewReader(stdout))
	var first restartResult
	if err := out.Decode(&first); err != nil {
		return fail(err)
	}
	serverAfter, err := processCPU(pid)
	if err != nil {
		return fail(err)
	}
	stopTicks()
	last := <-ticks
	if last.err != nil {
		return fail(last.err)
	}
	if _, err := fmt.Fprintf(stdin, "%s %s\n", last.key, last.rv); err != nil {
		return fail(err)
	}
	var final restartResult
	if err := out.Decode(&final); err != nil {
		return fail(err)
	}
	if err := cmd.Wait(); err != nil {
		return e4Measure{}, fmt.Errorf("%s restart child: %w", spec.Impl, err)
	}
	listed, err := listVersions(ctx, w.client)
	if err != nil {
		return e4Measure{}, err
	}
	if spec.Impl == implCRCache {
		// crcache has no statistics: its start's line says how it synced.
		first.Snapshot.ResumedWatches = boolCount(first.StartLine == "Synced from a snapshot by resuming its watch")
		first.Snapshot.RestoreRelists = boolCount(first.StartLine == "Synced from a snapshot by listing")
	}
	m := e4Measure{
		SyncedSeconds:   time.Duration(first.SyncedAt - started.UnixNano()).Seconds(),
		CPUSeconds:      first.CPUSeconds,
		BytesReceived:   float64(first.BytesReceived),
		APIServerCPU:    serverAfter - serverBefore,
		PeakHeap:        float64(first.PeakHeap),
		SaveSeconds:     final.SaveSeconds,
		SaveCPUSeconds:  final.SaveCPUSeconds,
		SavedBytes:      float64(final.SavedBytes),
		ResumedWatch:    first.Snapshot.ResumedWatches == 1,
		RestoreRelist:   first.Snapshot.RestoreRelists == 1,
		RestoredObjects: first.Snapshot.RestoredObjects,
	}
	if first.PeakGCCycles == 0 {
		logf("E4 %s: no GC cycle completed before synced: its peak heap is bytes allocated", spec.Impl)
	}
	m.Differences = countDifferences(listed, final.Cache)
	if m.Differences > 0 {
		m.differencesReport = cmp.Diff(listed, final.Cache)
		logf("E4 %s: cache against a fresh LIST (-list +cache):\n%s", spec.Impl, m.differencesReport)
	}
	return m, nil
}

// boolCount is 1 for true, 0 for false.
func boolCount(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// waitVersionMoved waits until the cluster's current resource version (a
// consistent list of one pod) has moved past the one read first, as
// kube-apiserver's own Lease renewals move it every few seconds.
func waitVersionMoved(ctx context.Context, client kubernetes.Interface) error {
	first, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		time.Sleep(500 * time.Millisecond)
		now, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if now.ResourceVersion != first.ResourceVersion {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster's resource version stayed at %s for a minute", first.ResourceVersion)
		}
	}
}

// countDifferences returns how many keys of want and got have different
// values or are in one only.
func countDifferences(want, got map[string]string) int {
	n := 0
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			n++
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			n++
		}
	}
	return n
}

// e4Write is a writer's last write: the pod's namespace/name and its new
// resource version, or why writing failed.
type e4Write struct {
	key, rv string
	err     error
}

// e4Writer changes pods' annotation kubetyped.io/e4 through the API.
type e4Writer struct {
	client *kubernetes.Clientset
	keys   []string // namespace/name of every pod
	mu     sync.Mutex
	n      int // changes made, so that each has a value of its own
}

// change sets the annotation of the pod key to a new value and returns its
// new resource version.
func (w *e4Writer) change(ctx context.Context, key string) (string, error) {
	w.mu.Lock()
	w.n++
	value := strconv.Itoa(w.n)
	w.mu.Unlock()
	ns, name, _ := strings.Cut(key, "/")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"kubetyped.io/e4":%q}}}`, value)
	pod, err := w.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("changing pod %s: %w", key, err)
	}
	return pod.ResourceVersion, nil
}

// changeShare changes 1% of the pods (every hundredth, from an offset of
// round so that rounds change different pods), seedWriters at a time.
func (w *e4Writer) changeShare(ctx context.Context, round int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWriters)
	for i := round % 100; i < len(w.keys); i += 100 {
		g.Go(func() error {
			_, err := w.change(gctx, w.keys[i])
			return err
		})
	}
	return g.Wait()
}

// tick changes one pod every e4TickInterval until ctx ends, then sends its
// last write (making one if it made none) and closes the channel.
func (w *e4Writer) tick(ctx context.Context) <-chan e4Write {
	done := make(chan e4Write, 1)
	go func() {
		defer close(done)
		var last e4Write
		t := time.NewTicker(e4TickInterval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				if last.key == "" {
					// Not under ctx: it has ended.
					key := w.keys[0]
					rv, err := w.change(context.WithoutCancel(ctx), key)
					last = e4Write{key: key, rv: rv, err: err}
				}
				done <- last
				return
			case <-t.C:
			}
			// A write is not cancelled midway: one the server applied
			// must be known as the last, or the child would be asked for
			// an older version than the LIST shows.
			key := w.keys[(i*7919)%len(w.keys)]
			rv, err := w.change(context.WithoutCancel(ctx), key)
			if err != nil {
				done <- e4Write{err: err}
				return
			}
			last = e4Write{key: key, rv: rv}
		}
	}()
	return done
}

// current sends a pod's namespace/name and its current resource version
// (a consistent GET), writing nothing (the quiet case), and closes the
// channel.
func (w *e4Writer) current(ctx context.Context) <-chan e4Write {
	done := make(chan e4Write, 1)
	go func() {
		defer close(done)
		ns, name, _ := strings.Cut(w.keys[0], "/")
		pod, err := w.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			done <- e4Write{err: err}
			return
		}
		done <- e4Write{key: w.keys[0], rv: pod.ResourceVersion}
	}()
	return done
}

// podKeys returns the namespace/name of every pod.
func podKeys(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	versions, err := listVersions(ctx, client)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(versions))
	for k := range versions {
		keys = append(keys, k)
	}
	return keys, nil
}

// listVersions lists every pod with a consistent read and returns their
// resource versions by namespace/name.
func listVersions(ctx context.Context, client kubernetes.Interface) (map[string]string, error) {
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	m := make(map[string]string, len(list.Items))
	for i := range list.Items {
		m[list.Items[i].Namespace+"/"+list.Items[i].Name] = list.Items[i].ResourceVersion
	}
	return m, nil
}

// compact makes the history a snapshot needs unavailable: it compacts etcd
// at the current revision (through etcd's JSON gateway, physically) and
// restarts kube-apiserver, whose watch cache would otherwise still serve a
// watch from before the compaction.
func compact(ctx context.Context, c *cluster.Cluster, client kubernetes.Interface) error {
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("reading the current resource version: %w", err)
	}
	body := fmt.Sprintf(`{"revision":%q,"physical":true}`, list.ResourceVersion)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.EtcdURL()+"/v3/kv/compaction", strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("compacting etcd: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("compacting etcd at revision %s: %s: %s", list.ResourceVersion, resp.Status, msg)
	}
	restartCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := c.RestartAPIServer(restartCtx); err != nil {
		return fmt.Errorf("restarting kube-apiserver after compacting: %w", err)
	}
	return nil
}

// processCPU returns the user and system CPU seconds process pid has used,
// from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s, the
// value of USER_HZ on Linux).
func processCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name in %q", pid, raw)
	}
	fields := strings.Fields(string(raw[end+1:]))
	// fields[0] is field 3 (state): utime, field 14, is fields[11].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime: %w", pid, err)
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: stime: %w", pid, err)
	}
	return (utime + stime) / 100, nil
}

// clearDir removes everything in dir, keeping dir.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(dir + "/" + e.Name()); err != nil {
			return err
		}
	}
	return nil
}
