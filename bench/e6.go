package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/fleettrial"
	"github.com/kubetyped/informer/internal/replayserver"
)

// E6 (a) and (c) (shared/benchmarks.md; issue 34): pods of many clusters
// served by a replay server (internal/replayserver) in a process of its
// own, one listener per cluster, half of each cluster's pods from the
// fleet's common Deployments; each side a trial in a process of its own
// (internal/fleettrial): ours one informer.Fleet over every cluster,
// client-go a protobuf clientset and a SharedInformerFactory pod informer
// per cluster, all in one process, as multi-cluster controllers build it.
//
//   - (a) scale, side by side at e6Config.clusters × pods, in four
//     configurations (default; the same against ours with Deduplicate;
//     managed fields dropped, client-go by a transform and ours by
//     DropFields; the same against ours with Deduplicate too), client-go
//     and ours interleaved, count times, the
//     medians reported: until every cluster synced, then a writer changing
//     1% of the pods (spread over the clusters, paced) with its events'
//     latency, then a fleet-wide label query selecting about 1% of the
//     fleet's pods, whose answers must have the same count on both sides;
//   - (c) the edge fleet: edgeClusters clusters of each of edgePods pods,
//     default configuration, for what a cluster costs by itself (heap and
//     goroutines);
//   - with -e6large, instead: ours alone at largeClusters × largePods with
//     Deduplicate and DropFields, keeping snapshots, then a warm restart
//     of every cluster from them in a new process, within the server's
//     watch window (1% of the pods changed while it was down); and at
//     quick size, a small warm restart beside (a) and (c).

// e6Config is E6's part of a run's configuration.
type e6Config struct {
	// clusters × pods is (a)'s side-by-side size (0: none).
	clusters, pods int
	// edgeClusters is (c)'s cluster count, edgePods its sizes (none if
	// empty).
	edgeClusters int
	edgePods     []int
	// large runs ours alone at largeClusters × largePods and its warm
	// restart, instead of (a) and (c).
	large                     bool
	largeClusters, largePods  int
	restartClusters, restartP int // a warm restart beside (a) and (c) (0: none)
	// profileDir, if set, gets each trial's CPU and heap profiles.
	profileDir string
	// memLimit, if set, is the GOMEMLIMIT of ours' trials of the warm
	// restart case (e6Restart): what an operator sets to bound the peak of
	// a start at the cost of collections (docs/fleet.md).
	memLimit string
}

// e6Selector selects the replicas of the first fleet-common Deployment
// (prodpods' Deployment 0, ten replicas in every cluster): 1% of the
// fleet's pods at 1,000 pods a cluster.
const e6Selector = "app=checkout-api-0"

// e6Common is the fraction of each cluster's pods from fleet-common
// templates.
const e6Common = 0.5

// e6Pair is one configuration of (a): client-go's trial and ours'.
type e6Pair struct {
	name           string
	clientGo, ours fleettrial.Spec
}

var e6Pairs = []e6Pair{
	{"default configuration (everything kept)",
		fleettrial.Spec{Impl: fleettrial.ImplClientGo}, fleettrial.Spec{Impl: fleettrial.ImplOurs}},
	{"everything kept, ours with Deduplicate",
		fleettrial.Spec{Impl: fleettrial.ImplClientGo}, fleettrial.Spec{Impl: fleettrial.ImplOurs, Deduplicate: true}},
	{"managed fields dropped (client-go: a transform; ours: DropFields)",
		fleettrial.Spec{Impl: fleettrial.ImplClientGo, DropManagedFields: true}, fleettrial.Spec{Impl: fleettrial.ImplOurs, DropManagedFields: true}},
	{"client-go: managed fields stripped by a transform; ours: DropFields and Deduplicate",
		fleettrial.Spec{Impl: fleettrial.ImplClientGo, DropManagedFields: true}, fleettrial.Spec{Impl: fleettrial.ImplOurs, DropManagedFields: true, Deduplicate: true}},
}

// e6Lean is ours' configuration of the large case and the warm restarts.
var e6Lean = fleettrial.Spec{Impl: fleettrial.ImplOurs, DropManagedFields: true, Deduplicate: true}

// runE6 runs E6 (a) and (c), or with -e6large the large case.
func runE6(cfg config) ([]benchkit.Row, error) {
	ctx := context.Background()
	e6 := cfg.e6
	if e6.large {
		return e6Restart(ctx, e6, e6.largeClusters, e6.largePods, true)
	}
	var rows []benchkit.Row
	// perPod is client-go's and ours' retained heap per pod in the default
	// configuration, for (c)'s pods' share.
	var perPod [2]float64
	if e6.clusters > 0 {
		rs, pp, err := e6Scale(ctx, e6, cfg.count)
		if err != nil {
			return nil, err
		}
		rows, perPod = append(rows, rs...), pp
	}
	for _, pods := range e6.edgePods {
		rs, err := e6Edge(ctx, e6, pods, cfg.count, perPod)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	if e6.restartClusters > 0 {
		rs, err := e6Restart(ctx, e6, e6.restartClusters, e6.restartP, false)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// e6Server starts a replay server process of clusters × pods.
func e6Server(ctx context.Context, clusters, pods int) (*replayserver.Process, []string, error) {
	start := time.Now()
	server, err := replayserver.StartProcess(ctx, replayserver.Options{Clusters: clusters, Pods: pods, Common: e6Common})
	if err != nil {
		return nil, nil, err
	}
	mem, _ := benchkit.ReadProcessMemory(server.PID())
	progress("E6: replay server of %d clusters × %d pods ready in %v, resident %s", clusters, pods, time.Since(start).Round(100*time.Millisecond), mib(mem.RSS))
	urls := make([]string, len(server.Clusters()))
	for i, c := range server.Clusters() {
		urls[i] = c.URL
	}
	return server, urls, nil
}

// e6Trial runs spec against the clusters at urls and logs what it saw.
func e6Trial(ctx context.Context, e6 e6Config, label string, spec fleettrial.Spec, urls []string, pods int, env ...string) (fleettrial.Result, error) {
	spec.Clusters, spec.Pods = urls, pods
	if e6.profileDir != "" {
		spec.Profile = filepath.Join(e6.profileDir, fmt.Sprintf("e6-%dx%d-%s-%d", len(urls), pods, spec.Impl, time.Now().UnixNano()))
	}
	res, err := fleettrial.RunChild(ctx, spec, env...)
	if err != nil {
		return res, fmt.Errorf("%s: %w", label, err)
	}
	progress("E6: %s: synced in %.1f s (%.1f CPU s), peak heap %s (%d GC), retained %s, %d goroutines; writes %d, p50 %v p99 %v; query %d hits, %v (first %v); failed clusters %d; snapshots %+v, stop %.1f s",
		label, res.WallSeconds, res.CPUSeconds, mib(res.PeakHeap), res.PeakGCCycles, mib(res.RetainedHeap-res.BaselineHeap), res.Goroutines-res.BaselineGoroutines,
		res.Latency.Events, time.Duration(res.Latency.P50), time.Duration(res.Latency.P99),
		res.Query.Hits, time.Duration(res.Query.MedianNanos), time.Duration(res.Query.FirstNanos), res.FailedClusters, res.Snapshots, res.StopSeconds)
	return res, nil
}

// e6Scale runs (a): each configuration's trials, client-go's and ours
// interleaved, count times; it returns the rows and the default
// configuration's retained heap per pod, client-go's and ours.
func e6Scale(ctx context.Context, e6 e6Config, count int) ([]benchkit.Row, [2]float64, error) {
	n, p := e6.clusters, e6.pods
	server, urls, err := e6Server(ctx, n, p)
	if err != nil {
		return nil, [2]float64{}, err
	}
	defer server.Close()
	writes := max(n*p/100, 1)
	results := make([][2][]fleettrial.Result, len(e6Pairs))
	for round := range count {
		for i, pair := range e6Pairs {
			for side, spec := range []fleettrial.Spec{pair.clientGo, pair.ours} {
				spec.Writes, spec.Selector = writes, e6Selector
				label := fmt.Sprintf("%d×%d, %s, %s, round %d", n, p, pair.name, spec.Impl, round+1)
				res, err := e6Trial(ctx, e6, label, spec, urls, p)
				if err != nil {
					return nil, [2]float64{}, err
				}
				results[i][side] = append(results[i][side], res)
			}
			cg, ours := results[i][0][round], results[i][1][round]
			if cg.Query.Hits != ours.Query.Hits || ours.Query.Hits == 0 {
				return nil, [2]float64{}, fmt.Errorf("%d×%d, %s: the fleet-wide query %q found %d pods in client-go's caches and %d in ours", n, p, pair.name, e6Selector, cg.Query.Hits, ours.Query.Hits)
			}
		}
	}
	pods := float64(n * p)
	var rows []benchkit.Row
	var perPod [2]float64
	for i, pair := range e6Pairs {
		cg, ours := results[i][0], results[i][1]
		kase := fmt.Sprintf("%d clusters × %d pods (%.0f%% fleet-common), %s", n, p, 100*e6Common, pair.name)
		metric := func(label string, f func(fleettrial.Result) float64) benchkit.Row {
			return newRow("E6", kase, label, benchkit.MedianOf(cg, f), benchkit.MedianOf(ours, f))
		}
		retained := func(r fleettrial.Result) float64 { return float64(r.RetainedHeap-r.BaselineHeap) / pods }
		hits := ours[0].Query.Hits
		rows = append(rows,
			metric("CPU s until all clusters synced", func(r fleettrial.Result) float64 { return r.CPUSeconds }),
			metric("wall s until all clusters synced", func(r fleettrial.Result) float64 { return r.WallSeconds }),
			metric("peak heap MiB until all synced (sampled)", func(r fleettrial.Result) float64 { return mibf(r.PeakHeap) }),
			withoutRatio(metric("GC cycles completed during the sync (the peak spans them)", func(r fleettrial.Result) float64 { return float64(r.PeakGCCycles) })),
			metric("retained heap B/pod once synced (2 GCs, minus baseline)", retained),
			metric("retained heap B/pod after the writes and queries (ours: label index on app built)", func(r fleettrial.Result) float64 { return float64(r.QueriedHeap-r.BaselineHeap) / pods }),
			metric("goroutines per cluster once synced", func(r fleettrial.Result) float64 {
				return float64(r.Goroutines-r.BaselineGoroutines) / float64(n)
			}),
			metric(fmt.Sprintf("event latency p50 ms (%d writes, write request to handler)", writes), func(r fleettrial.Result) float64 { return float64(r.Latency.P50) / 1e6 }),
			metric(fmt.Sprintf("event latency p99 ms (%d writes, write request to handler)", writes), func(r fleettrial.Result) float64 { return float64(r.Latency.P99) / 1e6 }),
			metric(fmt.Sprintf("fleet-wide query %s µs/query, median (%d hits, %.2f%% of the fleet; equal on both sides)", e6Selector, hits, 100*float64(hits)/pods),
				func(r fleettrial.Result) float64 { return float64(r.Query.MedianNanos) / 1e3 }),
			metric("first fleet-wide query µs (ours indexes the label key then)", func(r fleettrial.Result) float64 { return float64(r.Query.FirstNanos) / 1e3 }),
		)
		if i == 0 {
			perPod = [2]float64{benchkit.MedianOf(cg, retained), benchkit.MedianOf(ours, retained)}
		}
	}
	return rows, perPod, nil
}

// e6Edge runs (c) at pods a cluster: client-go's trial and ours, count
// times, default configuration. perPod is (a)'s retained heap per pod in
// the default configuration (0 if (a) did not run), whose share is taken
// off the heap per cluster to give the fixed part.
func e6Edge(ctx context.Context, e6 e6Config, pods, count int, perPod [2]float64) ([]benchkit.Row, error) {
	n := e6.edgeClusters
	server, urls, err := e6Server(ctx, n, pods)
	if err != nil {
		return nil, err
	}
	defer server.Close()
	specs := e6Pairs[0]
	var results [2][]fleettrial.Result
	for round := range count {
		for side, spec := range []fleettrial.Spec{specs.clientGo, specs.ours} {
			label := fmt.Sprintf("edge %d×%d, %s, round %d", n, pods, spec.Impl, round+1)
			res, err := e6Trial(ctx, e6, label, spec, urls, pods)
			if err != nil {
				return nil, err
			}
			results[side] = append(results[side], res)
		}
	}
	kase := fmt.Sprintf("edge fleet: %d clusters × %d pods, default configuration", n, pods)
	metric := func(label string, f func(fleettrial.Result) float64) benchkit.Row {
		return newRow("E6", kase, label, benchkit.MedianOf(results[0], f), benchkit.MedianOf(results[1], f))
	}
	perCluster := func(r fleettrial.Result) float64 { return float64(r.RetainedHeap-r.BaselineHeap) / float64(n) }
	rows := []benchkit.Row{
		metric("CPU s until all clusters synced", func(r fleettrial.Result) float64 { return r.CPUSeconds }),
		metric("wall s until all clusters synced", func(r fleettrial.Result) float64 { return r.WallSeconds }),
		metric("peak heap MiB until all clusters synced (sampled)", func(r fleettrial.Result) float64 { return mibf(r.PeakHeap) }),
	}
	if pods == 0 {
		rows = append(rows, metric("fixed heap B/cluster (retained minus baseline, ÷ clusters)", perCluster))
	} else {
		rows = append(rows, metric(fmt.Sprintf("heap B/cluster, its %d pods included (retained minus baseline, ÷ clusters)", pods), perCluster))
		if perPod[0] > 0 && perPod[1] > 0 {
			fixed := func(side int) func(fleettrial.Result) float64 {
				return func(r fleettrial.Result) float64 { return perCluster(r) - float64(pods)*perPod[side] }
			}
			rows = append(rows, newRow("E6", kase,
				fmt.Sprintf("fixed heap B/cluster (its %d pods' share at (a)'s default B/pod, %d×%d, taken off)", pods, e6.clusters, e6.pods),
				benchkit.MedianOf(results[0], fixed(0)), benchkit.MedianOf(results[1], fixed(1))))
		}
	}
	rows = append(rows, metric("goroutines per cluster once synced (runtime.NumGoroutine delta ÷ clusters)", func(r fleettrial.Result) float64 {
		return float64(r.Goroutines-r.BaselineGoroutines) / float64(n)
	}))
	return rows, nil
}

// e6Restart runs ours alone at clusters × pods with Deduplicate and
// DropFields, keeping snapshots: a trial that syncs (the writer and the
// query too when large), then stops, saving every cluster's snapshot;
// then 1% of the pods change (spread over the clusters) while no trial
// runs; then a trial in a new process restores every cluster and resumes
// its watch within the server's history. Its rows have no client-go
// figure.
func e6Restart(ctx context.Context, e6 e6Config, n, p int, large bool) ([]benchkit.Row, error) {
	server, urls, err := e6Server(ctx, n, p)
	if err != nil {
		return nil, err
	}
	defer server.Close()
	dir, err := os.MkdirTemp("", "e6-snapshots-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pods := float64(n * p)
	writes := max(n*p/100, 1)
	cold := e6Lean
	cold.SnapshotDir = dir
	if large {
		cold.Writes, cold.Selector = writes, e6Selector
	}
	var env []string
	setting := ""
	if e6.memLimit != "" {
		env = []string{"GOMEMLIMIT=" + e6.memLimit}
		setting = ", GOMEMLIMIT=" + e6.memLimit
	}
	first, err := e6Trial(ctx, e6, fmt.Sprintf("%d×%d, ours, DropFields and Deduplicate%s, Snapshot.Dir set, cold", n, p, setting), cold, urls, p, env...)
	if err != nil {
		return nil, err
	}
	if first.Snapshots.Saved != int64(n) {
		return nil, fmt.Errorf("%d×%d: %d snapshots saved on stop, want one per cluster (%d)", n, p, first.Snapshots.Saved, n)
	}
	// While down: 1% of the pods change, spread over the clusters.
	perCluster := max(p/100, 1)
	for _, c := range server.Clusters() {
		if _, err := c.Write(ctx, perCluster); err != nil {
			return nil, err
		}
	}
	before, err := e6ServerStats(ctx, server)
	if err != nil {
		return nil, err
	}
	warm := e6Lean
	warm.SnapshotDir = dir
	second, err := e6Trial(ctx, e6, fmt.Sprintf("%d×%d, ours, DropFields and Deduplicate%s, warm restart", n, p, setting), warm, urls, p, env...)
	if err != nil {
		return nil, err
	}
	after, err := e6ServerStats(ctx, server)
	if err != nil {
		return nil, err
	}
	if second.Snapshots.Restored != int64(n) {
		return nil, fmt.Errorf("%d×%d warm restart: %d clusters restored from their snapshots, want %d (%+v)", n, p, second.Snapshots.Restored, n, second.Snapshots)
	}

	var rows []benchkit.Row
	ours := func(kase, metric string, v float64) {
		rows = append(rows, oursOnly("E6", kase, metric, v))
	}
	kase := fmt.Sprintf("%d clusters × %d pods (%.0f%% fleet-common), ours only, DropFields and Deduplicate%s, Snapshot.Dir set", n, p, 100*e6Common, setting)
	if large {
		retained := float64(first.RetainedHeap - first.BaselineHeap)
		ours(kase, "CPU s until all clusters synced", first.CPUSeconds)
		ours(kase, "wall s until all clusters synced", first.WallSeconds)
		ours(kase, "peak heap MiB until all synced (sampled)", mibf(first.PeakHeap))
		ours(kase, "GC cycles completed during the sync (the peak spans them)", float64(first.PeakGCCycles))
		ours(kase, "retained heap B/pod once synced (2 GCs, minus baseline)", retained/pods)
		ours(kase, "peak heap ÷ retained heap (both with the baseline)", peakOver(first.PeakHeap, first.RetainedHeap))
		ours(kase, "retained heap B/pod after the writes and queries (label index on app built)", float64(first.QueriedHeap-first.BaselineHeap)/pods)
		ours(kase, "goroutines per cluster once synced", float64(first.Goroutines-first.BaselineGoroutines)/float64(n))
		ours(kase, fmt.Sprintf("event latency p50 ms (%d writes, write request to handler)", writes), float64(first.Latency.P50)/1e6)
		ours(kase, fmt.Sprintf("event latency p99 ms (%d writes, write request to handler)", writes), float64(first.Latency.P99)/1e6)
		ours(kase, fmt.Sprintf("fleet-wide query %s ms/query, median (%d hits, %.2f%% of the fleet)", e6Selector, first.Query.Hits, 100*float64(first.Query.Hits)/pods), float64(first.Query.MedianNanos)/1e6)
		ours(kase, "first fleet-wide query ms (indexes the label key)", float64(first.Query.FirstNanos)/1e6)
	}
	ours(kase, "stop s (every cluster's final snapshot saved)", first.StopSeconds)
	ours(kase, "snapshot MiB, all clusters", mibf(uint64(first.Snapshots.SaveBytes)))
	kase = fmt.Sprintf("%d clusters × %d pods, ours only, DropFields and Deduplicate%s, warm restart from snapshots (1%% of pods changed while down, within the watch window)", n, p, setting)
	ours(kase, "wall s until all clusters synced", second.WallSeconds)
	ours(kase, "CPU s until all clusters synced", second.CPUSeconds)
	ours(kase, "peak heap MiB until all synced (sampled)", mibf(second.PeakHeap))
	ours(kase, "clusters restored from their snapshot", float64(second.Snapshots.Restored))
	ours(kase, "clusters that resumed their watch", float64(second.Snapshots.ResumedWatches))
	ours(kase, "clusters that relisted (RestoreRelists)", float64(second.Snapshots.RestoreRelists))
	ours(kase, "lists served (server; each cluster's one-item consistent read included)", float64(after.Lists-before.Lists))
	ours(kase, "list pages served (server)", float64(after.Pages-before.Pages))
	return rows, nil
}

// e6ServerStats sums the server's clusters' counters.
func e6ServerStats(ctx context.Context, server *replayserver.Process) (replayserver.Stats, error) {
	var sum replayserver.Stats
	for _, c := range server.Clusters() {
		s, err := c.Stats(ctx)
		if err != nil {
			return sum, err
		}
		sum.Lists += s.Lists
		sum.Pages += s.Pages
		sum.Watches += s.Watches
		sum.WatchLists += s.WatchLists
		sum.Bytes += s.Bytes
	}
	return sum, nil
}
