package informer

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	testingclock "k8s.io/utils/clock/testing"
)

// resyncPeriods returns the informer's check period followed by the
// effective resync period of each registration.
func resyncPeriods(inf *Informer[*corev1.Pod], regs ...*Registration) []time.Duration {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.fan.proc.resyncMu.Lock()
	defer inf.fan.proc.resyncMu.Unlock()
	out := []time.Duration{inf.cfg.resyncCheckPeriod}
	for _, r := range regs {
		out = append(out, r.target.(*listener[*corev1.Pod]).resync.period)
	}
	return out
}

func addWithResync(t *testing.T, inf *Informer[*corev1.Pod], period time.Duration) *Registration {
	t.Helper()
	reg, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{ResyncPeriod: &period})
	plMust(t, err)
	return reg
}

func TestResyncCheckPeriodFollowsHandlersAddedBeforeStart(t *testing.T) {
	// client-go's TestResyncCheckPeriod.
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(12 * time.Hour)})
	r1 := addWithResync(t, inf, 0)
	if diff := cmp.Diff([]time.Duration{12 * time.Hour, 0}, resyncPeriods(inf, r1)); diff != "" {
		t.Fatalf("after handler 1 (-want +got):\n%s", diff)
	}
	r2 := addWithResync(t, inf, time.Minute)
	if diff := cmp.Diff([]time.Duration{time.Minute, 0, time.Minute}, resyncPeriods(inf, r1, r2)); diff != "" {
		t.Fatalf("after handler 2 (-want +got):\n%s", diff)
	}
	r3 := addWithResync(t, inf, 55*time.Second)
	r4 := addWithResync(t, inf, 5*time.Second)
	want := []time.Duration{5 * time.Second, 0, time.Minute, 55 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, resyncPeriods(inf, r1, r2, r3, r4)); diff != "" {
		t.Fatalf("after handler 4 (-want +got):\n%s", diff)
	}
	// Below one second is raised to one second, which lowers the check
	// period before start.
	r5 := addWithResync(t, inf, 100*time.Millisecond)
	if diff := cmp.Diff([]time.Duration{time.Second, time.Second}, resyncPeriods(inf, r5)); diff != "" {
		t.Fatalf("after handler 5 (-want +got):\n%s", diff)
	}
}

func TestResyncPeriodRaisedToCheckPeriodAfterStart(t *testing.T) {
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(5 * time.Second)})
	plRun(t, inf)
	Eventually(t, "informer synced", inf.HasSynced)
	r := addWithResync(t, inf, 2*time.Second)
	if diff := cmp.Diff([]time.Duration{5 * time.Second, 5 * time.Second}, resyncPeriods(inf, r)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestHandlerResyncWorksOnAnInformerWithoutResync(t *testing.T) {
	// client-go ignores the handler's period here; this informer takes it
	// as its check period when the handler is added before Run.
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Clock: clk})
	lw.SetList("2", NewPod("ns", "pod1", "1"))
	rec := newPLRecorder()
	second := time.Second
	reg, err := inf.AddEventHandlerWithOptions(rec, HandlerOptions{ResyncPeriod: &second})
	plMust(t, err)
	if diff := cmp.Diff([]time.Duration{time.Second, time.Second}, resyncPeriods(inf, reg)); diff != "" {
		t.Fatalf("resync periods before Run (-want +got):\n%s", diff)
	}
	plRun(t, inf)
	rec.expect(t, plAdd("ns/pod1", "1", true))
	rec.reset()
	Eventually(t, "reflector waiting for its resync timer", clk.HasWaiters)
	clk.Step(time.Second)
	rec.expect(t, plUpdate("ns/pod1", "1", "1"))
}

func TestHandlerResyncOnARunningInformerWithoutResyncIsRejected(t *testing.T) {
	// Added to the running informer, it cannot resync: the error says how.
	noResync, _ := plInformer(t, InformerOptions[*corev1.Pod]{Name: "pods"})
	plRun(t, noResync)
	Eventually(t, "informer synced", noResync.HasSynced)
	second := time.Second
	_, err := noResync.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{Name: "h", ResyncPeriod: &second})
	want := "handler h was not added: resync period 1s asked of Informer pods, which runs without resync: give the informer a resync period (InformerOptions.ResyncPeriod, or FactoryOptions.ResyncPeriod in a factory), or add the handler before the informer starts"
	if err == nil || err.Error() != want {
		t.Fatalf("handler resync on a running informer without resync: got %v, want %q", err, want)
	}
}

func TestShouldResyncSchedulesEachListener(t *testing.T) {
	// The schedule of client-go's TestListenerResyncPeriods: periods 0, 2 s
	// and 3 s on an informer checking every second.
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Second), Clock: clk})
	regs := []*Registration{addWithResync(t, inf, 0), addWithResync(t, inf, 2*time.Second), addWithResync(t, inf, 3*time.Second)}
	due := func() []bool {
		var out []bool
		for _, r := range regs {
			out = append(out, r.target.(*listener[*corev1.Pod]).resync.due.Load())
		}
		return out
	}
	if diff := cmp.Diff([]bool{true, true, true}, due()); diff != "" {
		t.Fatalf("new listeners receive resyncs until the first check (-want +got):\n%s", diff)
	}
	type check struct {
		any bool
		due []bool
	}
	var got []check
	for range 6 {
		clk.Step(time.Second)
		any := inf.fan.proc.shouldResync()
		got = append(got, check{any, due()})
	}
	want := []check{
		{false, []bool{false, false, false}}, // t=1
		{true, []bool{false, true, false}},   // t=2
		{true, []bool{false, false, true}},   // t=3
		{true, []bool{false, true, false}},   // t=4
		{false, []bool{false, false, false}}, // t=5
		{true, []bool{false, true, true}},    // t=6
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(check{})); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestDistributeSendsResyncNotificationsOnlyToDueListeners(t *testing.T) {
	var p processor[*corev1.Pod]
	due, notDue := newPLRecorder(), newPLRecorder()
	lDue := newListener[*corev1.Pod](due, "due", HandlerOptions{}, synced)
	lNotDue := newListener[*corev1.Pod](notDue, "not-due", HandlerOptions{}, synced)
	lDue.resync.due.Store(true)
	p.add(lDue)
	p.add(lNotDue)
	a1, a2 := NewPod("ns", "a", "1"), NewPod("ns", "a", "2")
	p.distribute([]notification[*corev1.Pod]{noteUpdate(a1, a1), noteUpdate(a1, a2), noteAdd(NewPod("ns", "b", "3"), false)})
	startTestListener(t, lDue)
	startTestListener(t, lNotDue)
	due.expect(t, plUpdate("ns/a", "1", "1"), plUpdate("ns/a", "1", "2"), plAdd("ns/b", "3", false))
	notDue.expect(t, plUpdate("ns/a", "1", "2"), plAdd("ns/b", "3", false))

	if !p.remove(lNotDue) || p.remove(lNotDue) {
		t.Fatal("remove did not report membership correctly")
	}
	if p.contains(lNotDue) || !p.contains(lDue) {
		t.Fatal("contains disagrees with add and remove")
	}
}

func TestResyncAndRelistReachOnlyDueHandlersWithUnchangedObjects(t *testing.T) {
	// client-go's TestSharedInformerWatchDisruption, with whole sequences.
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Second), Clock: clk})
	lw.SetList("2", NewPod("ns", "pod1", "1"), NewPod("ns", "pod2", "2"))
	noResync, resync := newPLRecorder(), newPLRecorder()
	zero, second := time.Duration(0), time.Second
	_, err := inf.AddEventHandlerWithOptions(noResync, HandlerOptions{ResyncPeriod: &zero})
	plMust(t, err)
	_, err = inf.AddEventHandlerWithOptions(resync, HandlerOptions{ResyncPeriod: &second})
	plMust(t, err)
	plRun(t, inf)
	initial := []plEvent{plAdd("ns/pod1", "1", true), plAdd("ns/pod2", "2", true)}
	noResync.expect(t, initial...)
	resync.expect(t, initial...)
	noResync.reset()
	resync.reset()

	// A periodic resync: only the due handler hears of the cached objects.
	Eventually(t, "reflector waiting for its resync timer", clk.HasWaiters)
	clk.Step(time.Second)
	got := resync.waitFor(t, 2)
	slices.SortFunc(got, func(a, b plEvent) int { return strings.Compare(a.Key, b.Key) })
	if diff := cmp.Diff([]plEvent{plUpdate("ns/pod1", "1", "1"), plUpdate("ns/pod2", "2", "2")}, got); diff != "" {
		t.Fatalf("resync (-want +got):\n%s", diff)
	}
	resync.reset()

	// A relist after the watch broke: pod2 changed and pod3 appeared while
	// disconnected. Until the next resync check, the unchanged pod1 is a
	// resync update for the due handler only.
	lw.SetList("4", NewPod("ns", "pod1", "1"), NewPod("ns", "pod2", "4"), NewPod("ns", "pod3", "3"))
	plMust(t, lw.FailWatch(plCtx(t), apierrors.NewResourceExpired("gone")))
	Eventually(t, "relist", func() bool {
		if len(noResync.get()) >= 2 {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(time.Millisecond) // the reflector's backoff runs on the fake clock
		}
		return false
	})
	noResync.expect(t, plUpdate("ns/pod2", "2", "4"), plAdd("ns/pod3", "3", false))
	resync.expect(t, plUpdate("ns/pod1", "1", "1"), plUpdate("ns/pod2", "2", "4"), plAdd("ns/pod3", "3", false))
}

func TestSlowHandlerDoesNotDelayOthers(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	gate := make(chan struct{})
	defer close(gate)
	slow := newPLRecorder()
	slow.hook = func(plEvent) { <-gate }
	_, err := inf.AddEventHandler(slow)
	plMust(t, err)
	fast := newPLRecorder()
	_, err = inf.AddEventHandler(fast)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	var want []plEvent
	for i := range 100 {
		p := NewPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(i+2))
		plMust(t, lw.Add(ctx, p))
		want = append(want, plAdd(KeyOf(p), p.ResourceVersion, false))
	}
	fast.expect(t, want...)
}

func TestPanickingHandlerIsRecoveredAndOthersGoOn(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"), NewPod("ns", "b", "1"))
	panicky := newPLRecorder()
	panicky.hook = func(plEvent) { panic("fake panic") }
	regPanicky, err := inf.AddEventHandlerWithOptions(panicky, HandlerOptions{Name: "panicky"})
	plMust(t, err)
	healthy := newPLRecorder()
	_, err = inf.AddEventHandler(healthy)
	plMust(t, err)
	plRun(t, inf)
	plMust(t, lw.Modify(plCtx(t), NewPod("ns", "a", "2")))
	healthy.expect(t, plAdd("ns/a", "1", true), plAdd("ns/b", "1", true), plUpdate("ns/a", "1", "2"))
	Eventually(t, "panicking handler synced", regPanicky.HasSynced)
	Eventually(t, "panicking handler done", func() bool { return regPanicky.Stats().Delivered == 3 })
	if diff := cmp.Diff(HandlerStats{Delivered: 3, Panics: 3}, regPanicky.Stats()); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	if regPanicky.Name() != "panicky" {
		t.Fatalf("name = %q", regPanicky.Name())
	}
}

func TestBoundedHandlers(t *testing.T) {
	for _, policy := range []OverflowPolicy{OverflowBlock, OverflowCoalesce} {
		t.Run(map[OverflowPolicy]string{OverflowBlock: "block", OverflowCoalesce: "coalesce"}[policy], func(t *testing.T) {
			inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
			lw.SetList("1", NewPod("ns", "a", "1"))
			gate := make(chan struct{})
			var gateOnce sync.Once
			openGate := func() { gateOnce.Do(func() { close(gate) }) }
			t.Cleanup(openGate)
			bounded, check := newPLRecorder(), &plChainCheck{}
			bounded.hook = func(e plEvent) {
				<-gate
				check.observe(e)
			}
			reg, err := inf.AddEventHandlerWithOptions(bounded, HandlerOptions{MaxPending: 4, Overflow: policy})
			plMust(t, err)
			plRun(t, inf)
			ctx := plCtx(t)
			// More events than the informer applies per batch, so that a
			// blocking handler must hold the cache back.
			const last = 2 * dispatchChunk
			for i := 2; i <= last; i++ {
				plMust(t, lw.Modify(ctx, NewPod("ns", "a", strconv.Itoa(i))))
			}
			if pending := reg.Stats().Pending; pending > 4+2 {
				t.Errorf("pending = %d with MaxPending 4", pending)
			}
			if policy == OverflowBlock {
				// The informer waits for the handler: the cache lags behind.
				time.Sleep(20 * time.Millisecond)
				if rv := inf.indexer.LastStoreSyncResourceVersion(); rv == strconv.Itoa(last) {
					t.Errorf("cache reached the last event while a blocking handler held it back")
				}
			}
			openGate()
			Eventually(t, "every notification handled", func() bool {
				stats := reg.Stats()
				return stats.Delivered+stats.Coalesced == last && stats.Pending == 0
			})
			check.mu.Lock()
			defer check.mu.Unlock()
			if len(check.errors) > 0 {
				t.Fatalf("inconsistent sequence:\n%s", strings.Join(check.errors, "\n"))
			}
			if diff := cmp.Diff(map[string]string{"ns/a": strconv.Itoa(last)}, check.last); diff != "" {
				t.Fatalf("final state (-want +got):\n%s", diff)
			}
			stats := reg.Stats()
			if policy == OverflowBlock && stats.Coalesced != 0 || policy == OverflowCoalesce && stats.Coalesced == 0 {
				t.Fatalf("coalesced = %d under policy %d", stats.Coalesced, policy)
			}
		})
	}
}
