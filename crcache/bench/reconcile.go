package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer/crcache/internal/pods"
	"github.com/kubetyped/informer/internal/benchkit"
)

// sandboxKey is the label agent-sandbox puts on the pods of a sandbox.
const sandboxKey = "agents.x-k8s.io/sandbox-name-hash"

// reconcileWorkers is the number of reconcilers running concurrently, as a
// controller's MaxConcurrentReconciles.
const reconcileWorkers = 8

// runReconcileLoop is shaped like the controller of
// kubernetes-sigs/agent-sandbox#1099: every pod of one namespace carries a
// label naming its sandbox, and each reconcile lists the pods of its
// sandbox by that label (one hit, deep-copied), with 8 workers reconciling
// concurrently. It reports the reconcile p50 and p99 at each size of
// cfg.reconcilePods, over 3 rounds that alternate the caches.
func runReconcileLoop(cfg config) ([]benchkit.Row, error) {
	var rows []benchkit.Row
	for _, n := range cfg.reconcilePods {
		all := make([]corev1.Pod, n)
		for i := range n {
			p := pods.Pod(i, 1)
			p.Namespace = "sandboxes"
			p.Labels[sandboxKey] = fmt.Sprintf("%08x", i)
			all[i] = *p
		}
		server, err := newPodServer(all)
		if err != nil {
			return nil, err
		}
		all = nil
		c, err := startCaches(server)
		if err != nil {
			return nil, err
		}
		var p50, p99 [2][]float64
		for round := range 3 {
			for k := range 2 {
				i := (k + round) % 2
				lat, err := reconcileRound(n, cfg.reconciles, []cache.Cache{c.theirs, c.ours}[i])
				if err != nil {
					c.stop()
					return nil, err
				}
				p50[i] = append(p50[i], float64(lat[len(lat)/2]))
				p99[i] = append(p99[i], float64(lat[len(lat)*99/100]))
			}
		}
		c.stop()
		name := fmt.Sprintf("%dk pods, %d workers", n/1000, reconcileWorkers)
		rows = append(rows,
			newRow("reconcile", name, "p50", p50[0], p50[1]),
			newRow("reconcile", name, "p99", p99[0], p99[1]))
		fmt.Fprintf(os.Stderr, "reconcile %s: p50 controller-runtime %v, crcache %v ns\n", name, p50[0], p50[1])
	}
	return rows, nil
}

// reconcileRound runs reconciles reconciles of sandboxes spread over the n
// pods on c and returns their latencies, sorted.
func reconcileRound(n, reconciles int, c cache.Cache) ([]time.Duration, error) {
	ctx := context.Background()
	lat := make([]time.Duration, reconciles)
	errs := make([]error, reconcileWorkers)
	var wg sync.WaitGroup
	for w := range reconcileWorkers {
		wg.Go(func() {
			for k := w; k < reconciles; k += reconcileWorkers {
				sandbox := fmt.Sprintf("%08x", (k*7919)%n)
				start := time.Now()
				var l corev1.PodList
				err := c.List(ctx, &l, client.InNamespace("sandboxes"), client.MatchingLabels{sandboxKey: sandbox})
				lat[k] = time.Since(start)
				if err == nil && len(l.Items) != 1 {
					err = fmt.Errorf("sandbox %s: %d pods, want 1", sandbox, len(l.Items))
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(lat)
	return lat, nil
}
