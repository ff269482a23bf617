package main

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubetyped/informer/crcache"
	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/synctrial"
)

// The caches compared by "E1 through crcache" and E5, as -impl names them.
const (
	implControllerRuntime = "controller-runtime"
	implCRCache           = "crcache"
)

// startCache builds a cache with newCache and default options (scheme
// aside), gets its informer for obj's kind with a handler calling onAdd
// and onUpdate, as a controller's source does, starts the cache and
// returns the informer's HasSynced.
func startCache(ctx context.Context, config *rest.Config, newCache cache.NewCacheFunc, scheme *runtime.Scheme, obj client.Object, onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	c, err := newCache(config, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(handlerFuncs(onAdd, onUpdate)); err != nil {
		return nil, err
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			logf("%T: Start: %v", c, err)
		}
	}()
	return inf.HasSynced, nil
}

// cacheConstructor returns the constructor of a cache implementation.
func cacheConstructor(impl string) (cache.NewCacheFunc, error) {
	switch impl {
	case implControllerRuntime:
		return cache.New, nil
	case implCRCache:
		return crcache.New, nil
	}
	return nil, fmt.Errorf("unknown cache %q", impl)
}

// isCache reports whether impl is one of the caches.
func isCache(impl string) bool {
	return impl == implControllerRuntime || impl == implCRCache
}

// runE1CRCache is "E1 through crcache": the pods of E1 synced by
// controller-runtime's cache and by crcache, default settings on both
// (crcache's default shares sub-objects, as its reads deep-copy), each
// in its own process, interleaved as E1.
func runE1CRCache(ctx context.Context, cfg config, kubeconfig string) ([]benchkit.Row, error) {
	name := strconv.Itoa(cfg.pods) + " pods, same data, default settings"
	base := childSpec{Kubeconfig: kubeconfig, Pods: cfg.pods}
	children := []childSpec{base, base}
	children[0].Impl, children[1].Impl = implControllerRuntime, implCRCache
	results, err := syncRuns(ctx, cfg, "E1 through crcache, "+name, children)
	if err != nil {
		return nil, err
	}
	return syncRows("E1 through crcache", name, "pod", cfg.pods, results[0], results[1]), nil
}

// podObject is the object whose informer E1's caches sync.
func podObject() client.Object { return &corev1.Pod{} }

// cacheTrial is impl's cache as an E7 trial's implementation
// (synctrial.Register): its pod informer, with default options.
func cacheTrial(impl string) synctrial.StartFunc {
	return func(ctx context.Context, config *rest.Config, _ synctrial.Spec, counters *synctrial.Counters) (func() bool, error) {
		// Without a logger controller-runtime prints a stack trace of its
		// first log call ("log.SetLogger(...) was never called") into the
		// run's log; klog's is where client-go's lines go.
		ctrllog.SetLogger(klog.Background())
		newCache, err := cacheConstructor(impl)
		if err != nil {
			return nil, err
		}
		return startCache(ctx, config, newCache, nil, podObject(), func() { counters.Adds.Add(1) }, func(string) { counters.Updates.Add(1) })
	}
}
