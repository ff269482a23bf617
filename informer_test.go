package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

func TestInformerDeliversListThenWatchInOrder(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "1"), NewPod("ns", "b", "2"))
	rec := newPLRecorder()
	reg, err := inf.AddEventHandler(rec)
	plMust(t, err)
	if reg.HasSynced() || inf.HasSynced() {
		t.Fatal("synced before Run")
	}
	plRun(t, inf)
	ctx := plCtx(t)

	rec.expect(t, plAdd("ns/a", "1", true), plAdd("ns/b", "2", true))
	Eventually(t, "registration synced", reg.HasSynced)
	if !inf.HasSynced() {
		t.Fatal("informer not synced while its handler is")
	}
	plMust(t, lw.Add(ctx, NewPod("ns", "c", "11")))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "12")))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "13")))
	plMust(t, lw.Delete(ctx, NewPod("ns", "b", "14")))
	plMust(t, lw.Add(ctx, NewPod("ns", "b", "15")))
	rec.expect(t,
		plAdd("ns/a", "1", true), plAdd("ns/b", "2", true),
		plAdd("ns/c", "11", false),
		plUpdate("ns/a", "1", "12"),
		plUpdate("ns/a", "12", "13"),
		plDelete("ns/b", "14", false),
		plAdd("ns/b", "15", false),
	)
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/c"}, keysOf(inf.indexer.List())); diff != "" {
		t.Errorf("cache keys (-want +got):\n%s", diff)
	}
	if got := inf.indexer.LastStoreSyncResourceVersion(); got != "15" {
		t.Errorf("store resource version = %q, want 15", got)
	}
}

func TestInformerUpdatesTheStoreBeforeNotifying(t *testing.T) {
	// Resource versions grow with every event here, so the store's resource
	// version (set by every write) tells whether an event reached the store.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"))
	rec := newPLRecorder()
	var mu sync.Mutex
	var violations []string
	rec.hook = func(e plEvent) {
		storeRV := inf.indexer.LastStoreSyncResourceVersion()
		if plRV(NewPod("", "", storeRV)) < plRV(NewPod("", "", e.RV)) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, fmt.Sprintf("%v notified with the store at %s", e, storeRV))
		}
	}
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	for i := 2; i < 200; i += 2 {
		plMust(t, lw.Modify(ctx, NewPod("ns", "a", strconv.Itoa(i))))
		plMust(t, lw.Add(ctx, NewPod("ns", "b"+strconv.Itoa(i), strconv.Itoa(i+1))))
	}
	plMust(t, lw.Delete(ctx, NewPod("ns", "a", "300")))
	rec.waitFor(t, 1+99*2+1)
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("handlers ran before the store was updated:\n%s", strings.Join(violations, "\n"))
	}
}

func TestInformerRelistReplacesAtomically(t *testing.T) {
	// client-go's TestReplaceEvents, through a real relist after "410 Gone".
	tests := []struct {
		name     string
		initial  []*corev1.Pod
		relisted []*corev1.Pod
		want     []plEvent
	}{{
		name:     "create with no initial objects",
		relisted: []*corev1.Pod{NewPod("default", "pod-1", "1")},
		want:     []plEvent{plAdd("default/pod-1", "1", false)},
	}, {
		name:    "delete all objects",
		initial: []*corev1.Pod{NewPod("default", "pod-1", "1"), NewPod("default", "pod-3", "2")},
		want:    []plEvent{plDelete("default/pod-1", "1", true), plDelete("default/pod-3", "2", true)},
	}, {
		name: "create, update, delete",
		initial: []*corev1.Pod{NewPod("default", "pod-1", "1"), NewPod("default", "pod-2", "2"),
			NewPod("default", "pod-3", "3")},
		relisted: []*corev1.Pod{NewPod("default", "pod-1", "4"), NewPod("default", "pod-2", "5"),
			NewPod("default", "pod-4", "6")},
		want: []plEvent{plDelete("default/pod-3", "3", true), plUpdate("default/pod-1", "1", "4"),
			plUpdate("default/pod-2", "2", "5"), plAdd("default/pod-4", "6", false)},
	}, {
		name:     "unchanged objects are resync updates",
		initial:  []*corev1.Pod{NewPod("default", "pod-1", "1"), NewPod("default", "pod-2", "2")},
		relisted: []*corev1.Pod{NewPod("default", "pod-2", "2"), NewPod("default", "pod-1", "1")},
		want:     []plEvent{plUpdate("default/pod-2", "2", "2"), plUpdate("default/pod-1", "1", "1")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
			lw.SetList("10", tc.initial...)
			rec := newPLRecorder()
			// The relist must be in the store before any of its
			// notifications (a panic here is recovered, counted and
			// checked below).
			rec.hook = func(e plEvent) {
				if rv := inf.indexer.LastStoreSyncResourceVersion(); rv != "10" && rv != "20" {
					panic(fmt.Sprintf("store at %q when notified of %v", rv, e))
				}
				if (e.Op == "delete" || !e.Initial) && inf.indexer.LastStoreSyncResourceVersion() != "20" {
					panic(fmt.Sprintf("relist not stored before %v", e))
				}
			}
			reg, err := inf.AddEventHandler(rec)
			plMust(t, err)
			plRun(t, inf)
			Eventually(t, "informer synced", inf.HasSynced)
			rec.waitFor(t, len(tc.initial))
			rec.reset()

			lw.SetList("20", tc.relisted...)
			plMust(t, lw.FailWatch(plCtx(t), apierrors.NewResourceExpired("too old resource version")))
			got := rec.waitFor(t, len(tc.want))
			// Deletions inferred from a relist come in no particular order.
			slices.SortStableFunc(got, func(a, b plEvent) int {
				if a.Op == "delete" && b.Op == "delete" {
					return strings.Compare(a.Key, b.Key)
				}
				return 0
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(keysOf(tc.relisted), keysOf(inf.indexer.List())); diff != "" {
				t.Fatalf("cache keys (-want +got):\n%s", diff)
			}
			if got := inf.indexer.LastStoreSyncResourceVersion(); got != "20" {
				t.Fatalf("store resource version = %q, want the relist's 20", got)
			}
			if panics := reg.Stats().Panics; panics != 0 {
				t.Fatalf("%d notifications arrived before the store was updated (see the log)", panics)
			}
		})
	}
}

func TestInformerRelistsAfterAClosedWatchThatCannotResume(t *testing.T) {
	// client-go's TestResetWatch: changes missed while the watch was down
	// arrive with the relist, not flagged as initial. client-go's watch
	// carries a bookmark only; this one carries a change, since a watch
	// that ends at once with bookmarks only is a very short watch here
	// (see TestReflectorBookmarkOnlyShortWatchesBackOff).
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DisableWatchList: true})
	lw.SetList("1", NewPod("default", "pod-1", "1"))
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	rec.expect(t, plAdd("default/pod-1", "1", true))
	rec.reset()

	plMust(t, lw.Modify(ctx, NewPod("default", "pod-1", "2")))
	lw.SetList("4", NewPod("default", "pod-1", "3"), NewPod("default", "pod-2", "4"))
	lw.FailNextWatch(apierrors.NewResourceExpired("too old resource version"))
	plMust(t, lw.CloseWatch(ctx))
	rec.expect(t, plUpdate("default/pod-1", "1", "2"), plUpdate("default/pod-1", "2", "3"), plAdd("default/pod-2", "4", false))
	calls, err := lw.WaitForCalls(ctx, 5)
	plMust(t, err)
	verbs := make([]string, 0, len(calls))
	for _, c := range calls {
		verbs = append(verbs, c.Verb)
	}
	if diff := cmp.Diff([]string{"list", "watch", "watch", "list", "watch"}, verbs); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestInformerAppliesBookmarksInOrder(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, lw.Add(ctx, NewPod("ns", "a", "5")))
	plMust(t, lw.Bookmark(ctx, "9"))
	plMust(t, lw.Add(ctx, NewPod("ns", "b", "10")))
	rec.expect(t, plAdd("ns/a", "5", false), plAdd("ns/b", "10", false))
	if got := inf.indexer.LastStoreSyncResourceVersion(); got != "10" {
		t.Fatalf("store resource version = %q, want 10", got)
	}
	plMust(t, lw.Bookmark(ctx, "12"))
	Eventually(t, "bookmark applied", func() bool { return inf.indexer.LastStoreSyncResourceVersion() == "12" })
	Eventually(t, "reflector saw the bookmark", func() bool { return inf.LastSyncResourceVersion() == "12" })
}

func TestInformerTransformsEachObjectOnce(t *testing.T) {
	var mu sync.Mutex
	calls := map[*corev1.Pod]int{}
	transform := func(p *corev1.Pod) (*corev1.Pod, error) {
		mu.Lock()
		calls[p]++
		mu.Unlock()
		if p.Name == "bad" {
			return nil, errors.New("cannot transform")
		}
		p.Annotations = nil // the typical use: drop what the program never reads
		p.Labels = map[string]string{"transformed": "yes"}
		return p, nil
	}
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Transform: transform})
	a := NewPod("ns", "a", "1")
	a.Annotations = map[string]string{"big": "value"}
	lw.SetList("1", a, NewPod("ns", "bad", "1"), NewPod("ns", "b", "1"))
	var seen []*corev1.Pod
	var seenMu sync.Mutex
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(FilteringResourceEventHandler[*corev1.Pod]{
		FilterFunc: func(p *corev1.Pod) bool {
			seenMu.Lock()
			seen = append(seen, p)
			seenMu.Unlock()
			return true
		},
		Handler: rec,
	})
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	rec.expect(t, plAdd("ns/a", "1", true), plAdd("ns/b", "1", true))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "2")))
	lw.SetList("5", NewPod("ns", "c", "4"))
	plMust(t, lw.FailWatch(ctx, apierrors.NewResourceExpired("gone")))
	got := rec.waitFor(t, 6)[2:]
	slices.SortStableFunc(got[1:3], func(x, y plEvent) int { return strings.Compare(x.Key, y.Key) })
	want := []plEvent{plUpdate("ns/a", "1", "2"), plDelete("ns/a", "2", true), plDelete("ns/b", "1", true), plAdd("ns/c", "4", false)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	for p, n := range calls {
		if n != 1 {
			t.Errorf("%s@%s transformed %d times, want once", p.Name, p.ResourceVersion, n)
		}
	}
	// a, bad and b from the list, a@2 from the watch, c from the relist;
	// the final-state-unknown deletions are not transformed again.
	if len(calls) != 5 {
		t.Errorf("transformed %d objects, want 5", len(calls))
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	for _, p := range seen {
		if p.Labels["transformed"] != "yes" || p.Annotations != nil {
			t.Errorf("handler saw an untransformed object %s@%s", p.Name, p.ResourceVersion)
		}
	}
	if got := inf.Stats().TransformErrors; got != 1 {
		t.Errorf("transform errors = %d, want 1", got)
	}
}

func TestResyncRightAfterAnUpdateDeliversTheUpdatedState(t *testing.T) {
	// client-go's TestRealFIFO_UpdateResyncRace: a resync queued right after
	// an update must not re-deliver the state before the update.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("5", NewPod("ns", "foo", "5"))
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	rec.expect(t, plAdd("ns/foo", "5", true))
	plMust(t, inf.queue.Update(NewPod("ns", "foo", "6")))
	plMust(t, inf.queue.Resync())
	plMust(t, inf.queue.Update(NewPod("ns", "foo", "7")))
	plMust(t, inf.queue.Resync())
	rec.expect(t, plAdd("ns/foo", "5", true),
		plUpdate("ns/foo", "5", "6"), plUpdate("ns/foo", "6", "6"),
		plUpdate("ns/foo", "6", "7"), plUpdate("ns/foo", "7", "7"))
}

func TestShutdownLeavesNoGoroutine(t *testing.T) {
	t.Run("never run", func(t *testing.T) {
		checkGoroutines := ExpectNoGoroutineLeak(t)
		inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
		reg, err := inf.AddEventHandler(newPLRecorder())
		plMust(t, err)
		plMust(t, inf.ShutDownEventHandler(reg))
		checkGoroutines()
	})
	t.Run("stopped while events flow", func(t *testing.T) {
		checkGoroutines := ExpectNoGoroutineLeak(t)
		inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Second)})
		lw.SetList("1", NewPod("ns", "a", "1"))
		_, err := inf.AddEventHandler(newPLRecorder())
		plMust(t, err)
		runCtx, stop := context.WithCancel(plCtx(t))
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			inf.Run(runCtx)
		}()
		Eventually(t, "informer synced", inf.HasSynced)
		_, err = inf.AddEventHandler(newPLRecorder())
		plMust(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		sent := make(chan struct{})
		var modified atomic.Int64
		go func() {
			defer close(sent)
			for i := 2; lw.Modify(ctx, NewPod("ns", "a", strconv.Itoa(i))) == nil; i++ {
				modified.Add(1)
			}
		}()
		// Stop once events flow: the informer has taken a few.
		Eventually(t, "events flowing", func() bool { return modified.Load() >= 3 })
		stop()
		select {
		case <-ran:
		case <-time.After(plTimeout): // a failure guard, not a timing assertion
			t.Fatal("Run did not return after its context was cancelled")
		}
		cancel() // the producer, once Run has returned
		<-sent
		checkGoroutines()
		if !inf.IsStopped() {
			t.Fatal("not stopped")
		}
	})
	t.Run("stopped while a bounded handler holds the informer back", func(t *testing.T) {
		inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
		lw.SetList("1")
		release := make(chan struct{})
		blocked := newPLRecorder()
		blocked.hook = func(plEvent) { <-release }
		_, err := inf.AddEventHandlerWithOptions(blocked, HandlerOptions{MaxPending: 1})
		plMust(t, err)
		stop := plRun(t, inf)
		ctx := plCtx(t)
		for i := range 5 {
			plMust(t, lw.Add(ctx, NewPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(i+2))))
		}
		time.AfterFunc(20*time.Millisecond, func() { close(release) })
		stop() // returns once the handler call in progress has returned
	})
}

func TestCacheReadsWhileEventsFlow(t *testing.T) {
	// Meant for -race: handlers and other goroutines read the cache while
	// the informer updates the same objects in place.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"))
	rec := newPLRecorder()
	rec.hook = func(e plEvent) {
		_, _ = inf.Lister().Namespace("ns").Get("a")
	}
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	readers := make(chan struct{})
	go func() {
		defer close(readers)
		for len(rec.get()) < 200 {
			_, _, _ = inf.indexer.GetByKey("ns/a")
			_, _ = inf.Lister().Get("ns/a")
			_ = inf.indexer.List()
			_, _ = inf.indexer.ByIndex(NamespaceIndex, "ns")
			_, _ = inf.Lister().List(labels.Everything())
			_, _ = inf.Lister().Namespace("ns").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
		}
	}()
	for i := 2; i <= 200; i++ {
		p := NewPod("ns", "a", strconv.Itoa(i))
		if i%2 == 0 {
			p.Labels = map[string]string{"app": "web"}
		}
		plMust(t, lw.Modify(ctx, p))
	}
	rec.waitFor(t, 200)
	<-readers
}

func TestStatsCountTheBadInputTheReflectorDropped(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DisableWatchList: true})
	lw.SetList("1", NewPod("ns", "a", "1"), NewPod("ns", "", "1")) // a nameless item
	plRun(t, inf)
	Eventually(t, "sync", inf.HasSynced)
	ctx := plCtx(t)
	for _, ev := range []watch.Event{
		{Type: watch.Added, Object: NewPod("ns", "", "2")}, // nameless
		{Type: watch.Added},                                 // nil object
		{Type: watch.Added, Object: &corev1.Node{}},         // wrong type
		{Type: watch.Added, Object: NewPod("ns", "b", "3")}, // valid: applied last
	} {
		plMust(t, lw.Send(ctx, ev))
	}
	Eventually(t, "the last event applied", func() bool {
		_, err := inf.Lister().Get("ns/b")
		return err == nil
	})
	want := InformerStats{InvalidListItems: 1, DroppedEvents: 3}
	if diff := cmp.Diff(want, inf.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}
