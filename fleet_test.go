package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer/informertest"
)

// fleetEvent is one notification a fleet handler saw.
type fleetEvent struct {
	Cluster string
	Event   plEvent
	Removed bool // delete only: DeletedObject.ClusterRemoved
	Moved   bool // delete only: DeletedObject.Moved
}

// fleetRecorder records a fleet handler's notifications.
type fleetRecorder struct {
	mu     sync.Mutex
	events []fleetEvent
}

func (r *fleetRecorder) OnAdd(cluster string, obj *corev1.Pod, initial bool) {
	r.record(fleetEvent{Cluster: cluster, Event: plAdd(KeyOf(obj), obj.ResourceVersion, initial)})
}
func (r *fleetRecorder) OnUpdate(cluster string, oldObj, newObj *corev1.Pod) {
	r.record(fleetEvent{Cluster: cluster, Event: plUpdate(KeyOf(newObj), oldObj.ResourceVersion, newObj.ResourceVersion)})
}
func (r *fleetRecorder) OnDelete(cluster string, d DeletedObject[*corev1.Pod]) {
	r.record(fleetEvent{Cluster: cluster, Event: plDelete(d.Name.String(), d.Object.ResourceVersion, d.FinalStateUnknown), Removed: d.ClusterRemoved, Moved: d.Moved})
}
func (r *fleetRecorder) record(e fleetEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// byCluster returns the events of each cluster, in order.
func (r *fleetRecorder) byCluster() map[string][]fleetEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]fleetEvent{}
	for _, e := range r.events {
		out[e.Cluster] = append(out[e.Cluster], e)
	}
	return out
}

// waitFor waits until the recorder holds n events and returns them by
// cluster.
func (r *fleetRecorder) waitFor(t testing.TB, n int) map[string][]fleetEvent {
	t.Helper()
	Eventually(t, fmt.Sprintf("%d fleet events", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.events) >= n
	})
	return r.byCluster()
}

// newTestFleet returns a fleet of opts with fast retries.
func newTestFleet(t testing.TB, opts FleetOptions[*corev1.Pod]) *Fleet[*corev1.Pod] {
	t.Helper()
	if opts.Informer.Backoff == nil {
		opts.Informer.Backoff = plFastBackoff
	}
	f, err := NewFleet(opts)
	plMust(t, err)
	return f
}

// runFleet runs f until the test ends (or stop is called), then checks
// that Run returned and left no goroutine behind.
func runFleet(t testing.TB, f *Fleet[*corev1.Pod]) (stop func()) {
	t.Helper()
	checkGoroutines := ExpectNoGoroutineLeak(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(plTimeout): // a failure guard, not a timing assertion
				t.Fatalf("Fleet.Run did not return after its context was cancelled:\n%s", strings.Join(plPipelineGoroutines(), "\n\n"))
			}
			checkGoroutines()
		})
	}
	t.Cleanup(stop)
	return stop
}

// fakeCluster returns a fake ListerWatcher listing pods at rv.
func fakeCluster(rv string, pods ...*corev1.Pod) *informertest.FakeListerWatcher[*corev1.Pod] {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList(rv, pods...)
	return lw
}

func TestFleetHandlersLearnTheCluster(t *testing.T) {
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	a := fakeCluster("10", NewPod("ns", "p", "5"), NewPod("ns", "q", "6"))
	b := fakeCluster("20", NewPod("ns", "p", "7")) // the same name in another cluster
	plMust(t, f.AddClusterListerWatcher("a", a))
	plMust(t, f.AddClusterListerWatcher("b", b))
	rec := &fleetRecorder{}
	_, err := f.AddEventHandler(rec)
	plMust(t, err)
	runFleet(t, f)
	Eventually(t, "fleet synced", f.HasSynced)

	ctx := plCtx(t)
	plMust(t, a.Modify(ctx, NewPod("ns", "p", "11")))
	plMust(t, b.Delete(ctx, NewPod("ns", "p", "21")))
	plMust(t, a.Add(ctx, NewPod("ns", "r", "12")))
	got := rec.waitFor(t, 6)
	want := map[string][]fleetEvent{
		"a": {
			{Cluster: "a", Event: plAdd("ns/p", "5", true)},
			{Cluster: "a", Event: plAdd("ns/q", "6", true)},
			{Cluster: "a", Event: plUpdate("ns/p", "5", "11")},
			{Cluster: "a", Event: plAdd("ns/r", "12", false)},
		},
		"b": {
			{Cluster: "b", Event: plAdd("ns/p", "7", true)},
			{Cluster: "b", Event: plDelete("ns/p", "21", false)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events by cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, f.Clusters()); diff != "" {
		t.Errorf("Clusters (-want +got):\n%s", diff)
	}
}

func TestFleetHandlerAddedAfterStartGetsEveryClusterAsAdds(t *testing.T) {
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	plMust(t, f.AddClusterListerWatcher("a", fakeCluster("1", NewPod("ns", "p", "1"))))
	runFleet(t, f)
	Eventually(t, "fleet synced", f.HasSynced)
	plMust(t, f.AddClusterListerWatcher("b", fakeCluster("1", NewPod("ns", "q", "1"))))
	Eventually(t, "fleet synced with b", f.HasSynced)
	rec := &fleetRecorder{}
	reg, err := f.AddEventHandler(rec)
	plMust(t, err)
	got := rec.waitFor(t, 2)
	want := map[string][]fleetEvent{
		"a": {{Cluster: "a", Event: plAdd("ns/p", "1", true)}},
		"b": {{Cluster: "b", Event: plAdd("ns/q", "1", true)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events by cluster (-want +got):\n%s", diff)
	}
	Eventually(t, "registration synced", reg.HasSynced)
	if diff := cmp.Diff(HandlerStats{Delivered: 2}, reg.Stats()); diff != "" {
		t.Errorf("registration stats (-want +got):\n%s", diff)
	}
	plMust(t, f.RemoveEventHandler(reg))
	plMust(t, f.RemoveEventHandler(reg)) // idempotent
	other := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	if err := other.RemoveEventHandler(reg); err == nil {
		t.Error("another fleet removed the registration")
	}
}

func TestFleetListerAcrossClusters(t *testing.T) {
	web := PodLabels(map[string]string{"app": "web"})
	db := PodLabels(map[string]string{"app": "db"})
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{Informer: InformerOptions[*corev1.Pod]{
		Indexers: map[string]IndexFunc[*corev1.Pod]{"node": func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }},
	}})
	plMust(t, f.AddClusterListerWatcher("b", fakeCluster("1", NewPod("ns", "w1", "1", web, PodNode("n1")), NewPod("other", "w2", "1", web))))
	plMust(t, f.AddClusterListerWatcher("a", fakeCluster("1", NewPod("ns", "w1", "1", web), NewPod("ns", "d1", "1", db, PodNode("n1")))))
	runFleet(t, f)
	Eventually(t, "fleet synced", f.HasSynced)

	names := func(objs []ClusterObject[*corev1.Pod], err error) []string {
		t.Helper()
		plMust(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.Cluster+"/"+KeyOf(o.Object))
		}
		slices.Sort(out)
		return out
	}
	l := f.Lister()
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"List app=web", names(l.List(labels.SelectorFromSet(labels.Set{"app": "web"}))), []string{"a/ns/w1", "b/ns/w1", "b/other/w2"}},
		{"List everything", names(l.List(labels.Everything())), []string{"a/ns/d1", "a/ns/w1", "b/ns/w1", "b/other/w2"}},
		{"Namespace ns app=web", names(l.Namespace("ns").List(labels.SelectorFromSet(labels.Set{"app": "web"}))), []string{"a/ns/w1", "b/ns/w1"}},
		{"ByIndex node n1", names(l.ByIndex("node", "n1")), []string{"a/ns/d1", "b/ns/w1"}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := l.ByIndex("missing", "x"); err == nil {
		t.Error("ByIndex of a missing index did not fail")
	}
	a, ok := l.Cluster("a")
	if !ok {
		t.Fatal("no cluster a")
	}
	pod, err := a.Namespace("ns").Get("d1")
	plMust(t, err)
	if diff := cmp.Diff("ns/d1", KeyOf(pod)); diff != "" {
		t.Errorf("cluster a's Get (-want +got):\n%s", diff)
	}
	if _, ok := l.Cluster("c"); ok {
		t.Error("Cluster of an unknown name found one")
	}
}

func TestFleetRemoveClusterDeliversDeletesAndReaddStartsAfterThem(t *testing.T) {
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	plMust(t, f.AddClusterListerWatcher("a", fakeCluster("1", NewPod("ns", "p", "1"), NewPod("ns", "q", "1"))))
	plMust(t, f.AddClusterListerWatcher("b", fakeCluster("1", NewPod("ns", "p", "1"))))
	rec := &fleetRecorder{}
	_, err := f.AddEventHandler(rec)
	plMust(t, err)
	runFleet(t, f)
	Eventually(t, "fleet synced", f.HasSynced)
	rec.waitFor(t, 3)

	plMust(t, f.RemoveCluster("a"))
	if err := f.RemoveCluster("a"); err == nil {
		t.Error("a second RemoveCluster did not fail")
	}
	// The re-added cluster's adds come after the old one's deletes.
	plMust(t, f.AddClusterListerWatcher("a", fakeCluster("5", NewPod("ns", "p", "5"))))
	got := rec.waitFor(t, 6)
	want := []fleetEvent{
		{Cluster: "a", Event: plAdd("ns/p", "1", true)},
		{Cluster: "a", Event: plAdd("ns/q", "1", true)},
		{Cluster: "a", Event: plDelete("ns/p", "1", false), Removed: true},
		{Cluster: "a", Event: plDelete("ns/q", "1", false), Removed: true},
		{Cluster: "a", Event: plAdd("ns/p", "5", true)},
	}
	if diff := cmp.Diff(want, got["a"]); diff != "" {
		t.Errorf("cluster a's events (-want +got):\n%s", diff)
	}
	Eventually(t, "fleet synced again", f.HasSynced)
	objs, err := f.Lister().List(labels.Everything())
	plMust(t, err)
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Cluster+"/"+KeyOf(o.Object)+"@"+o.Object.ResourceVersion)
	}
	if diff := cmp.Diff([]string{"a/ns/p@5", "b/ns/p@1"}, keys); diff != "" {
		t.Errorf("fleet contents (-want +got):\n%s", diff)
	}
}

func TestEnqueueFleetSkipsRemovedClusters(t *testing.T) {
	q := workqueue.NewTyped[ClusterObjectName]()
	defer q.ShutDown()
	h := EnqueueFleet[*corev1.Pod](q)
	p := NewPod("ns", "p", "1")
	h.OnAdd("a", p, true)
	h.OnUpdate("b", p, p)
	h.OnDelete("c", DeletedObject[*corev1.Pod]{Name: NameOf(p), Object: p})
	h.OnDelete("d", DeletedObject[*corev1.Pod]{Name: NameOf(p), Object: p, ClusterRemoved: true})
	var got []string
	for q.Len() > 0 {
		k, _ := q.Get()
		got = append(got, k.String())
		q.Done(k)
	}
	if diff := cmp.Diff([]string{"a/ns/p", "b/ns/p", "c/ns/p"}, got); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}

// hangingListerWatcher lists and watches nothing: every call blocks until
// its context ends, as a server stopped with SIGSTOP does.
type hangingListerWatcher struct{ lists chan struct{} }

func (h hangingListerWatcher) List(ctx context.Context, _ metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	select {
	case h.lists <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (h hangingListerWatcher) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestFleetFailedClustersDoNotHoldUpTheOthers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{
		Informer:           InformerOptions[*corev1.Pod]{Clock: clk},
		MaxConcurrentSyncs: 1,
		SyncTimeout:        time.Minute,
	})
	hung := hangingListerWatcher{lists: make(chan struct{}, 1)}
	denied := fakeCluster("1")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC says no"))
	denied.FailNextList(slices.Repeat([]error{forbidden}, 1<<20)...)
	plMust(t, f.AddClusterListerWatcher("hung", hung))
	rec := &fleetRecorder{}
	_, err := f.AddEventHandler(rec)
	plMust(t, err)
	runFleet(t, f)
	<-hung.lists // the hung cluster holds the only sync slot
	plMust(t, f.AddClusterListerWatcher("denied", denied))
	plMust(t, f.AddClusterListerWatcher("ok", fakeCluster("1", NewPod("ns", "p", "1"))))
	// Once the hung list has held its slot for syncSlotHold, the others
	// list: the denied one fails and gives the slot to the healthy one.
	Eventually(t, "the slot timer", clk.HasWaiters)
	clk.Step(syncSlotHold)
	got := rec.waitFor(t, 1)
	if diff := cmp.Diff(map[string][]fleetEvent{"ok": {{Cluster: "ok", Event: plAdd("ns/p", "1", true)}}}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if f.HasSynced() {
		t.Error("the fleet is synced before the failing clusters' SyncTimeout")
	}
	clk.Step(time.Minute)
	Eventually(t, "fleet ready with two failed clusters", f.HasSynced)

	type state struct {
		Name    string
		State   ClusterState
		Objects int
		Denied  bool
	}
	var states []state
	s := f.Stats()
	for _, c := range s.Clusters {
		states = append(states, state{c.Name, c.State, c.Objects, apierrors.IsForbidden(c.LastError)})
	}
	want := []state{{"denied", ClusterFailed, 0, true}, {"hung", ClusterFailed, 0, false}, {"ok", ClusterSynced, 1, false}}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("cluster states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([3]int{1, 0, 2}, [3]int{s.Synced, s.Syncing, s.Failed}); diff != "" {
		t.Errorf("synced, syncing, failed (-want +got):\n%s", diff)
	}
	// A failing cluster never blocks removal.
	plMust(t, f.RemoveCluster("hung"))
	plMust(t, f.RemoveCluster("denied"))
}

// fleetMetrics is a FleetMetricsProvider that logs registrations and
// removals, and keeps the fleet's read function.
type fleetMetrics struct {
	mu   sync.Mutex
	log  []string
	read func() FleetStats
}

func (p *fleetMetrics) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, s)
}

func (p *fleetMetrics) AddInformer(id InformerID, _ func() InformerSnapshot) InformerMetrics {
	p.record("add informer " + id.Name)
	return fleetInformerMetrics{p, id.Name}
}

func (p *fleetMetrics) AddFleet(id InformerID, read func() FleetStats) func() {
	p.mu.Lock()
	p.read = read
	p.mu.Unlock()
	p.record("add fleet " + id.Name)
	return func() { p.record("remove fleet " + id.Name) }
}

type fleetInformerMetrics struct {
	p    *fleetMetrics
	name string
}

func (m fleetInformerMetrics) AddHandler(string, func() HandlerStats) HandlerMetrics { return nil }
func (m fleetInformerMetrics) Remove()                                               { m.p.record("remove informer " + m.name) }

func TestFleetRegistersWithAFleetMetricsProvider(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	metrics := &fleetMetrics{}
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{
		Informer:    InformerOptions[*corev1.Pod]{Name: "pods", Clock: clk, Metrics: metrics},
		SyncTimeout: time.Minute,
	})
	denied := fakeCluster("1")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC says no"))
	denied.FailNextList(slices.Repeat([]error{forbidden}, 1<<20)...)
	plMust(t, f.AddClusterListerWatcher("denied", denied))
	plMust(t, f.AddClusterListerWatcher("ok", fakeCluster("1", NewPod("ns", "p", "1"))))
	stop := runFleet(t, f)
	Eventually(t, "the fleet registered", func() bool {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return metrics.read != nil
	})
	Eventually(t, "ok synced", func() bool { return metrics.read().Synced == 1 })
	clk.Step(time.Minute)
	Eventually(t, "denied failed", func() bool { return metrics.read().Failed == 1 })
	stop()

	metrics.mu.Lock()
	log := slices.Clone(metrics.log)
	metrics.mu.Unlock()
	// The informers register from their own goroutines, in any order; the
	// fleet is removed last.
	slices.Sort(log[:len(log)-1])
	want := []string{"add fleet pods", "add informer pods/denied", "add informer pods/ok", "remove informer pods/denied", "remove informer pods/ok", "remove fleet pods"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}
}

func TestFleetAddAndRemoveLeaveNothingBehind(t *testing.T) {
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	rec := &fleetRecorder{}
	_, err := f.AddEventHandler(rec)
	plMust(t, err)
	stop := runFleet(t, f)
	var gone []weak.Pointer[Informer[*corev1.Pod]]
	for round := range 3 {
		for k := range 20 {
			name := fmt.Sprintf("c%d", k)
			plMust(t, f.AddClusterListerWatcher(name, fakeCluster("1", NewPod("ns", fmt.Sprintf("p%d", round), "1"))))
		}
		Eventually(t, "fleet synced", f.HasSynced)
		// Removal drops the notifications not delivered yet: wait for the
		// adds, so that each cluster's events are known.
		rec.waitFor(t, round*40+20)
		f.mu.Lock()
		for _, c := range f.clusters {
			gone = append(gone, weak.Make(c.run.Load().inf))
		}
		f.mu.Unlock()
		for k := range 20 {
			plMust(t, f.RemoveCluster(fmt.Sprintf("c%d", k)))
		}
	}
	Eventually(t, "every removal delivered", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.leaving) == 0
	})
	got := rec.byCluster()
	for k := range 20 {
		name := fmt.Sprintf("c%d", k)
		var want []fleetEvent
		for round := range 3 {
			key := fmt.Sprintf("ns/p%d", round)
			want = append(want, fleetEvent{Cluster: name, Event: plAdd(key, "1", true)},
				fleetEvent{Cluster: name, Event: plDelete(key, "1", false), Removed: true})
		}
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("cluster %s's events (-want +got):\n%s", name, diff)
		}
	}
	// Nothing the fleet holds keeps a removed cluster's informer.
	Eventually(t, "removed informers collected", func() bool {
		runtime.GC()
		for _, w := range gone {
			if w.Value() != nil {
				return false
			}
		}
		return true
	})
	stop()
}

func TestFleetOptionsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts FleetOptions[*corev1.Pod]
		want string
	}{
		{"DropFields", FleetOptions[*corev1.Pod]{Informer: InformerOptions[*corev1.Pod]{DropFields: []string{ManagedFields}}}, "REST.DropFields"},
		{"Shard", FleetOptions[*corev1.Pod]{Informer: InformerOptions[*corev1.Pod]{Shard: &Shard{By: ShardByUID, Count: 2}}}, "Shard"},
		{"DisableWatchList", FleetOptions[*corev1.Pod]{Informer: InformerOptions[*corev1.Pod]{DisableWatchList: true}}, "DisableWatchList"},
		{"negative resync", FleetOptions[*corev1.Pod]{Informer: InformerOptions[*corev1.Pod]{ResyncPeriod: new(-time.Second)}}, "negative"},
		{"resources differ", FleetOptions[*corev1.Pod]{
			Informer: InformerOptions[*corev1.Pod]{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
			REST:     RESTOptions{Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}},
		}, "differ"},
	} {
		_, err := NewFleet(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewFleet error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	f := newTestFleet(t, FleetOptions[*corev1.Pod]{})
	for _, name := range []string{"", ".", "..", "a/b", strings.Repeat("x", 254)} {
		if err := f.AddClusterListerWatcher(name, fakeCluster("1")); err == nil {
			t.Errorf("AddClusterListerWatcher(%q) did not fail", name)
		}
	}
	plMust(t, f.AddClusterListerWatcher("a", fakeCluster("1")))
	if err := f.AddClusterListerWatcher("a", fakeCluster("1")); err == nil {
		t.Error("a second cluster named a was added")
	}
	if err := f.AddCluster("b", nil); err == nil {
		t.Error("AddCluster with a nil config did not fail")
	}
	if err := f.UpdateCluster("a", nil); err == nil || !strings.Contains(err.Error(), "own ListerWatcher") {
		t.Errorf("UpdateCluster of a ListerWatcher's cluster: %v", err)
	}
}

func TestFleetGroupSplitsClustersAndTakesOver(t *testing.T) {
	clusters := make([]string, 12)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("cluster-%02d", i)
	}
	type replica struct {
		group *ShardGroup
		fleet *Fleet[*corev1.Pod]
		rec   *fleetRecorder
	}
	var replicas []replica
	for _, id := range []string{"a", "b"} {
		g, err := NewShardGroup(fake.NewClientset().CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: id})
		plMust(t, err)
		f := newTestFleet(t, FleetOptions[*corev1.Pod]{Group: g})
		for _, name := range clusters {
			plMust(t, f.AddClusterListerWatcher(name, fakeCluster("1", NewPod("ns", "p", "1"))))
		}
		rec := &fleetRecorder{}
		_, err = f.AddEventHandler(rec)
		plMust(t, err)
		replicas = append(replicas, replica{g, f, rec})
	}
	// One leak check for both: each replica starts goroutines after the
	// other has started.
	t.Cleanup(ExpectNoGoroutineLeak(t))
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	for _, r := range replicas {
		running.Go(func() { r.fleet.Run(ctx) })
	}
	// holders returns which replica runs each cluster, once every replica
	// is synced.
	holders := func() map[string][]string {
		out := map[string][]string{}
		for _, r := range replicas {
			Eventually(t, r.group.Identity()+" synced", r.fleet.HasSynced)
			for _, c := range r.fleet.Stats().Clusters {
				if c.State != ClusterElsewhere {
					out[c.Name] = append(out[c.Name], r.group.Identity())
				}
			}
		}
		return out
	}
	expected := func(members []string) map[string][]string {
		out := map[string][]string{}
		for _, id := range members {
			owned := ownedSlots(members, id)
			for _, name := range clusters {
				if owned.containsHash(clusterHash(name)) {
					out[name] = append(out[name], id)
				}
			}
		}
		return out
	}
	if replicas[0].fleet.HasSynced() {
		t.Error("a fleet with a Group is synced before the group's members are known")
	}
	both := []string{"a", "b"}
	for _, r := range replicas {
		r.group.publish(both)
	}
	want := expected(both)
	if len(want) != len(clusters) || len(expected([]string{"a"})) != len(clusters) {
		t.Fatalf("every cluster needs one holder: %v", want)
	}
	if diff := cmp.Diff(want, holders()); diff != "" {
		t.Fatalf("holders of [a b] (-want +got):\n%s", diff)
	}
	var movedToA []string
	for name, ids := range want {
		if ids[0] == "b" {
			movedToA = append(movedToA, name)
		}
	}
	if len(movedToA) == 0 || len(movedToA) == len(clusters) {
		t.Fatalf("b holds %d of %d clusters: the test needs a split", len(movedToA), len(clusters))
	}
	// b's Lease expired: a takes its clusters over, then gives them back
	// when b returns.
	a := replicas[0]
	a.group.publish([]string{"a"})
	Eventually(t, "a runs every cluster", func() bool { return a.fleet.HasSynced() && a.fleet.Stats().Elsewhere == 0 })
	a.group.publish(both)
	Eventually(t, "a gave b's clusters back", func() bool { return a.fleet.Stats().Elsewhere == len(movedToA) })
	got := a.rec.waitFor(t, len(clusters)-len(movedToA)+2*len(movedToA))
	for _, name := range movedToA {
		wantEvents := []fleetEvent{
			{Cluster: name, Event: plAdd("ns/p", "1", true)},
			{Cluster: name, Event: plDelete("ns/p", "1", false), Moved: true},
		}
		if diff := cmp.Diff(wantEvents, got[name]); diff != "" {
			t.Errorf("a's events of %s, taken over and given back (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff(want, holders()); diff != "" {
		t.Errorf("holders of [a b] again (-want +got):\n%s", diff)
	}
}

// pagedListerWatcher answers every list with one page that has more, as a
// server does for a read of one item out of many.
type pagedListerWatcher struct{}

func (pagedListerWatcher) List(context.Context, metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	return &ListResult[*corev1.Pod]{ResourceVersion: "7", Continue: "more"}, nil
}

func (pagedListerWatcher) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// TestFleetWatchReleasesTheSyncSlot checks that a cluster's watch gives
// back the slot of a list it never continued (a warm restart's one-item
// consistent read), rather than holding it for syncSlotHold.
func TestFleetWatchReleasesTheSyncSlot(t *testing.T) {
	slots := make(chan struct{}, 1)
	c := newClusterListerWatcher[*corev1.Pod]("a", pagedListerWatcher{}, nil, slots, clocktesting.NewFakeClock(time.Now()))
	ctx := context.Background()
	var held []int
	_, err := c.List(ctx, metav1.ListOptions{Limit: 1})
	plMust(t, err)
	held = append(held, len(slots))
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: "7"})
	plMust(t, err)
	defer w.Stop()
	held = append(held, len(slots))
	if diff := cmp.Diff([]int{1, 0}, held); diff != "" {
		t.Errorf("slots held after the list, then after the watch (-want +got):\n%s", diff)
	}
}
