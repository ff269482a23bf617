// Package fleettrial runs one trial of E6 (a) and (c) (shared/benchmarks.md):
// one implementation's pod cache over many clusters of a replay server
// (internal/replayserver), in a process of its own, that syncs every
// cluster, then, if asked, has a writer change pods and times the events,
// answers a fleet-wide label query, and stops; the process reports what
// each step cost. Ours is one informer.Fleet over every cluster; client-go
// is what multi-cluster controllers build, a protobuf clientset and a
// SharedInformerFactory pod informer per cluster, all in one process.
// bench's E6 (bench/e6.go) runs its trials through it, each a child
// process (RunChild), as internal/synctrial does E7's.
package fleettrial

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/replayserver"
)

// The implementations, as Spec.Impl names them.
const (
	ImplClientGo = "client-go"
	ImplOurs     = "ours"
)

// Spec is what a trial runs.
type Spec struct {
	// Impl names the implementation: ImplClientGo or ImplOurs.
	Impl string `json:"impl"`
	// Clusters are the replay clusters' URLs (replayserver.Cluster.URL);
	// cluster i is named ClusterName(i).
	Clusters []string `json:"clusters"`
	// Pods is the number of pods each cluster holds.
	Pods int `json:"pods"`
	// DropManagedFields drops managed fields: by a transform for client-go
	// (the best it can), by RESTOptions.DropFields for ours.
	DropManagedFields bool `json:"dropManagedFields,omitempty"`
	// Deduplicate sets ours' InformerOptions.Deduplicate.
	Deduplicate bool `json:"deduplicate,omitempty"`
	// Writes, if positive, is how many pods the writer changes once every
	// cluster has synced, one per request, round-robin over the clusters,
	// at WriteRate requests a second (default 500); each change's latency
	// is timed (Result.Latency).
	Writes    int     `json:"writes,omitempty"`
	WriteRate float64 `json:"writeRate,omitempty"`
	// Selector, if set, is the fleet-wide label query timed after the
	// writes (Result.Query).
	Selector string `json:"selector,omitempty"`
	// SnapshotDir, for ours, is FleetOptions.Informer.Snapshot.Dir: the
	// trial restores from it if it holds snapshots, and stops the fleet at
	// its end, which saves them (Result.Snapshots).
	SnapshotDir string `json:"snapshotDir,omitempty"`
	// Profile, if set, is the path prefix of a CPU profile of the sync and
	// a heap profile once synced (after the retained heap's collections).
	Profile string `json:"profile,omitempty"`
	// Timeout bounds the sync and the wait for the writes' events each
	// (default 30 minutes).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// ClusterName returns the name of cluster i in a trial: in ours' Fleet,
// and in the snapshot directories.
func ClusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }

// Result is what a trial measured.
type Result struct {
	// CPUSeconds is the CPU time (user and system, getrusage) the process
	// used from the first cluster's creation until every cluster had
	// synced and the handlers had received every pod's add; WallSeconds
	// the time.
	CPUSeconds  float64 `json:"cpuSeconds"`
	WallSeconds float64 `json:"wallSeconds"`
	// PeakHeap is the largest heap sampled (every millisecond while it
	// moves) until synced, PeakGCCycles the GC cycles completed meanwhile
	// (with none, PeakHeap is bytes allocated, not a peak).
	PeakHeap     uint64 `json:"peakHeap"`
	PeakGCCycles uint64 `json:"peakGCCycles"`
	// BaselineHeap is the live heap before anything was created,
	// RetainedHeap after two collections once synced, and QueriedHeap
	// after two collections once the writes and queries are done (ours'
	// label index on the selector's key is built by the first query).
	BaselineHeap uint64 `json:"baselineHeap"`
	RetainedHeap uint64 `json:"retainedHeap"`
	QueriedHeap  uint64 `json:"queriedHeap,omitempty"`
	// BaselineGoroutines and Goroutines are runtime.NumGoroutine before
	// anything was created and once synced.
	BaselineGoroutines int `json:"baselineGoroutines"`
	Goroutines         int `json:"goroutines"`
	// Latency is the writes' event latencies, when Spec.Writes asked for
	// them.
	Latency Latency `json:"latency"`
	// Query is the fleet-wide label query's figures, when Spec.Selector
	// named one.
	Query Query `json:"query"`
	// Snapshots are ours' snapshot counters, summed over the clusters, and
	// StopSeconds how long stopping the fleet took (its final saves), when
	// Spec.SnapshotDir is set.
	Snapshots   SnapshotTotals `json:"snapshots"`
	StopSeconds float64        `json:"stopSeconds,omitempty"`
	// FailedClusters counts ours' clusters the fleet marked failed
	// (FleetStats.Failed) once synced; 0 for client-go.
	FailedClusters int `json:"failedClusters,omitempty"`
}

// Latency is the writer's events, each timed from just before the
// writer's request to the replay server that makes the change (the pod
// changes while the server handles it) until a handler is called with the
// new version: the request's trip, the server's watch write, the client's
// read, decode, queue and dispatch.
type Latency struct {
	// Events is the number of changes timed; P50 and P99 their latencies'
	// percentiles, in nanoseconds.
	Events int   `json:"events"`
	P50    int64 `json:"p50"`
	P99    int64 `json:"p99"`
	// WriteSeconds is how long the writer took to make every change.
	WriteSeconds float64 `json:"writeSeconds"`
}

// Query is the fleet-wide label query's figures.
type Query struct {
	// Hits is the number of pods the query found over every cluster.
	Hits int `json:"hits"`
	// FirstNanos is the first query's time (ours indexes the selector's
	// key then); MedianNanos the median of the next Repetitions.
	FirstNanos  int64 `json:"firstNanos"`
	MedianNanos int64 `json:"medianNanos"`
	Repetitions int   `json:"repetitions"`
}

// SnapshotTotals are ours' informer.SnapshotStats summed over the clusters.
type SnapshotTotals struct {
	Saved, SaveBytes, Restored, RestoredObjects, Rejected, ResumedWatches, RestoreRelists int64
}

// side is one implementation's cache over the trial's clusters.
type side interface {
	// hasSynced reports whether every cluster has synced.
	hasSynced() bool
	// list answers selector over every cluster and returns how many pods
	// it found.
	list(selector labels.Selector) int
	// stop stops the cache and waits for it (ours: its final snapshots).
	stop()
	// snapshots returns the snapshot counters (ours only) and the number
	// of failed clusters.
	snapshots() (SnapshotTotals, int)
}

// starters are the implementations by Spec.Impl.
var starters = map[string]func(ctx context.Context, spec Spec, rec *recorder) (side, error){
	ImplClientGo: startClientGo,
	ImplOurs:     startOurs,
}

// run is the child's trial.
func run(spec Spec) (Result, error) {
	start, ok := starters[spec.Impl]
	if !ok {
		return Result{}, fmt.Errorf("unknown implementation %q", spec.Impl)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 30 * time.Minute
	}
	var selector labels.Selector
	if spec.Selector != "" {
		var err error
		if selector, err = labels.Parse(spec.Selector); err != nil {
			return Result{}, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	runtime.GC()
	res := Result{BaselineHeap: benchkit.ReadHeapObjects(), BaselineGoroutines: runtime.NumGoroutine()}
	var stopProfile func() error
	if spec.Profile != "" {
		var err error
		if stopProfile, err = benchkit.StartCPUProfile(spec.Profile + ".cpu.pprof"); err != nil {
			return Result{}, err
		}
	}
	cpu0, err := benchkit.CPUTime()
	if err != nil {
		return Result{}, err
	}
	sampler := benchkit.StartHeapSampler(time.Millisecond)
	began := time.Now()
	rec := newRecorder()
	s, err := start(ctx, spec, rec)
	if err != nil {
		return Result{}, err
	}
	want := int64(len(spec.Clusters)) * int64(spec.Pods)
	if err := benchkit.WaitUntil(spec.Timeout, func() bool { return rec.adds.Load() >= want && s.hasSynced() }); err != nil {
		return Result{}, fmt.Errorf("%s: %d of %d adds: %w", spec.Impl, rec.adds.Load(), want, err)
	}
	res.WallSeconds = time.Since(began).Seconds()
	cpu1, err := benchkit.CPUTime()
	if err != nil {
		return Result{}, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.PeakHeap, res.PeakGCCycles = sampler.Stop(), sampler.GCCycles()
	if stopProfile != nil {
		if err := stopProfile(); err != nil {
			return Result{}, err
		}
	}
	runtime.GC()
	runtime.GC()
	res.RetainedHeap = benchkit.ReadHeapObjects()
	res.Goroutines = runtime.NumGoroutine()
	if spec.Profile != "" {
		// After the collections, the profile's in-use figures are the
		// retained heap (its alloc figures, the whole sync's allocations).
		if err := benchkit.WriteHeapProfile(spec.Profile + ".heap.pprof"); err != nil {
			return Result{}, err
		}
	}

	if spec.Writes > 0 {
		clusters := make([]replayserver.Cluster, len(spec.Clusters))
		for i, u := range spec.Clusters {
			clusters[i] = replayserver.Cluster{URL: u}
		}
		if res.Latency, err = writeAndTime(ctx, clusters, spec.Writes, spec.WriteRate, rec, spec.Timeout); err != nil {
			return Result{}, fmt.Errorf("%s: %w", spec.Impl, err)
		}
	}
	if selector != nil {
		res.Query = timeQuery(s, selector)
	}
	if spec.Writes > 0 || selector != nil {
		runtime.GC()
		runtime.GC()
		res.QueriedHeap = benchkit.ReadHeapObjects()
	}
	_, res.FailedClusters = s.snapshots()
	if spec.SnapshotDir != "" {
		stopped := time.Now()
		s.stop()
		res.StopSeconds = time.Since(stopped).Seconds()
	}
	res.Snapshots, _ = s.snapshots()
	return res, nil
}

// timeQuery times selector's query over every cluster: the first, then
// repetitions for about a second (at least 11, at most 1,001), and
// returns the median.
func timeQuery(s side, selector labels.Selector) Query {
	t := time.Now()
	q := Query{Hits: s.list(selector)}
	q.FirstNanos = time.Since(t).Nanoseconds()
	var times []float64
	for began := time.Now(); len(times) < 11 || (len(times) < 1001 && time.Since(began) < time.Second); {
		t := time.Now()
		if n := s.list(selector); n != q.Hits {
			// The pods' labels never change: a different count is a bug.
			panic(fmt.Sprintf("fleet-wide query found %d pods, then %d", q.Hits, n))
		}
		times = append(times, float64(time.Since(t).Nanoseconds()))
	}
	q.MedianNanos, q.Repetitions = int64(benchkit.Median(times)), len(times)
	return q
}

// percentile returns the p-th percentile (0 to 1) of sorted ds, by the
// nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !slices.IsSorted(ds) {
		ds = slices.Sorted(slices.Values(ds))
	}
	i := int(p*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
