package informer

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/informertest"
)

// consistencyFixture runs an informer over a fake that listed a, b and c at
// 10, then lets the server delete b (11), update c (12) and update a (13)
// while the watch delivers only the update of a: one missed delete and one
// missed update. The server's list is then a@13 and c@12.
func consistencyFixture(t *testing.T, opts InformerOptions[*corev1.Pod]) (*Informer[*corev1.Pod], *informertest.FakeListerWatcher[*corev1.Pod]) {
	t.Helper()
	inf, lw := plInformer(t, opts)
	lw.SetList("10", NewPod("ns", "a", "10"), NewPod("ns", "b", "10"), NewPod("ns", "c", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))
	lw.SetList("13", NewPod("ns", "a", "13"), NewPod("ns", "c", "12"))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "13")))
	plMust(t, inf.WaitForResourceVersion(ctx, "13"))
	return inf, lw
}

func TestCheckConsistencyReportsMissedEvents(t *testing.T) {
	inf, lw := consistencyFixture(t, InformerOptions[*corev1.Pod]{})
	calls := len(lw.Calls())
	report, err := inf.CheckConsistency(plCtx(t))
	plMust(t, err)
	want := ConsistencyReport{ResourceVersion: "13", Checked: 3, Extra: []string{"ns/b"}, Stale: []string{"ns/c"}}
	if diff := cmp.Diff(want, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	// The list asked for exactly the cache's resource version, in pages.
	list := lw.Calls()[calls]
	wantOptions := metav1.ListOptions{ResourceVersion: "13", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: consistencyPageSize}
	if diff := cmp.Diff(wantOptions, list.Options); diff != "" {
		t.Errorf("list options (-want +got):\n%s", diff)
	}
	wantStats := ConsistencyStats{Checks: 1, Extra: 1, Stale: 1}
	if diff := cmp.Diff(wantStats, inf.Stats().Consistency); diff != "" {
		t.Errorf("Stats().Consistency (-want +got):\n%s", diff)
	}
	// Without repair, the cache stays as it was.
	if _, err := inf.Lister().Get("ns/b"); err != nil {
		t.Errorf("a check without repair changed the cache: %v", err)
	}
}

func TestCheckConsistencyRepairs(t *testing.T) {
	inf, _ := consistencyFixture(t, InformerOptions[*corev1.Pod]{ConsistencyCheck: &ConsistencyCheckOptions{Repair: true}})
	deleted := make(chan DeletedObject[*corev1.Pod], 1)
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{
		DeleteFunc: func(d DeletedObject[*corev1.Pod]) { deleted <- d },
	})
	plMust(t, err)
	ctx := plCtx(t)
	report, err := inf.CheckConsistency(ctx)
	plMust(t, err)
	if !report.Repaired || !slices.Equal(report.Extra, []string{"ns/b"}) || !slices.Equal(report.Stale, []string{"ns/c"}) {
		t.Fatalf("report = %+v, want ns/b extra, ns/c stale, repaired", report)
	}
	// The repair relists what the server holds (the list at "13"); the
	// store is updated before handlers hear of it, so once the handler has
	// been told of ns/b's deletion the cache holds the relisted state.
	var d DeletedObject[*corev1.Pod]
	select {
	case d = <-deleted:
	case <-ctx.Done():
		t.Fatal("the repair's relist did not delete ns/b")
	}
	if d.Name.String() != "ns/b" || !d.FinalStateUnknown {
		t.Errorf("the handler was told %+v, want a final-state-unknown deletion of ns/b", d)
	}
	want := []string{"ns/a@13", "ns/c@12"}
	var got []string
	for _, pod := range inf.Lister().Namespace("ns").mustList(t) {
		got = append(got, KeyOf(pod)+"@"+pod.ResourceVersion)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cache after the repair (-want +got):\n%s", diff)
	}
	report, err = inf.CheckConsistency(ctx)
	plMust(t, err)
	if !report.Consistent() || report.Repaired {
		t.Errorf("a check after the repair: %+v", report)
	}
	if got := inf.Stats().Consistency.Repairs; got != 1 {
		t.Errorf("Repairs = %d, want 1", got)
	}
}

func TestCheckConsistencyFindsMissedAdd(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))
	lw.SetList("11", NewPod("ns", "a", "10"), NewPod("ns", "d", "11"))
	report, err := inf.CheckConsistency(ctx)
	plMust(t, err)
	if diff := cmp.Diff(ConsistencyReport{ResourceVersion: "10", Checked: 1, Missing: []string{"ns/d"}}, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func TestCheckConsistencyErrors(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	if _, err := inf.CheckConsistency(plCtx(t)); !errors.Is(err, errNotSynced) {
		t.Errorf("before Run: %v, want errNotSynced", err)
	}
	lw.SetList("10", NewPod("ns", "a", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))
	gone := apierrors.NewResourceExpired("too old resource version: 10")
	lw.FailNextList(gone)
	if _, err := inf.CheckConsistency(ctx); !apierrors.IsResourceExpired(err) {
		t.Errorf("a failed list: %v, want the list's error", err)
	}
	if diff := cmp.Diff(ConsistencyStats{Failures: 1}, inf.Stats().Consistency); diff != "" {
		t.Errorf("Stats().Consistency (-want +got):\n%s", diff)
	}
}

func TestPeriodicConsistencyCheck(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{ConsistencyCheck: &ConsistencyCheckOptions{Period: 5 * time.Millisecond, Repair: true}})
	lw.SetList("10", NewPod("ns", "a", "10"), NewPod("ns", "b", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))
	lw.SetList("11", NewPod("ns", "a", "10")) // b's deletion is never sent
	Eventually(t, "a periodic check to repair the cache", func() bool {
		_, err := inf.Lister().Get("ns/b")
		return apierrors.IsNotFound(err)
	})
	if s := inf.Stats().Consistency; s.Extra < 1 || s.Repairs < 1 {
		t.Errorf("Stats().Consistency = %+v, want the extra object and the repair counted", s)
	}
}

// mustList lists every object of the namespace.
func (l NamespaceLister[T]) mustList(t *testing.T) []T {
	t.Helper()
	objs, err := l.List(nil)
	plMust(t, err)
	return objs
}

// endlessPagesLW is a ListerWatcher whose consistency-check lists (at an
// exact resource version, or continued) never end: each page carries a
// continue token, the same one every time if repeat is set, a new one
// otherwise; with block, such a list waits until its context ends. Other
// calls go to the fake.
type endlessPagesLW struct {
	*informertest.FakeListerWatcher[*corev1.Pod]
	repeat, block bool
	pages         atomic.Int64
}

func (lw *endlessPagesLW) List(ctx context.Context, options metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	if options.ResourceVersionMatch != metav1.ResourceVersionMatchExact && options.Continue == "" {
		return lw.FakeListerWatcher.List(ctx, options)
	}
	n := lw.pages.Add(1)
	if lw.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	token := "next"
	if !lw.repeat {
		token = "page-" + strconv.FormatInt(n, 10)
	}
	return &ListResult[*corev1.Pod]{Items: []*corev1.Pod{NewPod("ns", "p"+strconv.FormatInt(n, 10), "10")}, ResourceVersion: "10", Continue: token}, nil
}

// TestCheckConsistencyEndlessPagination checks that a list whose server
// never stops returning continue tokens fails the check with
// errEndlessList, after the page that repeats a token or after the
// page bound, rather than running until the context ends.
func TestCheckConsistencyEndlessPagination(t *testing.T) {
	for _, tc := range []struct {
		name      string
		repeat    bool
		wantPages int64
	}{
		{name: "repeated token", repeat: true, wantPages: 2},
		{name: "new tokens", repeat: false, wantPages: int64(maxConsistencyPages(1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := &endlessPagesLW{FakeListerWatcher: informertest.NewFakeListerWatcher[*corev1.Pod](), repeat: tc.repeat}
			inf := MustNewInformer[*corev1.Pod](t, lw, InformerOptions[*corev1.Pod]{Backoff: plFastBackoff})
			lw.SetList("10", NewPod("ns", "a", "10"))
			plRun(t, inf)
			ctx := plCtx(t)
			plMust(t, inf.WaitForResourceVersion(ctx, "10"))
			_, err := inf.CheckConsistency(ctx)
			if !errors.Is(err, errEndlessList) {
				t.Fatalf("CheckConsistency: %v, want errEndlessList", err)
			}
			if got := lw.pages.Load(); got != tc.wantPages {
				t.Errorf("pages listed: %d, want %d", got, tc.wantPages)
			}
			if diff := cmp.Diff(ConsistencyStats{Failures: 1}, inf.Stats().Consistency); diff != "" {
				t.Errorf("Stats().Consistency (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPeriodicConsistencyCheckTimesOut checks that a periodic check whose
// list never returns fails at its timeout, is counted, and lets the next
// check run.
func TestPeriodicConsistencyCheckTimesOut(t *testing.T) {
	lw := &endlessPagesLW{FakeListerWatcher: informertest.NewFakeListerWatcher[*corev1.Pod](), block: true}
	inf := MustNewInformer[*corev1.Pod](t, lw, InformerOptions[*corev1.Pod]{Backoff: plFastBackoff,
		ConsistencyCheck: &ConsistencyCheckOptions{Period: 5 * time.Millisecond, Timeout: 10 * time.Millisecond}})
	lw.SetList("10", NewPod("ns", "a", "10"))
	plRun(t, inf)
	Eventually(t, "two checks to time out", func() bool { return inf.Stats().Consistency.Failures >= 2 })
}

func TestConsistencyCheckTimeoutDefault(t *testing.T) {
	got := []time.Duration{
		ConsistencyCheckOptions{Period: time.Minute}.timeout(),
		ConsistencyCheckOptions{Period: time.Hour}.timeout(),
		ConsistencyCheckOptions{Period: time.Hour, Timeout: time.Second}.timeout(),
	}
	want := []time.Duration{time.Minute, defaultConsistencyTimeout, time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeouts (-want +got):\n%s", diff)
	}
}
