package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// The implementations compared, as the -impl flag names them.
const (
	implClientGo = "client-go"
	implOurs     = "ours"
)

// syncResult is what a sync child reports (E1).
type syncResult struct {
	// CPUSeconds is the user and system CPU time the process used from the
	// informer's creation until it synced (getrusage; what the process used
	// before, starting and initializing packages, is the same binary's for
	// both implementations and left out).
	CPUSeconds float64 `json:"cpuSeconds"`
	// WallSeconds is the time from the informer's creation until synced.
	WallSeconds float64 `json:"wallSeconds"`
	// PeakHeap is the largest heap (objects live or not yet swept) sampled
	// every millisecond until synced.
	PeakHeap uint64 `json:"peakHeap"`
	// PeakGCCycles is the number of GC cycles completed while PeakHeap was
	// sampled: with none, PeakHeap would be bytes allocated, not a peak.
	PeakGCCycles uint64 `json:"peakGCCycles"`
	// RetainedHeap is the live heap after two collections once synced,
	// with the informer running.
	RetainedHeap uint64 `json:"retainedHeap"`
	// BaselineHeap is the live heap after a collection before the informer
	// was created: RetainedHeap less BaselineHeap is what the informer keeps.
	BaselineHeap uint64 `json:"baselineHeap"`
}

// watchRecord is a child's notification of an update (E2): the pod's new
// resource version and when the handler received it (Unix nanoseconds: the
// parent's and the children's clocks are the same machine's).
type watchRecord struct {
	RV string `json:"rv"`
	At int64  `json:"at"`
}

// runChild is the child process: mode sync syncs the pods and reports a
// syncResult; mode watch syncs, says "synced", records every update's
// notification until it has seen the resource version the parent then
// writes on stdin, and reports the records.
func runChild(c childSpec) error {
	if c.Mode == "restart" {
		return runRestartChild(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mode, impl, pods := c.Mode, c.Impl, c.Pods
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	if c.Profile != "" {
		// Every 4 KB allocated rather than every 512 KB: the heap's
		// allocation sites must add up for a cache of a few MB.
		runtime.MemProfileRate = 4096
	}
	runtime.GC()
	baseline := benchkit.ReadHeapObjects()
	var profile *syncProfile
	if c.Profile != "" {
		if profile, err = startSyncProfile(c.Profile); err != nil {
			return err
		}
	}
	before, err := benchkit.CPUTime()
	if err != nil {
		return err
	}
	sampler := benchkit.StartHeapSampler(time.Millisecond)
	added := make(chan struct{})
	var addCount int
	var mu sync.Mutex
	records := make([]watchRecord, 0, 1<<14)
	seen := map[string]bool{}
	onAdd := func() {
		// Only the informer's single handler goroutine calls this.
		addCount++
		if addCount == pods {
			close(added)
		}
	}
	onUpdate := func(rv string) {
		at := time.Now().UnixNano()
		mu.Lock()
		records = append(records, watchRecord{RV: rv, At: at})
		seen[rv] = true
		mu.Unlock()
	}
	start := time.Now()
	var hasSynced func() bool
	switch {
	case c.Kind != "":
		hasSynced, err = startKind(ctx, config, c, onAdd, onUpdate)
	default:
		hasSynced, err = startPods(ctx, config, c, onAdd, onUpdate)
	}
	if err != nil {
		return err
	}
	select {
	case <-added:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("%s: fewer than %d adds after 10 minutes", impl, pods)
	}
	for !hasSynced() {
		time.Sleep(100 * time.Microsecond)
	}
	wall := time.Since(start)
	after, err := benchkit.CPUTime()
	if err != nil {
		return err
	}
	peak := sampler.Stop()
	if err := profile.stop(); err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	switch mode {
	case "sync":
		runtime.GC()
		runtime.GC()
		res := syncResult{
			CPUSeconds:   (after - before).Seconds(),
			WallSeconds:  wall.Seconds(),
			PeakHeap:     peak,
			PeakGCCycles: sampler.GCCycles(),
			RetainedHeap: benchkit.ReadHeapObjects(),
			BaselineHeap: baseline,
		}
		return out.Encode(res)
	case "watch":
		fmt.Println("synced")
		in := bufio.NewScanner(os.Stdin)
		if !in.Scan() {
			return fmt.Errorf("no last resource version on stdin: %v", in.Err())
		}
		last := strings.TrimSpace(in.Text())
		deadline := time.Now().Add(5 * time.Minute)
		for {
			mu.Lock()
			done := seen[last]
			mu.Unlock()
			if done {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: no notification of resource version %s after 5 minutes", impl, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		return out.Encode(records)
	default:
		return fmt.Errorf("unknown child mode %q", mode)
	}
}

// startPods starts the pod informer of c.Impl (E1, E2) and returns its
// HasSynced.
func startPods(ctx context.Context, config *rest.Config, c childSpec, onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	switch c.Impl {
	case implClientGo:
		return startClientGo(ctx, config, c.DropManagedFields, onAdd, onUpdate)
	case implOurs:
		return startOurs(ctx, config, c.DropManagedFields, c.Deduplicate, onAdd, onUpdate)
	case implControllerRuntime, implCRCache:
		newCache, err := cacheConstructor(c.Impl)
		if err != nil {
			return nil, err
		}
		return startCache(ctx, config, newCache, nil, podObject(), onAdd, onUpdate)
	}
	return nil, fmt.Errorf("unknown implementation %q", c.Impl)
}

// startClientGo starts and returns the HasSynced of the pod informer of client-go's shared informer
// factory over a protobuf clientset, as a controller would build it.
func startClientGo(ctx context.Context, config *rest.Config, dropManagedFields bool, onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	client, err := clientset(config)
	if err != nil {
		return nil, err
	}
	var opts []informers.SharedInformerOption
	if dropManagedFields {
		opts = append(opts, informers.WithTransform(func(obj any) (any, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { onAdd() },
		UpdateFunc: func(_, newObj any) {
			if pod, ok := newObj.(*corev1.Pod); ok {
				onUpdate(pod.ResourceVersion)
			}
		},
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return inf.HasSynced, nil
}

// startOurs starts and returns the HasSynced of this library's pod informer
// from its factory, with the namespace index client-go's factory gives its
// informers; dropManagedFields drops them with DropFields, deduplicate
// turns Deduplicate on.
func startOurs(ctx context.Context, config *rest.Config, dropManagedFields, deduplicate bool, onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	opts := informer.FactoryOptions{Deduplicate: deduplicate}
	if dropManagedFields {
		// Dropped on the wire, before decoding: the best this library
		// offers (client-go can only strip them after decoding).
		opts.DropFields = []string{informer.ManagedFields}
	}
	factory, err := informer.NewFactory(config, opts)
	if err != nil {
		return nil, err
	}
	inf, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
	})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { onAdd() },
		UpdateFunc: func(_, newObj *corev1.Pod) { onUpdate(newObj.ResourceVersion) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx)
	return inf.HasSynced, nil
}

// syncProfile is a CPU profile running until the informer synced, followed
// by the allocation profile taken then.
type syncProfile struct {
	prefix string
	cpu    *os.File
}

// startSyncProfile starts writing a CPU profile to prefix.cpu.pprof.
func startSyncProfile(prefix string) (*syncProfile, error) {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return &syncProfile{prefix: prefix, cpu: f}, nil
}

// stop ends the CPU profile and writes the allocations made so far to
// prefix.allocs.pprof (writeAllocsProfile). A nil *syncProfile does
// nothing.
func (p *syncProfile) stop() error {
	if p == nil {
		return nil
	}
	pprof.StopCPUProfile()
	if err := p.cpu.Close(); err != nil {
		return err
	}
	f, err := os.Create(p.prefix + ".allocs.pprof")
	if err != nil {
		return err
	}
	if err := writeAllocsProfile(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeAllocsProfile writes the allocation profile to w in pprof's format
// debug (0: gzipped protobuf, 1: text). The profile counts allocations up to
// the last completed GC cycle only, and a sync of a few thousand pods may
// end long after its last one: a collection first makes it count every
// allocation made so far. A second one empties the sync.Pools (a first
// keeps their content as victims), so that the profile's inuse_space is
// the heap the sync child reports as retained, two collections after
// synced. The caller has taken its CPU time and heap figures already, so
// the collections change none of them.
func writeAllocsProfile(w io.Writer, debug int) error {
	runtime.GC()
	runtime.GC()
	return pprof.Lookup("allocs").WriteTo(w, debug)
}
