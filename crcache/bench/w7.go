package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer/crcache/internal/pods"
	"github.com/kubetyped/informer/internal/benchkit"
)

// w7Namespaces is the number of namespaces of W7's pods (pod i is in
// ns-<i%1000>), so that ns-7 holds pods 7, 1007, …: all of app-7.
const w7Namespaces = 1000

// sink keeps the copy floor's lists alive, so that the compiler cannot drop
// the copies.
var sink corev1.PodList

// runW7 is W7: a client.Reader over cfg.w7Pods pods answering List by
// label over all namespaces, List by label in one namespace, and Get, with
// deep copies and with UnsafeDisableDeepCopy. Each List case also measures
// its copy floor: a plain loop that copies the hits (the cached pods
// themselves, found once beforehand) into a new list, the least any cache
// must do per call, so
// that controller-runtime ÷ floor is the largest ratio any cache could
// reach on this machine.
func runW7(cfg config) ([]benchkit.Row, error) {
	n := cfg.w7Pods
	all := make([]corev1.Pod, n)
	wantAll, wantNS := 0, 0
	for i := range n {
		all[i] = *pods.Pod(i, w7Namespaces)
		if i%100 == 7 {
			wantAll++
			if i%w7Namespaces == 7 {
				wantNS++
			}
		}
	}
	getIdx := 7007 % n
	getKey := client.ObjectKey{Namespace: fmt.Sprintf("ns-%d", getIdx%w7Namespaces), Name: fmt.Sprintf("pod-%d", getIdx)}
	server, err := newPodServer(all)
	if err != nil {
		return nil, err
	}
	all = nil
	c, err := startCaches(server)
	if err != nil {
		return nil, err
	}
	defer c.stop()

	ctx := context.Background()
	type readCase struct {
		name string
		hits int
		opts []client.ListOption // nil for Get
	}
	cases := []readCase{
		{"List app=app-7, all namespaces", wantAll, []client.ListOption{client.MatchingLabels{"app": "app-7"}}},
		{"List app=app-7, namespace ns-7", wantNS, []client.ListOption{client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"}}},
		{"Get " + getKey.String(), 1, nil},
	}
	var rows []benchkit.Row
	for _, unsafe := range []bool{false, true} {
		copyNote := "deep copy"
		if unsafe {
			copyNote = "UnsafeDisableDeepCopy"
		}
		for _, rc := range cases {
			read := func(cc cache.Cache) (int, error) {
				if rc.opts == nil {
					var p corev1.Pod
					var opts []client.GetOption
					if unsafe {
						opts = append(opts, client.UnsafeDisableDeepCopy)
					}
					return 1, cc.Get(ctx, getKey, &p, opts...)
				}
				opts := rc.opts
				if unsafe {
					opts = append(slices.Clone(opts), client.UnsafeDisableDeepCopy)
				}
				var l corev1.PodList
				err := cc.List(ctx, &l, opts...)
				return len(l.Items), err
			}
			check := func(name string, cc cache.Cache) func() error {
				return func() error {
					got, err := read(cc)
					if err == nil && got != rc.hits {
						err = fmt.Errorf("%d hits, want %d", got, rc.hits)
					}
					if err != nil {
						return fmt.Errorf("%s: %s: %w", rc.name, name, err)
					}
					return nil
				}
			}
			ops := []func() error{check("controller-runtime", c.theirs), check("crcache", c.ours)}
			if rc.opts != nil {
				hits, err := cachedHits(ctx, c.ours, rc.opts)
				if err != nil {
					return nil, err
				}
				if len(hits) != rc.hits {
					return nil, fmt.Errorf("%s: copy floor: %d hits, want %d", rc.name, len(hits), rc.hits)
				}
				ops = append(ops, copyFloor(hits, !unsafe))
			}
			results := make([][]opStats, len(ops))
			for round := range cfg.rounds {
				// Which side goes first rotates, so that none always
				// inherits the others' garbage-collector debt.
				for k := range ops {
					i := (k + round) % len(ops)
					s, err := measureOp(ops[i], cfg.opTime)
					if err != nil {
						return nil, err
					}
					results[i] = append(results[i], s)
				}
			}
			name := rc.name + ", " + copyNote
			metrics := []struct {
				name string
				of   func(opStats) float64
			}{
				{"ns/op", func(s opStats) float64 { return s.nsPerOp }},
				{"CPU ns/op", func(s opStats) float64 { return s.cpuNsPerOp }},
				{"allocs/op", func(s opStats) float64 { return s.allocsPerOp }},
				{"B/op", func(s opStats) float64 { return s.bytesPerOp }},
			}
			for _, m := range metrics {
				rows = append(rows, newRow("W7", name, m.name, field(results[0], m.of), field(results[1], m.of)))
			}
			if len(ops) == 3 {
				for _, m := range metrics[:2] {
					rows = append(rows, newRow("W7", name+": copy floor in the crcache column", m.name, field(results[0], m.of), field(results[2], m.of)))
				}
			}
			for i, side := range []string{"controller-runtime", "crcache", "copy floor"}[:len(ops)] {
				fmt.Fprintf(os.Stderr, "W7 %s: %s: ns/op %.0f, CPU ns/op %.0f\n", name, side,
					field(results[i], metrics[0].of), field(results[i], metrics[1].of))
			}
		}
	}
	return rows, nil
}

// cachedHits returns the cached pods (the cache's own objects, wherever
// they are in memory) that the list options select, by testing every
// cached pod.
func cachedHits(ctx context.Context, c cache.Cache, opts []client.ListOption) ([]*corev1.Pod, error) {
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer %T has no store", inf)
	}
	var o client.ListOptions
	o.ApplyOptions(opts)
	var hits []*corev1.Pod
	for _, obj := range shared.GetStore().List() {
		p := obj.(*corev1.Pod)
		if (o.Namespace == "" || p.Namespace == o.Namespace) && o.LabelSelector.Matches(labels.Set(p.Labels)) {
			hits = append(hits, p)
		}
	}
	return hits, nil
}

// copyFloor returns an operation that copies hits into a new list, deep
// (each with DeepCopyInto, straight into the list) or shallow.
func copyFloor(hits []*corev1.Pod, deep bool) func() error {
	return func() error {
		items := make([]corev1.Pod, len(hits))
		for i, p := range hits {
			if deep {
				p.DeepCopyInto(&items[i])
			} else {
				items[i] = *p
			}
		}
		sink.Items = items
		return nil
	}
}

// field returns f of every element of stats.
func field(stats []opStats, f func(opStats) float64) []float64 {
	out := make([]float64, len(stats))
	for i, s := range stats {
		out[i] = f(s)
	}
	return out
}
