package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// listCase is one W3 query.
type listCase struct {
	name      string
	namespace string // "" = all namespaces
	selector  string // "" = labels.Everything()
}

var listCases = []listCase{
	{"(a) app=app-7, all namespaces", "", "app=app-7"},
	{"(b) app=app-7 in ns-7", "ns-7", "app=app-7"},
	{"(c) everything", "", ""},
	{"(d) app in (app-1,app-2),tier!=tier-0", "", "app in (app-1,app-2),tier!=tier-0"},
}

// sinkPods keeps measured results alive so that no call is optimised away.
var sinkPods []*corev1.Pod

// runList is W3: List(selector) through client-go's typed pod lister and
// through ours, on the same pods.
func runList(cfg config) ([]benchkit.Row, error) {
	st, err := storesFor(cfg)
	if err != nil {
		return nil, err
	}
	cgLister := corev1listers.NewPodLister(st.clientGo)
	ourLister := informer.NewLister(st.ours, corev1.SchemeGroupVersion.WithResource("pods"))
	var rows []benchkit.Row
	for k, c := range listCases {
		start := time.Now()
		sel, err := labels.Parse(c.selector)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		cgList := func() ([]*corev1.Pod, error) {
			if c.namespace == "" {
				return cgLister.List(sel)
			}
			return cgLister.Pods(c.namespace).List(sel)
		}
		ourList := func() ([]*corev1.Pod, error) {
			if c.namespace == "" {
				return ourLister.List(sel)
			}
			return ourLister.Namespace(c.namespace).List(sel)
		}
		cgPods, err := cgList()
		if err != nil {
			return nil, fmt.Errorf("%s: client-go: %w", c.name, err)
		}
		ourPods, err := ourList()
		if err != nil {
			return nil, fmt.Errorf("%s: ours: %w", c.name, err)
		}
		if err := checkSameKeys(c.name, countMatching(st.pods, c.namespace, sel), cgPods, ourPods); err != nil {
			return nil, err
		}
		cg, our, err := compareOps(cfg, func() error {
			pods, err := cgList()
			sinkPods = pods
			return err
		}, func() error {
			pods, err := ourList()
			sinkPods = pods
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		rows = append(rows, opRows("W3", c.name, cg, our, true, true)...)
		progress("W3: query %d/%d %s: %d repetitions done in %v", k+1, len(listCases), c.name, cfg.count, time.Since(start).Round(time.Millisecond))
	}
	heapRows, err := storeHeapRows(cfg)
	if err != nil {
		return nil, err
	}
	return append(rows, heapRows...), nil
}

// countMatching counts by brute force the pods a query must return.
func countMatching(pods []*corev1.Pod, namespace string, sel labels.Selector) int {
	n := 0
	for _, p := range pods {
		if (namespace == "" || p.Namespace == namespace) && sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// storeHeapRows measures the live heap kept by a store of cfg.storePods
// pods (pods included), for each implementation with the namespace index.
func storeHeapRows(cfg config) ([]benchkit.Row, error) {
	var cgRuns, ourRuns []float64
	for rep := range cfg.count {
		start := time.Now()
		perPod, err := retainedHeapPerPod(cfg.storePods, func(pods []*corev1.Pod) (any, error) {
			store := newClientGoIndexer(false)
			for _, p := range pods {
				if err := store.Add(p); err != nil {
					return nil, err
				}
			}
			return store, nil
		})
		if err != nil {
			return nil, fmt.Errorf("store heap: client-go: %w", err)
		}
		cgRuns = append(cgRuns, perPod)
		perPod, err = retainedHeapPerPod(cfg.storePods, func(pods []*corev1.Pod) (any, error) {
			store := newOurIndexer(false)
			for _, p := range pods {
				if err := store.Add(p); err != nil {
					return nil, err
				}
			}
			return store, nil
		})
		if err != nil {
			return nil, fmt.Errorf("store heap: ours: %w", err)
		}
		ourRuns = append(ourRuns, perPod)
		progress("W3: store heap of %d pods: repetition %d/%d done in %v", cfg.storePods, rep+1, cfg.count, time.Since(start).Round(time.Millisecond))
	}
	kase := groupThousands(int64(cfg.storePods)) + " pods, namespace index"
	return []benchkit.Row{newRow("store", kase, "retained heap/pod (B)", benchkit.Median(cgRuns), benchkit.Median(ourRuns))}, nil
}
