package informer

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// podListLW is a client-go cache.ListerWatcher whose first List hands over
// a *corev1.PodList holding its pods by value, as a client-go client
// returns it; later lists are empty at the same resource version and
// watches stay idle.
type podListLW struct {
	mu   sync.Mutex
	list *corev1.PodList
}

func newPodListLW(pods []*corev1.Pod) *podListLW {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]corev1.Pod, len(pods))}
	for i, p := range pods {
		list.Items[i] = *p
	}
	return &podListLW{list: list}
}

func (lw *podListLW) List(metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	list := lw.list
	lw.list = nil // the harness keeps no reference to the listed pods
	if list == nil {
		list = &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	}
	return list, nil
}

func (lw *podListLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return &prefilledWatch{events: make(chan watch.Event)}, nil
}

func (lw *podListLW) IsWatchListSemanticsUnSupported() bool { return true }

// BenchmarkCacheListerWatcherSync measures an initial sync of 100,000 pods
// listed as one *corev1.PodList through a client-go cache.ListerWatcher:
// ours through NewCacheListerWatcher, client-go's shared index informer
// over the same lister-watcher, both with the namespace index and one
// counting handler. One op is one sync, from Run until the handler has
// every add; building the list is not counted. It reports the bytes and
// allocations per pod and the heap the synced informer retains per pod.
func BenchmarkCacheListerWatcherSync(b *testing.B) {
	const n = 100_000
	pods := benchPods(n)
	for _, impl := range []struct {
		name  string
		build func(b *testing.B, lw cache.ListerWatcher, counter *countingHandler) func(context.Context)
	}{
		{"impl=ours", func(b *testing.B, lw cache.ListerWatcher, counter *countingHandler) func(context.Context) {
			inf := MustNewInformer(b, NewCacheListerWatcher[*corev1.Pod](lw), InformerOptions[*corev1.Pod]{
				Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
			})
			if _, err := inf.AddEventHandler(counter); err != nil {
				b.Fatal(err)
			}
			return inf.Run
		}},
		{"impl=client-go", func(b *testing.B, lw cache.ListerWatcher, counter *countingHandler) func(context.Context) {
			inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { counter.tick() },
				UpdateFunc: func(_, _ any) { counter.tick() },
				DeleteFunc: func(any) { counter.tick() },
			}); err != nil {
				b.Fatal(err)
			}
			return inf.RunWithContext
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			var bytes, mallocs, retained uint64
			var before, after goruntime.MemStats
			b.StopTimer()
			for range b.N {
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				lw := newPodListLW(pods)
				counter := &countingHandler{target: n, done: make(chan struct{})}
				run := impl.build(b, lw, counter)
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(10)))
				done := make(chan struct{})
				var start goruntime.MemStats
				goruntime.ReadMemStats(&start)
				b.StartTimer()
				go func() {
					defer close(done)
					run(ctx)
				}()
				<-counter.done
				b.StopTimer()
				goruntime.ReadMemStats(&after)
				bytes += after.TotalAlloc - start.TotalAlloc
				mallocs += after.Mallocs - start.Mallocs
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				retained += after.HeapAlloc - before.HeapAlloc
				cancel()
				<-done
			}
			per := float64(b.N) * n
			b.ReportMetric(float64(bytes)/per, "B/pod")
			b.ReportMetric(float64(mallocs)/per, "allocs/pod")
			b.ReportMetric(float64(retained)/per, "retained-B/pod")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sync")
		})
	}
}
