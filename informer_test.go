package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
)

// plTimeout bounds every wait in the pipeline tests.
const plTimeout = 20 * time.Second

// plPod returns a pod with the given namespace, name and resource version.
func plPod(namespace, name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
}

// plEvent is one notification as a handler saw it, comparable with cmp.Diff.
type plEvent struct {
	Op      string // "add", "update" or "delete"
	Key     string
	RV      string // the new (or deleted) object's resource version
	OldRV   string // update only
	Initial bool   // add only
	FSU     bool   // delete only
}

func plAdd(key, rv string, initial bool) plEvent {
	return plEvent{Op: "add", Key: key, RV: rv, Initial: initial}
}
func plUpdate(key, oldRV, rv string) plEvent {
	return plEvent{Op: "update", Key: key, RV: rv, OldRV: oldRV}
}
func plDelete(key, rv string, fsu bool) plEvent {
	return plEvent{Op: "delete", Key: key, RV: rv, FSU: fsu}
}

// plRecorder is a handler that records what it receives. hook, if set, runs
// for every notification before it is recorded.
type plRecorder struct {
	hook    func(plEvent)
	mu      sync.Mutex
	events  []plEvent
	changed chan struct{}
}

func newPLRecorder() *plRecorder { return &plRecorder{changed: make(chan struct{})} }

func (r *plRecorder) OnAdd(obj *corev1.Pod, initial bool) {
	r.record(plAdd(KeyOf(obj), obj.ResourceVersion, initial))
}
func (r *plRecorder) OnUpdate(oldObj, newObj *corev1.Pod) {
	r.record(plUpdate(KeyOf(newObj), oldObj.ResourceVersion, newObj.ResourceVersion))
}
func (r *plRecorder) OnDelete(d DeletedObject[*corev1.Pod]) {
	if d.Name != NameOf(d.Object) {
		panic(fmt.Sprintf("DeletedObject name %v does not match its object %v", d.Name, NameOf(d.Object)))
	}
	r.record(plDelete(d.Name.String(), d.Object.ResourceVersion, d.FinalStateUnknown))
}

func (r *plRecorder) record(e plEvent) {
	if r.hook != nil {
		r.hook(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// get returns a copy of the events recorded so far.
func (r *plRecorder) get() []plEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plEvent(nil), r.events...)
}

// reset forgets the events recorded so far.
func (r *plRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}

// waitFor waits until at least n events were recorded and returns them.
func (r *plRecorder) waitFor(t testing.TB, n int) []plEvent {
	t.Helper()
	deadline := time.After(plTimeout)
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			events := append([]plEvent(nil), r.events...)
			r.mu.Unlock()
			return events
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %d events, got %v", n, r.get())
		}
	}
}

// expect waits for len(want) events and compares the whole sequence.
func (r *plRecorder) expect(t testing.TB, want ...plEvent) {
	t.Helper()
	got := r.waitFor(t, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// plEventually polls cond until it holds or the test times out.
func plEventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(plTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// plPipelineGoroutines returns the stacks of goroutines running the
// pipeline's code.
func plPipelineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"informer.(*listener[", "informer.(*Informer[", "informer.(*Reflector["} {
			if strings.Contains(g, marker) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}

// plExpectNoGoroutines fails if a pipeline goroutine is still running
// shortly after every informer was stopped.
func plExpectNoGoroutines(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := plPipelineGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines outlived Run:\n%s", strings.Join(left, "\n\n"))
		}
		time.Sleep(time.Millisecond)
	}
}

// plFastBackoff makes relists immediate in tests.
var plFastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

// plInformer returns an informer over a new fake with a namespace index and
// fast retries.
func plInformer(opts InformerOptions[*corev1.Pod]) (*Informer[*corev1.Pod], *FakeListerWatcher[*corev1.Pod]) {
	lw := NewFakeListerWatcher[*corev1.Pod]()
	if opts.Indexers == nil {
		opts.Indexers = Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}
	}
	if opts.Backoff == nil {
		opts.Backoff = plFastBackoff
	}
	return NewInformer[*corev1.Pod](lw, opts), lw
}

// plRun runs inf until the test ends (or stop is called) and then checks
// that Run returned and left no goroutine behind.
func plRun[T Object](t testing.TB, inf *Informer[T]) (stop func()) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(plTimeout):
				t.Errorf("Run did not return after its context was cancelled")
			}
			plExpectNoGoroutines(t)
		})
	}
	t.Cleanup(stop)
	return stop
}

// plMust fails the test on error.
func plMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// plCtx is a context for fake calls bounded by the test timeout.
func plCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), plTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestInformerDeliversListThenWatchInOrder(t *testing.T) {
	inf, lw := plInformer(InformerOptions[*corev1.Pod]{})
	lw.SetList("10", plPod("ns", "a", "1"), plPod("ns", "b", "2"))
	rec := newPLRecorder()
	reg, err := inf.AddEventHandler(rec)
	plMust(t, err)
	if reg.HasSynced() || inf.HasSynced() {
		t.Fatal("synced before Run")
	}
	plRun(t, inf)
	ctx := plCtx(t)

	rec.expect(t, plAdd("ns/a", "1", true), plAdd("ns/b", "2", true))
	plEventually(t, "registration synced", reg.HasSynced)
	if !inf.HasSynced() {
		t.Fatal("informer not synced while its handler is")
	}
	plMust(t, lw.Add(ctx, plPod("ns", "c", "11")))
	plMust(t, lw.Modify(ctx, plPod("ns", "a", "12")))
	plMust(t, lw.Modify(ctx, plPod("ns", "a", "13")))
	plMust(t, lw.Delete(ctx, plPod("ns", "b", "14")))
	plMust(t, lw.Add(ctx, plPod("ns", "b", "15")))
	rec.expect(t,
		plAdd("ns/a", "1", true), plAdd("ns/b", "2", true),
		plAdd("ns/c", "11", false),
		plUpdate("ns/a", "1", "12"),
		plUpdate("ns/a", "12", "13"),
		plDelete("ns/b", "14", false),
		plAdd("ns/b", "15", false),
	)
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/c"}, plKeys(inf.Indexer().List())); diff != "" {
		t.Errorf("cache keys (-want +got):\n%s", diff)
	}
	if got := inf.Indexer().LastStoreSyncResourceVersion(); got != "15" {
		t.Errorf("store resource version = %q, want 15", got)
	}
}

// plKeys returns the sorted keys of pods.
func plKeys(pods []*corev1.Pod) []string {
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, KeyOf(p))
	}
	slices.Sort(keys)
	return keys
}

func TestInformerUpdatesTheStoreBeforeNotifying(t *testing.T) {
	// Resource versions grow with every event here, so the store's resource
	// version (set by every write) tells whether an event reached the store.
	inf, lw := plInformer(InformerOptions[*corev1.Pod]{})
	lw.SetList("1", plPod("ns", "a", "1"))
	rec := newPLRecorder()
	var mu sync.Mutex
	var violations []string
	rec.hook = func(e plEvent) {
		storeRV := inf.Indexer().LastStoreSyncResourceVersion()
		if plRV(plPod("", "", storeRV)) < plRV(plPod("", "", e.RV)) {
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
		plMust(t, lw.Modify(ctx, plPod("ns", "a", strconv.Itoa(i))))
		plMust(t, lw.Add(ctx, plPod("ns", "b"+strconv.Itoa(i), strconv.Itoa(i+1))))
	}
	plMust(t, lw.Delete(ctx, plPod("ns", "a", "300")))
	rec.waitFor(t, 1+99*2+1)
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("handlers ran before the store was updated:\n%s", strings.Join(violations, "\n"))
	}
}

// plRV returns a pod's resource version as a number.
func plRV(p *corev1.Pod) int {
	n, _ := strconv.Atoi(p.ResourceVersion)
	return n
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
		relisted: []*corev1.Pod{plPod("default", "pod-1", "1")},
		want:     []plEvent{plAdd("default/pod-1", "1", false)},
	}, {
		name:    "delete all objects",
		initial: []*corev1.Pod{plPod("default", "pod-1", "1"), plPod("default", "pod-3", "2")},
		want:    []plEvent{plDelete("default/pod-1", "1", true), plDelete("default/pod-3", "2", true)},
	}, {
		name: "create, update, delete",
		initial: []*corev1.Pod{plPod("default", "pod-1", "1"), plPod("default", "pod-2", "2"),
			plPod("default", "pod-3", "3")},
		relisted: []*corev1.Pod{plPod("default", "pod-1", "4"), plPod("default", "pod-2", "5"),
			plPod("default", "pod-4", "6")},
		want: []plEvent{plDelete("default/pod-3", "3", true), plUpdate("default/pod-1", "1", "4"),
			plUpdate("default/pod-2", "2", "5"), plAdd("default/pod-4", "6", false)},
	}, {
		name:     "unchanged objects are resync updates",
		initial:  []*corev1.Pod{plPod("default", "pod-1", "1"), plPod("default", "pod-2", "2")},
		relisted: []*corev1.Pod{plPod("default", "pod-2", "2"), plPod("default", "pod-1", "1")},
		want:     []plEvent{plUpdate("default/pod-2", "2", "2"), plUpdate("default/pod-1", "1", "1")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inf, lw := plInformer(InformerOptions[*corev1.Pod]{})
			lw.SetList("10", tc.initial...)
			rec := newPLRecorder()
			// The relist must be in the store before any of its
			// notifications (a panic here is recovered, counted and
			// checked below).
			rec.hook = func(e plEvent) {
				if rv := inf.Indexer().LastStoreSyncResourceVersion(); rv != "10" && rv != "20" {
					panic(fmt.Sprintf("store at %q when notified of %v", rv, e))
				}
				if (e.Op == "delete" || !e.Initial) && inf.Indexer().LastStoreSyncResourceVersion() != "20" {
					panic(fmt.Sprintf("relist not stored before %v", e))
				}
			}
			reg, err := inf.AddEventHandler(rec)
			plMust(t, err)
			plRun(t, inf)
			plEventually(t, "informer synced", inf.HasSynced)
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
			if diff := cmp.Diff(plKeys(tc.relisted), plKeys(inf.Indexer().List())); diff != "" {
				t.Fatalf("cache keys (-want +got):\n%s", diff)
			}
			if got := inf.Indexer().LastStoreSyncResourceVersion(); got != "20" {
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
	// arrive with the relist, not flagged as initial.
	inf, lw := plInformer(InformerOptions[*corev1.Pod]{DisableWatchList: true})
	lw.SetList("1", plPod("default", "pod-1", "1"))
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	rec.expect(t, plAdd("default/pod-1", "1", true))
	rec.reset()

	plMust(t, lw.Bookmark(ctx, "2"))
	lw.SetList("4", plPod("default", "pod-1", "3"), plPod("default", "pod-2", "4"))
	lw.FailNextWatch(apierrors.NewResourceExpired("too old resource version"))
	plMust(t, lw.CloseWatch(ctx))
	rec.expect(t, plUpdate("default/pod-1", "1", "3"), plAdd("default/pod-2", "4", false))
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
	inf, lw := plInformer(InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, lw.Add(ctx, plPod("ns", "a", "5")))
	plMust(t, lw.Bookmark(ctx, "9"))
	plMust(t, lw.Add(ctx, plPod("ns", "b", "10")))
	rec.expect(t, plAdd("ns/a", "5", false), plAdd("ns/b", "10", false))
	if got := inf.Indexer().LastStoreSyncResourceVersion(); got != "10" {
		t.Fatalf("store resource version = %q, want 10", got)
	}
	plMust(t, lw.Bookmark(ctx, "12"))
	plEventually(t, "bookmark applied", func() bool { return inf.Indexer().LastStoreSyncResourceVersion() == "12" })
	plEventually(t, "reflector saw the bookmark", func() bool { return inf.LastSyncResourceVersion() == "12" })
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
	inf, lw := plInformer(InformerOptions[*corev1.Pod]{Transform: transform})
	a := plPod("ns", "a", "1")
	a.Annotations = map[string]string{"big": "value"}
	lw.SetList("1", a, plPod("ns", "bad", "1"), plPod("ns", "b", "1"))
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
	plMust(t, lw.Modify(ctx, plPod("ns", "a", "2")))
	lw.SetList("5", plPod("ns", "c", "4"))
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
