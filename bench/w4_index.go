package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/benchkit"
)

// sinkAny keeps measured client-go results alive.
var sinkAny []any

// runIndex is W4: ByIndex on the spec.nodeName index, and Update of a pod
// that moves between two nodes (so both index buckets change every time).
func runIndex(cfg config) ([]benchkit.Row, error) {
	st, err := storesFor(cfg)
	if err != nil {
		return nil, err
	}
	const node = "node-7"
	want := 0
	for _, p := range st.pods {
		if p.Spec.NodeName == node {
			want++
		}
	}
	byIndexCase := fmt.Sprintf("ByIndex(%q, %q)", byNodeIndex, node)
	cgHits, err := st.clientGo.ByIndex(byNodeIndex, node)
	if err != nil {
		return nil, fmt.Errorf("%s: client-go: %w", byIndexCase, err)
	}
	cgPods, err := podsOf(cgHits)
	if err != nil {
		return nil, err
	}
	ourPods, err := st.ours.ByIndex(byNodeIndex, node)
	if err != nil {
		return nil, fmt.Errorf("%s: ours: %w", byIndexCase, err)
	}
	if err := checkSameKeys(byIndexCase, want, cgPods, ourPods); err != nil {
		return nil, err
	}
	cg, our, err := compareOps(cfg, func() error {
		hits, err := st.clientGo.ByIndex(byNodeIndex, node)
		sinkAny = hits
		return err
	}, func() error {
		hits, err := st.ours.ByIndex(byNodeIndex, node)
		sinkPods = hits
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", byIndexCase, err)
	}
	rows := opRows("W4", byIndexCase, cg, our, true, false)

	original := st.pods[7] // pod-7 lives on node-7
	moves := nodeMoves(original, "node-8")
	cgUpdate := alternate(moves, func(p *corev1.Pod) error { return st.clientGo.Update(p) })
	cg, our, err = compareOps(cfg, cgUpdate, alternate(moves, st.ours.Update))
	if err != nil {
		return nil, fmt.Errorf("Update: %w", err)
	}
	if err := st.clientGo.Update(original); err != nil {
		return nil, fmt.Errorf("Update: restoring client-go's store: %w", err)
	}
	if err := st.ours.Update(original); err != nil {
		return nil, fmt.Errorf("Update: restoring our store: %w", err)
	}
	rows = append(rows, opRows("W4", "Update (node-7 ⇄ node-8)", cg, our, true, false)...)
	return rows, nil
}

// nodeMoves returns two shallow copies of pod with new resource versions:
// the first on node other, the second back on pod's own node.
func nodeMoves(pod *corev1.Pod, other string) [2]*corev1.Pod {
	away, back := *pod, *pod
	away.Spec.NodeName = other
	away.ResourceVersion = pod.ResourceVersion + "1"
	back.ResourceVersion = pod.ResourceVersion + "2"
	return [2]*corev1.Pod{&away, &back}
}

// alternate returns an operation that calls update with moves[0], moves[1],
// moves[0], … on successive calls.
func alternate(moves [2]*corev1.Pod, update func(*corev1.Pod) error) func() error {
	i := 0
	return func() error {
		pod := moves[i]
		i ^= 1
		return update(pod)
	}
}

// podsOf converts client-go's untyped results.
func podsOf(objs []any) ([]*corev1.Pod, error) {
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("client-go returned a %T, want *v1.Pod", o)
		}
		pods[i] = p
	}
	return pods, nil
}
