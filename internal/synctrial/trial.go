// Package synctrial runs one trial of E7 (shared/benchmarks.md): one
// implementation's pod informer syncs from a server in a process of its
// own, then, if asked, relists once, and the process reports what it cost
// (CPU, wall time, peak resident set, peak and retained heap). bench's
// replay rows and e2e/cmd/realbench's real-server rows run their trials
// through it, each trial a child process (RunChild), optionally under a
// memory cgroup's limit.
package synctrial

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/replayserver"
)

// Spec is what a trial runs.
type Spec struct {
	// Impl names the implementation: ImplClientGo, ImplOurs, or one a
	// program registered (Register).
	Impl string `json:"impl"`
	// Kubeconfig is the path of the server's kubeconfig; if empty, Host is
	// the server's address (a replay cluster's URL).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Host       string `json:"host,omitempty"`
	// Pods is the number of pods the server holds.
	Pods int `json:"pods"`
	// DropManagedFields drops managed fields: by a transform for client-go
	// (the best it can), by DropFields for ours.
	DropManagedFields bool `json:"dropManagedFields,omitempty"`
	// Deduplicate sets ours' InformerOptions.Deduplicate.
	Deduplicate bool `json:"deduplicate,omitempty"`
	// Relist, if not RelistNone, makes the informer list again once synced,
	// and the trial measures that relist too.
	Relist Relist `json:"relist,omitempty"`
	// Profile, if set, is the path prefix of a CPU profile of the sync, a
	// heap profile taken once synced, and heap profiles before and after
	// the relist.
	Profile string `json:"profile,omitempty"`
	// Cgroup, if set, is the directory of the memory cgroup the process
	// joins first (benchkit.MemoryCgroup.Dir).
	Cgroup string `json:"cgroup,omitempty"`
	// Timeout bounds the sync and the relist each (default 30 minutes).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Relist says how a trial makes its informer relist.
type Relist string

const (
	// RelistNone: no relist.
	RelistNone Relist = ""
	// RelistReplay expires the replay cluster at Host
	// (replayserver.Cluster.Expire): the server ends the watch and answers
	// its resumption with "410 Gone".
	RelistReplay Relist = "replay"
	// RelistInject makes the client's own transport end the watch and
	// answer its resumption with "410 Gone" (GoneInjector), for a real
	// server, which cannot be told to: the relist itself is served by the
	// server.
	RelistInject Relist = "inject"
)

// Result is what a trial measured.
type Result struct {
	// CPUSeconds is the CPU time (user and system, getrusage) the process
	// used from the informer's creation until synced; WallSeconds the time.
	CPUSeconds  float64 `json:"cpuSeconds"`
	WallSeconds float64 `json:"wallSeconds"`
	// PeakRSS is the process's peak resident set (VmHWM) until synced:
	// what a container's memory limit sees of it.
	PeakRSS uint64 `json:"peakRSS"`
	// PeakHeap is the largest heap sampled every millisecond until synced,
	// PeakGCCycles the GC cycles completed meanwhile (with none, PeakHeap
	// is bytes allocated, not a peak).
	PeakHeap     uint64 `json:"peakHeap"`
	PeakGCCycles uint64 `json:"peakGCCycles"`
	// RetainedHeap is the live heap after two collections once synced;
	// BaselineHeap the live heap before the informer was created.
	RetainedHeap uint64 `json:"retainedHeap"`
	BaselineHeap uint64 `json:"baselineHeap"`
	// SteadyRSS is the resident set once synced, after the collections and
	// after returning freed memory to the system (debug.FreeOSMemory).
	SteadyRSS uint64 `json:"steadyRSS"`
	// The relist's figures, when Spec.Relist asked for one: its CPU and
	// wall time until every pod was listed again, the peak resident set
	// during it (VmHWM reset at its start) and its peak heap (as PeakHeap).
	RelistCPUSeconds  float64 `json:"relistCPUSeconds,omitempty"`
	RelistWallSeconds float64 `json:"relistWallSeconds,omitempty"`
	RelistPeakRSS     uint64  `json:"relistPeakRSS,omitempty"`
	RelistPeakHeap    uint64  `json:"relistPeakHeap,omitempty"`
	RelistGCCycles    uint64  `json:"relistGCCycles,omitempty"`
	// GoMemLimit is the runtime's memory limit during the trial
	// (math.MaxInt64: none).
	GoMemLimit int64 `json:"goMemLimit"`
}

// Counters are what a started informer's handler counts.
type Counters struct {
	Adds, Updates atomic.Int64
}

// StartFunc starts an informer of pods over config as spec says, counting
// its handler's adds and updates in counters, and returns its HasSynced.
// ctx ends it.
type StartFunc func(ctx context.Context, config *rest.Config, spec Spec, counters *Counters) (hasSynced func() bool, err error)

// implementations are the StartFuncs by Spec.Impl.
var implementations = map[string]StartFunc{
	ImplClientGo: startClientGo,
	ImplOurs:     startOurs,
}

// Register adds an implementation (controller-runtime's cache and crcache,
// from the e2e module that may depend on controller-runtime). It is called
// before RunIfChild, in both parent and child.
func Register(impl string, start StartFunc) { implementations[impl] = start }

// run is the child's trial.
func run(spec Spec) (Result, error) {
	start, ok := implementations[spec.Impl]
	if !ok {
		return Result{}, fmt.Errorf("unknown implementation %q", spec.Impl)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 30 * time.Minute
	}
	config, err := restConfig(spec)
	if err != nil {
		return Result{}, err
	}
	var trigger func(context.Context) error
	switch spec.Relist {
	case RelistNone:
	case RelistReplay:
		cluster := replayserver.Cluster{URL: spec.Host}
		trigger = func(ctx context.Context) error { _, err := cluster.Expire(ctx); return err }
	case RelistInject:
		injector := InjectGone(config)
		trigger = func(context.Context) error { injector.Trigger(); return nil }
	default:
		return Result{}, fmt.Errorf("unknown relist %q", spec.Relist)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	runtime.GC()
	res := Result{BaselineHeap: benchkit.ReadHeapObjects(), GoMemLimit: debug.SetMemoryLimit(-1)}
	var stopProfile func() error
	if spec.Profile != "" {
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
	var counters Counters
	hasSynced, err := start(ctx, config, spec, &counters)
	if err != nil {
		return Result{}, err
	}
	if err := benchkit.WaitUntil(spec.Timeout, func() bool { return counters.Adds.Load() >= int64(spec.Pods) && hasSynced() }); err != nil {
		return Result{}, fmt.Errorf("%s: %d of %d adds: %w", spec.Impl, counters.Adds.Load(), spec.Pods, err)
	}
	res.WallSeconds = time.Since(began).Seconds()
	cpu1, err := benchkit.CPUTime()
	if err != nil {
		return Result{}, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.PeakHeap, res.PeakGCCycles = sampler.Stop(), sampler.GCCycles()
	mem, err := benchkit.ReadProcessMemory(0)
	if err != nil {
		return Result{}, err
	}
	res.PeakRSS = mem.PeakRSS
	if stopProfile != nil {
		if err := stopProfile(); err != nil {
			return Result{}, err
		}
		if err := benchkit.WriteHeapProfile(spec.Profile + ".heap.pprof"); err != nil {
			return Result{}, err
		}
	}
	runtime.GC()
	runtime.GC()
	res.RetainedHeap = benchkit.ReadHeapObjects()
	debug.FreeOSMemory()
	if mem, err = benchkit.ReadProcessMemory(0); err != nil {
		return Result{}, err
	}
	res.SteadyRSS = mem.RSS
	if trigger == nil {
		return res, nil
	}

	if spec.Profile != "" {
		// The allocations of the relist are the difference between this
		// profile and the next (go tool pprof -base).
		if err := benchkit.WriteHeapProfile(spec.Profile + ".relist-base.heap.pprof"); err != nil {
			return Result{}, err
		}
	}
	if err := benchkit.ResetPeakRSS(); err != nil {
		return Result{}, err
	}
	updates := counters.Updates.Load()
	cpu2, err := benchkit.CPUTime()
	if err != nil {
		return Result{}, err
	}
	sampler = benchkit.StartHeapSampler(time.Millisecond)
	began = time.Now()
	if err := trigger(ctx); err != nil {
		return Result{}, fmt.Errorf("making the informer relist: %w", err)
	}
	if err := benchkit.WaitUntil(spec.Timeout, func() bool { return counters.Updates.Load()-updates >= int64(spec.Pods) }); err != nil {
		return Result{}, fmt.Errorf("%s relist: %d of %d updates: %w", spec.Impl, counters.Updates.Load()-updates, spec.Pods, err)
	}
	res.RelistWallSeconds = time.Since(began).Seconds()
	cpu3, err := benchkit.CPUTime()
	if err != nil {
		return Result{}, err
	}
	res.RelistCPUSeconds = (cpu3 - cpu2).Seconds()
	res.RelistPeakHeap, res.RelistGCCycles = sampler.Stop(), sampler.GCCycles()
	if mem, err = benchkit.ReadProcessMemory(0); err != nil {
		return Result{}, err
	}
	res.RelistPeakRSS = mem.PeakRSS
	if spec.Profile != "" {
		runtime.GC()
		if err := benchkit.WriteHeapProfile(spec.Profile + ".relist.heap.pprof"); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// restConfig returns the client configuration spec names.
func restConfig(spec Spec) (*rest.Config, error) {
	if spec.Kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", spec.Kubeconfig)
	}
	if spec.Host == "" {
		return nil, fmt.Errorf("a trial needs a kubeconfig or a host")
	}
	return replayserver.Cluster{URL: spec.Host}.Config(), nil
}
