package informer_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

func TestMetricsCountListsAndWatchRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeMetrics()
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("10", informer.NewPod("ns", "a", "10"))
		inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Metrics: p, DisableWatchList: true})
		runInformer(t, inf)
		advanceUntil(t, "sync", inf.HasSynced)
		ctx := t.Context()

		// A watch that ends normally is restarted from the last resource
		// version.
		mtNoErr(t, lw.Add(ctx, informer.NewPod("ns", "b", "11")))
		mtNoErr(t, lw.CloseWatch(ctx))
		advanceUntil(t, "a second watch", callsAtLeast(lw, 3))
		// "410 Gone" makes the reflector list again.
		mtNoErr(t, lw.FailWatch(ctx, apierrors.NewGone("gone")))
		advanceUntil(t, "a relist", callsAtLeast(lw, 5))
		// So does any other error ending a watch, and a failed list.
		lw.FailNextList(errors.New("connection reset"))
		lw.SetList("20", informer.NewPod("ns", "a", "10"), informer.NewPod("ns", "b", "11"), informer.NewPod("ns", "c", "20"))
		mtNoErr(t, lw.FailWatch(ctx, apierrors.NewInternalError(errors.New("boom"))))
		advanceUntil(t, "two more lists", callsAtLeast(lw, 8))
		synctest.Wait()

		var verbs []string
		for _, call := range lw.Calls() {
			verbs = append(verbs, call.Verb)
		}
		if diff := cmp.Diff([]string{"list", "watch", "watch", "list", "watch", "list", "list", "watch"}, verbs); diff != "" {
			t.Fatalf("requests (-want +got):\n%s", diff)
		}
		want := informer.InformerSnapshot{
			Reflector: informer.ReflectorStats{ErrorEvents: 2},
			Requests: informer.ReflectorRequestStats{
				Lists:         informer.ListReasons{Initial: 1, Expired: 1, Error: 2},
				WatchRestarts: 1,
			},
			StoreResourceVersion: "20",
			Synced:               true,
		}
		if diff := cmp.Diff(want, p.snapshot(t, "pods")); diff != "" {
			t.Errorf("snapshot (-want +got):\n%s", diff)
		}
	})
}

func TestMetricsCountStreamingLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeMetrics()
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("10", informer.NewPod("ns", "a", "10"))
		// The first streaming list is refused: the reflector lists instead.
		lw.FailNextWatch(apierrors.NewBadRequest("streaming lists are not supported"))
		inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Metrics: p})
		runInformer(t, inf)
		advanceUntil(t, "sync", inf.HasSynced)
		// After "410 Gone" the next cycle tries a streaming list again.
		mtNoErr(t, lw.FailWatch(t.Context(), apierrors.NewResourceExpired("too old")))
		advanceUntil(t, "a streaming relist", callsAtLeast(lw, 4))
		synctest.Wait()

		var requests []string
		for _, call := range lw.Calls() {
			requests = append(requests, fmt.Sprintf("%s streaming=%v", call.Verb, call.Options.SendInitialEvents != nil))
		}
		wantRequests := []string{"watch streaming=true", "list streaming=false", "watch streaming=false", "watch streaming=true"}
		if diff := cmp.Diff(wantRequests, requests); diff != "" {
			t.Fatalf("requests (-want +got):\n%s", diff)
		}

		want := informer.ReflectorRequestStats{
			Lists:          informer.ListReasons{Error: 1},
			StreamingLists: informer.ListReasons{Initial: 1, Expired: 1},
		}
		if diff := cmp.Diff(want, p.snapshot(t, "pods").Requests); diff != "" {
			t.Errorf("request stats (-want +got):\n%s", diff)
		}
	})
}

func TestMetricsHandlerRegistrationsFollowHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeMetrics()
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("10", informer.NewPod("ns", "a", "10"), informer.NewPod("ns", "bad", "10"))
		inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Metrics: p,
		})
		a, b, c := &mtCounter{}, &mtCounter{}, &mtCounter{}
		regA := must[*informer.Registration](t)(inf.AddEventHandlerWithOptions(a, informer.HandlerOptions{Name: "a"}))
		must[*informer.Registration](t)(inf.AddEventHandlerWithOptions(b, informer.HandlerOptions{Name: "b"}))
		stop := runInformer(t, inf)
		advanceUntil(t, "sync", inf.HasSynced)
		regC := must[*informer.Registration](t)(inf.AddEventHandlerWithOptions(c, informer.HandlerOptions{Name: "c"}))
		mtNoErr(t, lw.Modify(t.Context(), informer.NewPod("ns", "a", "11")))
		synctest.Wait()

		// Handler series read the handlers' counters.
		want := map[string]informer.HandlerStats{
			"pods/a": {Delivered: 3, Panics: 1},
			"pods/b": {Delivered: 3, Panics: 1},
			"pods/c": {Delivered: 3, Panics: 1},
		}
		got := map[string]informer.HandlerStats{}
		for key := range want {
			got[key] = p.handler(key).read()
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("handler stats (-want +got):\n%s", diff)
		}
		wantSnapshot := informer.InformerSnapshot{
			Requests:             informer.ReflectorRequestStats{StreamingLists: informer.ListReasons{Initial: 1}},
			StoreResourceVersion: "11",
			Synced:               true,
		}
		if diff := cmp.Diff(wantSnapshot, p.snapshot(t, "pods")); diff != "" {
			t.Errorf("informer snapshot (-want +got):\n%s", diff)
		}

		// A removed handler's registration goes once its goroutine exits.
		mtNoErr(t, inf.ShutDownEventHandler(regA))
		mtNoErr(t, inf.ShutDownEventHandler(regC))
		stop()
		wantCalls := []string{
			"add informer pods", "add handler pods/a", "add handler pods/b", "add handler pods/c",
			"remove handler pods/a", "remove handler pods/c", "remove handler pods/b", "remove informer pods",
		}
		if diff := cmp.Diff(wantCalls, p.calls()); diff != "" {
			t.Errorf("provider calls (-want +got):\n%s", diff)
		}
		if got := []int{a.get(), b.get(), c.get()}; !slices.Equal(got, []int{3, 3, 3}) {
			t.Errorf("handler calls %v, want 3 each", got)
		}
	})
}

// sleeper is a handler whose every call takes a second of the bubble's
// fake time.
type sleeper struct{}

func (sleeper) OnAdd(*corev1.Pod, bool)                      { time.Sleep(time.Second) }
func (sleeper) OnUpdate(_, _ *corev1.Pod)                    { time.Sleep(time.Second) }
func (sleeper) OnDelete(informer.DeletedObject[*corev1.Pod]) { time.Sleep(time.Second) }

func TestMetricsObserveHandlerBatchDurations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeMetrics()
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("10", informer.NewPod("ns", "a", "10"))
		inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Metrics: p})
		must[*informer.Registration](t)(inf.AddEventHandlerWithOptions(sleeper{}, informer.HandlerOptions{Name: "slow"}))
		runInformer(t, inf)
		synctest.Wait() // the handler is busy with the initial add

		// Two notifications arrive meanwhile: the handler takes them in one
		// batch when it is done with the first.
		ctx := t.Context()
		mtNoErr(t, lw.Add(ctx, informer.NewPod("ns", "b", "11")))
		mtNoErr(t, lw.Add(ctx, informer.NewPod("ns", "c", "12")))
		h := p.handler("pods/slow")
		advanceUntil(t, "delivery", func() bool { return h.read().Delivered == 3 })
		synctest.Wait()
		if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, h.observed()); diff != "" {
			t.Errorf("batch durations (-want +got):\n%s", diff)
		}
	})
}

func TestMetricsProviderMayDeclineInformersAndHandlers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider *fakeMetrics
		want     []string
	}{
		{"no informer metrics", &fakeMetrics{nilInformers: true}, []string{"add informer *v1.Pod"}},
		{"no handler metrics", &fakeMetrics{nilHandlers: true, informers: map[string]func() informer.InformerSnapshot{}},
			[]string{"add informer *v1.Pod", "add handler *v1.Pod/h", "remove informer *v1.Pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
				lw.SetList("10", informer.NewPod("ns", "a", "10"))
				inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Metrics: tc.provider})
				h := &mtCounter{}
				must[*informer.Registration](t)(inf.AddEventHandlerWithOptions(h, informer.HandlerOptions{Name: "h"}))
				stop := runInformer(t, inf)
				mtNoErr(t, lw.Add(t.Context(), informer.NewPod("ns", "b", "11")))
				synctest.Wait()
				stop()
				if h.get() != 2 {
					t.Errorf("handler got %d notifications, want 2", h.get())
				}
				if diff := cmp.Diff(tc.want, tc.provider.calls()); diff != "" {
					t.Errorf("provider calls (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestFactoryPassesMetricsToItsInformers(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	p := newFakeMetrics()
	f := newFactory(t, srv.Config(), informer.FactoryOptions{Name: "test", Metrics: p})
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	ids := slices.Clone(p.ids)
	p.mu.Unlock()
	slices.SortFunc(ids, func(a, b informer.InformerID) int { return strings.Compare(a.Name, b.Name) })
	want := []informer.InformerID{
		{Name: "test/pods", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{Name: "test/pods (PartialObjectMetadata)", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("informers registered (-want +got):\n%s", diff)
	}
	f.Shutdown()
	// The informers run concurrently: each half is sorted.
	got := p.calls()
	if len(got) == 4 {
		slices.Sort(got[:2])
		slices.Sort(got[2:])
	}
	wantCalls := []string{
		"add informer test/pods", "add informer test/pods (PartialObjectMetadata)",
		"remove informer test/pods", "remove informer test/pods (PartialObjectMetadata)",
	}
	if diff := cmp.Diff(wantCalls, got); diff != "" {
		t.Errorf("provider calls (-want +got):\n%s", diff)
	}
}

// TestCorePackageDoesNotDependOnPrometheus keeps Prometheus and
// controller-runtime out of the core package's dependencies: exporters live
// in their own modules.
func TestCorePackageDoesNotDependOnPrometheus(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/kubetyped/informer") {
		t.Fatalf("go list -deps did not list the package itself: %q", deps)
	}
	var forbidden []string
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime") {
			forbidden = append(forbidden, dep)
		}
	}
	if len(forbidden) > 0 {
		t.Errorf("the core package depends on %s", fmt.Sprint(forbidden))
	}
}
