package informer

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/internal/benchkit"
)

// prefilledLW lists nothing at resource version "1" and serves one watch
// whose events are all queued before the informer starts, so that a
// benchmark measures the informer rather than the producer.
type prefilledLW struct {
	events chan watch.Event
}

func (p *prefilledLW) List(context.Context, metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	return &ListResult[*corev1.Pod]{ResourceVersion: "1"}, nil
}

func (p *prefilledLW) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return &prefilledWatch{events: p.events}, nil
}

func (p *prefilledLW) IsWatchListSemanticsUnSupported() bool { return true }

// prefilledWatch never closes its channel: the benchmark stops the informer.
type prefilledWatch struct{ events chan watch.Event }

func (w *prefilledWatch) ResultChan() <-chan watch.Event { return w.events }
func (w *prefilledWatch) Stop()                          {}

// benchEvents returns about n watch events in W1's proportions: each pod is
// added, modified twice (shallow copies with a new resource version) and
// deleted; a quarter of the events of each kind.
func benchEvents(n int) []watch.Event {
	pods := max(n/4, 1)
	events := make([]watch.Event, 0, 4*pods)
	base := make([]*corev1.Pod, pods)
	rv := 1
	next := func(p *corev1.Pod) *corev1.Pod {
		c := *p
		rv++
		c.ResourceVersion = strconv.Itoa(rv)
		return &c
	}
	for i := range base {
		base[i] = next(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-" + strconv.Itoa(i%1000), Name: "pod-" + strconv.Itoa(i),
			Labels: map[string]string{"app": "app-" + strconv.Itoa(i%100)},
		}})
		events = append(events, watch.Event{Type: watch.Added, Object: base[i]})
	}
	for range 2 {
		for i := range base {
			base[i] = next(base[i])
			events = append(events, watch.Event{Type: watch.Modified, Object: base[i]})
		}
	}
	for i := range base {
		events = append(events, watch.Event{Type: watch.Deleted, Object: next(base[i])})
	}
	return events
}

// countingHandler counts notifications and closes done at target.
type countingHandler struct {
	count, target int
	done          chan struct{}
}

func (c *countingHandler) OnAdd(*corev1.Pod, bool)             { c.tick() }
func (c *countingHandler) OnUpdate(_, _ *corev1.Pod)           { c.tick() }
func (c *countingHandler) OnDelete(DeletedObject[*corev1.Pod]) { c.tick() }
func (c *countingHandler) tick() {
	c.count++
	if c.count == c.target {
		close(c.done)
	}
}

// BenchmarkDispatch measures the informer's event path (reflector, queue,
// cache with a namespace index, listeners) from a prefilled watch to H
// counting handlers. One op is one watch event.
func BenchmarkDispatch(b *testing.B) {
	for _, handlers := range []int{1, 8} {
		b.Run(fmt.Sprintf("H=%d", handlers), func(b *testing.B) {
			events := benchEvents(b.N)
			lw := &prefilledLW{events: make(chan watch.Event, len(events))}
			for _, ev := range events {
				lw.events <- ev
			}
			inf := MustNewInformer(b, lw, InformerOptions[*corev1.Pod]{
				Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
			})
			counters := make([]*countingHandler, handlers)
			for i := range counters {
				counters[i] = &countingHandler{target: len(events), done: make(chan struct{})}
				if _, err := inf.AddEventHandler(counters[i]); err != nil {
					b.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(10)))
			done := make(chan struct{})
			b.ReportAllocs()
			b.ResetTimer()
			go func() {
				defer close(done)
				inf.Run(ctx)
			}()
			for _, c := range counters {
				<-c.done
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(events)), "ns/event")
			cancel()
			<-done
		})
	}
}

// listedLW lists pods at resource version "1" and serves an idle watch.
type listedLW struct {
	pods []*corev1.Pod
}

func (p *listedLW) List(context.Context, metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	return &ListResult[*corev1.Pod]{ResourceVersion: "1", Items: append([]*corev1.Pod(nil), p.pods...)}, nil
}

func (p *listedLW) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return &prefilledWatch{events: make(chan watch.Event)}, nil
}

func (p *listedLW) IsWatchListSemanticsUnSupported() bool { return true }

func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-" + strconv.Itoa(i%1000), Name: "pod-" + strconv.Itoa(i), ResourceVersion: "1",
			Labels: map[string]string{"app": "app-" + strconv.Itoa(i%100)},
		}}
	}
	return pods
}

// BenchmarkQueueAndStore measures, on one goroutine, the two stages W1's
// events cross before the listeners: queueing (transform, the store's
// prepared write, the chunk and its arena) and applying a batch to the
// cache (fanOut.process with no handler). One op is the whole W1 sequence
// of 200,000 events (benchEvents) into a new informer with the namespace
// index, drained one chunk at a time. Besides wall time per event, it
// reports each stage's CPU time per event on the goroutine's thread
// (benchkit.ThreadCPUTime, or wall time where that is unsupported), which
// other processes on a loaded machine barely change, so that two builds
// can be compared there (docs/benchmarks.md, "W1 against 624ceee").
func BenchmarkQueueAndStore(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock := benchkit.ThreadCPUTime
	if _, err := clock(); err != nil {
		clock = func() (time.Duration, error) { return time.Duration(time.Now().UnixNano()), nil }
	}
	now := func() time.Duration {
		t, err := clock()
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	events := benchEvents(200_000)
	logger := klog.Background()
	var queueing, applying time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		inf := MustNewInformer(b, &prefilledLW{}, InformerOptions[*corev1.Pod]{
			Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
		})
		q := inf.queue
		b.StartTimer()
		for start := 0; start < len(events); start += queueChunkSize {
			t0 := now()
			for _, ev := range events[start:min(start+queueChunkSize, len(events))] {
				if err := deliverTo(q, ev); err != nil {
					b.Fatal(err)
				}
			}
			t1 := now()
			batch, _ := q.next()
			inf.fan.process(logger, batch)
			q.recycle(batch)
			t2 := now()
			queueing += t1 - t0
			applying += t2 - t1
		}
		if n := len(inf.indexer.List()); n != 0 {
			b.Fatalf("%d objects cached after every object was deleted", n)
		}
	}
	n := float64(b.N * len(events))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64(queueing.Nanoseconds())/n, "cpu-ns/queued")
	b.ReportMetric(float64(applying.Nanoseconds())/n, "cpu-ns/applied")
}

// deliverTo queues a watch event's object as the reflector does.
func deliverTo(q *eventQueue[*corev1.Pod], ev watch.Event) error {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("%s event holds a %T", ev.Type, ev.Object)
	}
	switch ev.Type {
	case watch.Added:
		return q.Add(pod)
	case watch.Modified:
		return q.Update(pod)
	case watch.Deleted:
		return q.Delete(pod)
	}
	return fmt.Errorf("unexpected %s event", ev.Type)
}

// BenchmarkInitialSync measures the time from Run until one handler has
// received every object of the first list. One op is one listed object.
func BenchmarkInitialSync(b *testing.B) {
	lw := &listedLW{pods: benchPods(b.N)}
	inf := MustNewInformer(b, lw, InformerOptions[*corev1.Pod]{
		Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
	})
	counter := &countingHandler{target: b.N, done: make(chan struct{})}
	if _, err := inf.AddEventHandler(counter); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(10)))
	done := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	<-counter.done
	b.StopTimer()
	cancel()
	<-done
}
