package main

import (
	"fmt"
	"runtime"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// byNodeIndex is the name of the W4 index on spec.nodeName.
const byNodeIndex = "byNode"

// podStores holds the same pods in client-go's indexer and in ours, for the
// store workloads W3–W5. Both stores share the pod objects: the workloads
// only read them or replace them with copies.
type podStores struct {
	pods     []*corev1.Pod
	clientGo cache.Indexer
	ours     *informer.Indexer[*corev1.Pod]
}

// sharedStores is built by the first store workload and reused by the others.
var sharedStores *podStores

// storesFor returns the W3–W5 stores of cfg.storePods pods, building them
// on first use.
func storesFor(cfg config) (*podStores, error) {
	if sharedStores != nil && len(sharedStores.pods) == cfg.storePods {
		return sharedStores, nil
	}
	st := &podStores{pods: newPods(cfg.storePods), clientGo: newClientGoIndexer(true), ours: newOurIndexer(true)}
	for _, pod := range st.pods {
		if err := st.clientGo.Add(pod); err != nil {
			return nil, fmt.Errorf("filling client-go's indexer: %w", err)
		}
		if err := st.ours.Add(pod); err != nil {
			return nil, fmt.Errorf("filling our indexer: %w", err)
		}
	}
	sharedStores = st
	return st, nil
}

// newClientGoIndexer returns client-go's indexer with the namespace index
// and, when byNode is set, the W4 node index.
func newClientGoIndexer(byNode bool) cache.Indexer {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if byNode {
		indexers[byNodeIndex] = clientGoNodeIndexFunc
	}
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
}

// newOurIndexer returns our indexer with the namespace index and, when
// byNode is set, the W4 node index.
func newOurIndexer(byNode bool) *informer.Indexer[*corev1.Pod] {
	indexers := map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]}
	if byNode {
		indexers[byNodeIndex] = ourNodeIndexFunc
	}
	return informer.NewIndexer(indexers)
}

// ourNodeIndexFunc indexes a pod by spec.nodeName.
func ourNodeIndexFunc(pod *corev1.Pod) ([]string, error) {
	return []string{pod.Spec.NodeName}, nil
}

// clientGoNodeIndexFunc indexes a pod by spec.nodeName.
func clientGoNodeIndexFunc(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("byNode index: want *v1.Pod, got %T", obj)
	}
	return []string{pod.Spec.NodeName}, nil
}

// retainedHeapPerPod generates n pods, hands them to fill, drops every
// other reference and returns the live heap the filled store keeps, per pod
// (pods included).
func retainedHeapPerPod(n int, fill func(pods []*corev1.Pod) (store any, err error)) (float64, error) {
	before := liveHeap()
	store, err := fill(newPods(n))
	if err != nil {
		return 0, err
	}
	after := liveHeap()
	runtime.KeepAlive(store)
	return (float64(after) - float64(before)) / float64(n), nil
}

// sortedKeys returns the cache keys of pods, sorted.
func sortedKeys(pods []*corev1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	sort.Strings(keys)
	return keys
}

// checkSameKeys fails unless both results hold exactly the wanted number of
// pods and the same ones.
func checkSameKeys(what string, want int, clientGo, ours []*corev1.Pod) error {
	if len(clientGo) != want {
		return fmt.Errorf("%s: client-go returned %d pods, want %d", what, len(clientGo), want)
	}
	if len(ours) != want {
		return fmt.Errorf("%s: ours returned %d pods, want %d", what, len(ours), want)
	}
	cg, our := sortedKeys(clientGo), sortedKeys(ours)
	for i := range cg {
		if cg[i] != our[i] {
			return fmt.Errorf("%s: results differ: client-go has %s where ours has %s", what, cg[i], our[i])
		}
	}
	return nil
}

// opRows turns the ns/op and, when asked, the allocs/op and B/op medians of
// one case into rows.
func opRows(workload, kase string, cg, our opStats, withAllocs, withBytes bool) []benchkit.Row {
	type metric struct {
		name    string
		cg, our float64
	}
	ms := []metric{{"ns/op", cg.nsPerOp, our.nsPerOp}}
	if withAllocs {
		ms = append(ms, metric{"allocs/op", cg.allocsPerOp, our.allocsPerOp})
	}
	if withBytes {
		ms = append(ms, metric{"B/op", cg.bytesPerOp, our.bytesPerOp})
	}
	rows := make([]benchkit.Row, len(ms))
	for i, m := range ms {
		rows[i] = newRow(workload, kase, m.name, m.cg, m.our)
	}
	return rows
}
