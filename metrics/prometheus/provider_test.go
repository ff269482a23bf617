package informerprom_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kubetyped/informer/informertest"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informer"
	informerprom "github.com/kubetyped/informer/metrics/prometheus"
)

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// handler records nothing: it takes a quarter of a second of the bubble's
// fake time per call, so that batch durations are exact, and panics on
// objects named "bad".
type handler struct{}

func (handler) call(obj *corev1.Pod) {
	time.Sleep(250 * time.Millisecond)
	if obj.Name == "bad" {
		panic("bad object")
	}
}

func (h handler) OnAdd(obj *corev1.Pod, _ bool)                  { h.call(obj) }
func (h handler) OnUpdate(_, obj *corev1.Pod)                    { h.call(obj) }
func (h handler) OnDelete(d informer.DeletedObject[*corev1.Pod]) { h.call(d.Object) }

// gather returns every sample of reg whose name starts with prefix, keyed
// by name and labels as in the text format; a histogram gives its _count
// and _sum.
func gather(t *testing.T, reg prometheus.Gatherer, prefix string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	samples := map[string]float64{}
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), prefix) {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := labelString(m.GetLabel())
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				samples[family.GetName()+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				samples[family.GetName()+labels] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				samples[family.GetName()+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				samples[family.GetName()+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			default:
				t.Fatalf("unexpected metric type %v of %s", family.GetType(), family.GetName())
			}
		}
	}
	return samples
}

func labelString(pairs []*dto.LabelPair) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func mustNot(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestProviderExportsHandlerSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		provider, err := informerprom.NewProvider(reg)
		mustNot(t, err)
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("10", pod("a", "10"), pod("bad", "10"))
		inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
			Name: "pods", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Metrics: provider,
		})
		mustNot(t, err)
		regA, err := inf.AddEventHandlerWithOptions(handler{}, informer.HandlerOptions{Name: "a"})
		mustNot(t, err)
		_, err = inf.AddEventHandlerWithOptions(handler{}, informer.HandlerOptions{Name: "b"})
		mustNot(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { inf.Run(ctx) })
		defer wg.Wait()
		defer cancel()

		// Events flow: the initial list, then an update and a deletion, each
		// one on its own (a batch of one notification).
		synctest.Wait()
		time.Sleep(time.Second)
		mustNot(t, lw.Modify(ctx, pod("a", "11")))
		time.Sleep(time.Second)
		mustNot(t, lw.Delete(ctx, pod("a", "12")))
		time.Sleep(time.Second)
		synctest.Wait()

		want := map[string]float64{}
		for _, h := range []string{"a", "b"} {
			labels := fmt.Sprintf(`{handler=%q,informer="pods"}`, h)
			want["informer_handler_pending"+labels] = 0
			want["informer_handler_delivered_total"+labels] = 4
			want["informer_handler_panics_total"+labels] = 1
			want["informer_handler_coalesced_total"+labels] = 0
			want["informer_handler_dropped_total"+labels] = 0
			// The two initial adds form one batch.
			want["informer_handler_batch_duration_seconds_count"+labels] = 3
			want["informer_handler_batch_duration_seconds_sum"+labels] = 1
		}
		if diff := cmp.Diff(want, gather(t, reg, "informer_handler_")); diff != "" {
			t.Errorf("handler series (-want +got):\n%s", diff)
		}

		const labels = `{informer="pods",resource="pods"}`
		wantInformer := map[string]float64{
			"informer_queue_depth" + labels:                                                          0,
			"informer_synced" + labels:                                                               1,
			"informer_store_resource_version" + labels:                                               12,
			"informer_transform_errors_total" + labels:                                               0,
			"informer_store_errors_total" + labels:                                                   0,
			"informer_watch_restarts_total" + labels:                                                 0,
			"informer_watch_error_events_total" + labels:                                             0,
			"informer_invalid_list_items_total" + labels:                                             0,
			"informer_drop_fields_failures_total" + labels:                                           0,
			"informer_shard_watches" + labels:                                                        0,
			`informer_lists_total{informer="pods",method="list",reason="error",resource="pods"}`:     0,
			`informer_lists_total{informer="pods",method="list",reason="expired",resource="pods"}`:   0,
			`informer_lists_total{informer="pods",method="list",reason="initial",resource="pods"}`:   0,
			`informer_lists_total{informer="pods",method="stream",reason="error",resource="pods"}`:   0,
			`informer_lists_total{informer="pods",method="stream",reason="expired",resource="pods"}`: 0,
			`informer_lists_total{informer="pods",method="stream",reason="initial",resource="pods"}`: 1,
		}
		for _, reason := range []string{"wrong_type", "nil_object", "nameless", "unknown_type", "store_error"} {
			wantInformer[fmt.Sprintf(`informer_watch_events_dropped_total{informer="pods",reason=%q,resource="pods"}`, reason)] = 0
		}
		for _, result := range []string{"compared", "failed", "repaired"} {
			wantInformer[fmt.Sprintf(`informer_consistency_checks_total{informer="pods",resource="pods",result=%q}`, result)] = 0
		}
		for _, kind := range []string{"missing", "extra", "stale"} {
			wantInformer[fmt.Sprintf(`informer_consistency_differences_total{informer="pods",kind=%q,resource="pods"}`, kind)] = 0
		}
		got := gather(t, reg, "informer_")
		for key := range got {
			if strings.HasPrefix(key, "informer_handler_") {
				delete(got, key)
			}
		}
		if diff := cmp.Diff(wantInformer, got); diff != "" {
			t.Errorf("informer series (-want +got):\n%s", diff)
		}

		// A removed handler's series disappear, and so do all of them once
		// the informer stops.
		mustNot(t, inf.ShutDownEventHandler(regA))
		handlersLeft := slices.Sorted(maps.Keys(gather(t, reg, "informer_handler_delivered_total")))
		if diff := cmp.Diff([]string{`informer_handler_delivered_total{handler="b",informer="pods"}`}, handlersLeft); diff != "" {
			t.Errorf("series after removing handler a (-want +got):\n%s", diff)
		}
		cancel()
		wg.Wait()
		if diff := cmp.Diff(map[string]float64{}, gather(t, reg, "informer_")); diff != "" {
			t.Errorf("series after the informer stopped (-want +got):\n%s", diff)
		}
	})
}

// The series of counters that only some informers have (built from a
// rest.Config with DropFields; dynamic shards) carry the snapshot's values.
func TestProviderExportsDropFieldsAndShardSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	provider, err := informerprom.NewProvider(reg)
	mustNot(t, err)
	provider.AddInformer(informer.InformerID{Name: "pods", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}, func() informer.InformerSnapshot {
		return informer.InformerSnapshot{Stats: informer.InformerStats{DropFieldsFailures: 3, ShardWatches: 2}}
	})
	const labels = `{informer="pods",resource="pods"}`
	got := gather(t, reg, "informer_")
	want := map[string]float64{
		"informer_drop_fields_failures_total" + labels: 3,
		"informer_shard_watches" + labels:              2,
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			delete(got, key)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

func TestProviderRenamesClashingInformersAndHandlers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	provider, err := informerprom.NewProvider(reg)
	mustNot(t, err)
	id := informer.InformerID{Name: "pods"}
	stats := func(n int64) func() informer.HandlerStats {
		return func() informer.HandlerStats { return informer.HandlerStats{Delivered: n} }
	}
	first := provider.AddInformer(id, func() informer.InformerSnapshot { return informer.InformerSnapshot{} })
	second := provider.AddInformer(id, func() informer.InformerSnapshot { return informer.InformerSnapshot{} })
	first.AddHandler("h", stats(1))
	first.AddHandler("h", stats(2))
	second.AddHandler("h", stats(3))
	want := map[string]float64{
		`informer_handler_delivered_total{handler="h",informer="pods"}`:   1,
		`informer_handler_delivered_total{handler="h#2",informer="pods"}`: 2,
		`informer_handler_delivered_total{handler="h",informer="pods#2"}`: 3,
	}
	if diff := cmp.Diff(want, gather(t, reg, "informer_handler_delivered_total")); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	// A freed name is given again.
	first.Remove()
	third := provider.AddInformer(id, func() informer.InformerSnapshot { return informer.InformerSnapshot{} })
	third.AddHandler("h", stats(4))
	want = map[string]float64{
		`informer_handler_delivered_total{handler="h",informer="pods"}`:   4,
		`informer_handler_delivered_total{handler="h",informer="pods#2"}`: 3,
	}
	if diff := cmp.Diff(want, gather(t, reg, "informer_handler_delivered_total")); diff != "" {
		t.Errorf("series after a removal (-want +got):\n%s", diff)
	}
}

func TestProviderRejectsASecondRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := informerprom.NewProvider(reg)
	mustNot(t, err)
	if _, err := informerprom.NewProvider(reg); err == nil {
		t.Fatal("a second provider on one registry was accepted")
	}
}

func TestProviderBatchDurationBuckets(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	provider, err := informerprom.NewProvider(reg, informerprom.WithBatchDurationBuckets([]float64{0.5, 2}))
	mustNot(t, err)
	inf := provider.AddInformer(informer.InformerID{Name: "pods"}, func() informer.InformerSnapshot { return informer.InformerSnapshot{} })
	h := inf.AddHandler("h", func() informer.HandlerStats { return informer.HandlerStats{} })
	h.ObserveBatch(time.Second)
	families, err := reg.Gather()
	mustNot(t, err)
	var buckets map[float64]uint64
	for _, family := range families {
		if family.GetName() != "informer_handler_batch_duration_seconds" {
			continue
		}
		buckets = map[float64]uint64{}
		for _, b := range family.GetMetric()[0].GetHistogram().GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
	}
	if diff := cmp.Diff(map[float64]uint64{0.5: 0, 2: 1}, buckets); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	h.Remove()
	inf.Remove()
	if got := gather(t, reg, "informer_"); len(got) != 0 {
		t.Errorf("series left after removal: %v", slices.Sorted(maps.Keys(got)))
	}
}

func TestProviderExportsFleetSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	provider, err := informerprom.NewProvider(reg)
	mustNot(t, err)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC says no"))
	remove := provider.AddFleet(informer.InformerID{Name: "pods", Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}, func() informer.FleetStats {
		return informer.FleetStats{
			Clusters: []informer.ClusterStats{
				{Name: "denied", State: informer.ClusterFailed, LastError: fmt.Errorf("listing: %w", forbidden)},
				{Name: "down", State: informer.ClusterSyncing, LastError: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")},
				{Name: "ok", State: informer.ClusterSynced, Objects: 3},
			},
			Synced: 1, Syncing: 1, Failed: 1,
		}
	})
	const fleet = `fleet="pods",resource="pods"`
	want := map[string]float64{
		`informer_fleet_clusters{` + fleet + `,state="Synced"}`:                                          1,
		`informer_fleet_clusters{` + fleet + `,state="Syncing"}`:                                         1,
		`informer_fleet_clusters{` + fleet + `,state="Failed"}`:                                          1,
		`informer_fleet_clusters{` + fleet + `,state="Elsewhere"}`:                                       0,
		`informer_fleet_cluster_failed{cluster="denied",` + fleet + `}`:                                  1,
		`informer_fleet_cluster_failed{cluster="down",` + fleet + `}`:                                    0,
		`informer_fleet_cluster_failed{cluster="ok",` + fleet + `}`:                                      0,
		`informer_fleet_cluster_error{cluster="denied",fleet="pods",reason="Forbidden",resource="pods"}`: 1,
		`informer_fleet_cluster_error{cluster="down",fleet="pods",reason="Transport",resource="pods"}`:   1,
	}
	if diff := cmp.Diff(want, gather(t, reg, "informer_fleet_")); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	remove()
	if diff := cmp.Diff(map[string]float64{}, gather(t, reg, "informer_fleet_")); diff != "" {
		t.Errorf("series after remove (-want +got):\n%s", diff)
	}
}
