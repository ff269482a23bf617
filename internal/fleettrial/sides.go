package fleettrial

import (
	"context"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/replayserver"
)

// clusterConfig returns the rest.Config of the replay cluster at url, with
// a proxy function (ProxyFromEnvironment, which never proxies loopback):
// client-go's transport cache hands every config without TLS options the
// one shared http.DefaultTransport, while real clusters' distinct CAs and
// credentials give each cluster a transport of its own; a config naming a
// proxy function is never cached, so each cluster gets its own, as in a
// real fleet. Ours' Fleet does the same for each cluster it adds.
func clusterConfig(url string) *rest.Config {
	c := replayserver.Cluster{URL: url}.Config()
	c.Proxy = http.ProxyFromEnvironment
	return c
}

// clientGoSide is what multi-cluster controllers build on client-go: per
// cluster a protobuf clientset without client-side rate limits and a
// SharedInformerFactory's pod informer (with the namespace index the
// factory gives it), all in one process; DropManagedFields strips them by
// the factory's transform.
type clientGoSide struct {
	factories []informers.SharedInformerFactory
	informers []cache.SharedIndexInformer
	cancel    context.CancelFunc
}

// clusterPod is a pod of a fleet-wide answer with its cluster, as ours'
// ClusterObject.
type clusterPod struct {
	cluster int
	pod     *corev1.Pod
}

func startClientGo(ctx context.Context, spec Spec, rec *recorder) (side, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &clientGoSide{cancel: cancel}
	var opts []informers.SharedInformerOption
	if spec.DropManagedFields {
		opts = append(opts, informers.WithTransform(func(obj any) (any, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
	}
	for i, url := range spec.Clusters {
		config := clusterConfig(url)
		config.ContentType = runtime.ContentTypeProtobuf
		config.QPS, config.Burst = -1, 0
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			cancel()
			return nil, err
		}
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
		inf := factory.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { rec.add() },
			UpdateFunc: func(_, obj any) { rec.update(i, obj.(*corev1.Pod)) },
		}); err != nil {
			cancel()
			return nil, err
		}
		factory.Start(ctx.Done())
		s.factories = append(s.factories, factory)
		s.informers = append(s.informers, inf)
	}
	return s, nil
}

func (s *clientGoSide) hasSynced() bool {
	for _, inf := range s.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// list scans each cluster's cache with selector (cache.ListAll over its
// indexer, as a lister's List does), gathering the pods found with their
// cluster, as ours' FleetLister.List returns them.
func (s *clientGoSide) list(selector labels.Selector) int {
	var out []clusterPod
	for i, inf := range s.informers {
		_ = cache.ListAll(inf.GetIndexer(), selector, func(obj any) {
			out = append(out, clusterPod{cluster: i, pod: obj.(*corev1.Pod)})
		})
	}
	return len(out)
}

func (s *clientGoSide) stop() {
	s.cancel()
	for _, f := range s.factories {
		f.Shutdown()
	}
}

func (s *clientGoSide) snapshots() (SnapshotTotals, int) { return SnapshotTotals{}, 0 }

// oursSide is one informer.Fleet over every cluster, with the namespace
// index client-go's factory gives its informers; DropManagedFields drops
// them with RESTOptions.DropFields (on the wire), Deduplicate sets
// InformerOptions.Deduplicate, SnapshotDir Snapshot.Dir.
type oursSide struct {
	fleet  *informer.Fleet[*corev1.Pod]
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startOurs(ctx context.Context, spec Spec, rec *recorder) (side, error) {
	opts := informer.FleetOptions[*corev1.Pod]{Informer: informer.InformerOptions[*corev1.Pod]{
		Name:        "pods",
		Indexers:    map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
		Deduplicate: new(spec.Deduplicate),
		Snapshot:    informer.SnapshotOptions{Dir: spec.SnapshotDir},
	}}
	if spec.DropManagedFields {
		opts.REST.DropFields = []string{informer.ManagedFields}
	}
	fleet, err := informer.NewFleet(opts)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(spec.Clusters))
	for i := range spec.Clusters {
		index[ClusterName(i)] = i
	}
	if _, err := fleet.AddEventHandler(informer.FleetEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(string, *corev1.Pod, bool) { rec.add() },
		UpdateFunc: func(cluster string, _, pod *corev1.Pod) { rec.update(index[cluster], pod) },
	}); err != nil {
		return nil, err
	}
	for i, url := range spec.Clusters {
		if err := fleet.AddCluster(ClusterName(i), clusterConfig(url)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &oursSide{fleet: fleet, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		fleet.Run(ctx)
	}()
	return s, nil
}

func (s *oursSide) hasSynced() bool { return s.fleet.HasSynced() }

func (s *oursSide) list(selector labels.Selector) int {
	objs, err := s.fleet.Lister().List(selector)
	if err != nil {
		panic(err)
	}
	return len(objs)
}

// stop ends the fleet's Run and waits for it to return: every cluster's
// informer has then stopped, and saved its snapshot if it keeps them.
func (s *oursSide) stop() {
	s.once.Do(func() {
		s.cancel()
		<-s.done
	})
}

func (s *oursSide) snapshots() (SnapshotTotals, int) {
	stats := s.fleet.Stats()
	var t SnapshotTotals
	for _, c := range stats.Clusters {
		ss := c.Informer.Snapshot
		t.Saved += ss.Saved
		t.SaveBytes += ss.LastSaveBytes
		t.Restored += ss.Restored
		t.RestoredObjects += ss.RestoredObjects
		t.Rejected += ss.Rejected
		t.ResumedWatches += ss.ResumedWatches
		t.RestoreRelists += ss.RestoreRelists
	}
	return t, stats.Failed
}
