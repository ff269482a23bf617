package informer

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2/ktesting"
)

func TestDispatcherAppliesLongRunsOfWritesInOrder(t *testing.T) {
	// Every event is waiting before Run, so the dispatcher gets them in
	// large batches: runs of writes longer than maxWritesPerLock, more
	// notifications than dispatchChunk, and a bookmark in the middle.
	const pods = 3 * maxWritesPerLock
	var events []watch.Event
	var want []plEvent
	rv := 1
	next := func() string { rv++; return strconv.Itoa(rv) }
	for i := range pods {
		pod := NewPod("ns", fmt.Sprintf("p%d", i), next())
		events = append(events, watch.Event{Type: watch.Added, Object: pod})
		want = append(want, plAdd("ns/"+pod.Name, pod.ResourceVersion, false))
	}
	bookmarkRV := next()
	events = append(events, watch.Event{Type: watch.Bookmark, Object: NewPod("", "", bookmarkRV)})
	for i := range pods {
		old := strconv.Itoa(2 + i)
		pod := NewPod("ns", fmt.Sprintf("p%d", i), next())
		events = append(events, watch.Event{Type: watch.Modified, Object: pod})
		want = append(want, plUpdate("ns/"+pod.Name, old, pod.ResourceVersion))
	}
	for i := 0; i < pods; i += 2 {
		pod := NewPod("ns", fmt.Sprintf("p%d", i), next())
		events = append(events, watch.Event{Type: watch.Deleted, Object: pod})
		want = append(want, plDelete("ns/"+pod.Name, pod.ResourceVersion, false))
	}
	lw := &prefilledLW{events: make(chan watch.Event, len(events))}
	for _, e := range events {
		lw.events <- e
	}
	inf := MustNewInformer(t, lw, InformerOptions[*corev1.Pod]{
		Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
	})
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	if diff := cmp.Diff(want, rec.waitFor(t, len(want))); diff != "" {
		t.Fatalf("notifications (-want +got):\n%s", diff)
	}
	if got := len(inf.indexer.List()); got != pods/2 {
		t.Errorf("cache holds %d objects, want %d", got, pods/2)
	}
	if got, want := inf.indexer.LastStoreSyncResourceVersion(), strconv.Itoa(rv); got != want {
		t.Errorf("cache resource version = %s, want %s", got, want)
	}
	mustCheck(t, inf.indexer)
}

func TestInformerDropsAndCountsEventsItsIndexRejects(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{
		"strict": func(p *corev1.Pod) ([]string, error) {
			if p.Name == "bad" {
				return nil, errors.New("bad pod")
			}
			return []string{p.Name}, nil
		},
	}})
	lw.SetList("1")
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, lw.Add(ctx, NewPod("ns", "a", "2")))
	plMust(t, lw.Add(ctx, NewPod("ns", "bad", "3")))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "4")))
	plMust(t, lw.Delete(ctx, NewPod("ns", "bad", "5")))
	rec.expect(t, plAdd("ns/a", "2", false), plUpdate("ns/a", "2", "4"), plDelete("ns/bad", "5", false))
	if diff := cmp.Diff(InformerStats{StoreErrors: 1}, inf.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a@4"}, versionsOf(inf.indexer.List())); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
}

// TestDispatcherRefreshesMissingAndStaleValuesWithinARun queues writes
// whose index values are missing (the index function failed) in the middle
// of a run, or stale (an index was added after they were queued): the
// dispatcher stops the run there, computes the values again without the
// cache's lock, and goes on, dropping and counting the write whose function
// still fails.
func TestDispatcherRefreshesMissingAndStaleValuesWithinARun(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	inf := MustNewInformer(t, &prefilledLW{}, InformerOptions[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{
		"strict": func(p *corev1.Pod) ([]string, error) {
			if p.Name == "bad" {
				return nil, errors.New("bad pod")
			}
			return []string{p.Name}, nil
		},
	}})
	q := inf.queue
	process := func() {
		batch, _ := q.next()
		inf.fan.process(logger, batch)
		q.recycle(batch)
	}
	plMust(t, q.Add(NewPod("ns", "a", "2")))
	plMust(t, q.Add(NewPod("ns", "bad", "3")))
	plMust(t, q.Add(NewPod("ns", "c", "4")))
	process()
	plMust(t, q.Add(NewPod("ns", "d", "5")))
	plMust(t, inf.indexer.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"byName": func(p *corev1.Pod) ([]string, error) {
		return []string{"name-" + p.Name}, nil
	}}))
	plMust(t, q.Update(NewPod("ns", "a", "6")))
	process()

	mustCheck(t, inf.indexer)
	if diff := cmp.Diff([]string{"ns/a@6", "ns/c@4", "ns/d@5"}, versionsOf(inf.indexer.List())); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
	got := map[string][]string{}
	for _, index := range []string{"strict", "byName"} {
		for _, value := range inf.indexer.ListIndexFuncValues(index) {
			keys, err := inf.indexer.IndexKeys(index, value)
			plMust(t, err)
			got[index+"="+value] = keys
		}
	}
	want := map[string][]string{
		"strict=a": {"ns/a"}, "strict=c": {"ns/c"}, "strict=d": {"ns/d"},
		"byName=name-a": {"ns/a"}, "byName=name-c": {"ns/c"}, "byName=name-d": {"ns/d"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(InformerStats{StoreErrors: 1}, inf.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}
