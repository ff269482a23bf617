package main

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

// TestMemoryWorkload checks W6's rows: every case names ours'
// configuration, (a), (b), (d) and (e) have a row for ours' default, and
// only (d)'s peak over each side's own steady state has no ratio.
func TestMemoryWorkload(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := tinyConfig
	cfg.prodPods = 300
	rows, err := runMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const (
		dflt      = "ours default: REST ListerWatcher over HTTP, strings interned on decode"
		dedupWire = "ours Deduplicate: REST ListerWatcher over HTTP, deduplicated on decode"
		dedupLW   = "ours Deduplicate: a ListerWatcher decoding every item, then deduplicated"
		relist    = "(d) relist of the unchanged 300 pods, GOGC=10; "
		dropped   = "(b) 300 pods, managed fields dropped (client-go: its transform); "
		events    = "(e) 300 watch events decoded"
		evDropped = events + ", managed fields dropped (client-go: its transform); "
	)
	want := []rowShape{
		{"W6", "(a) 300 pods cached; " + dflt, "retained heap/pod (B)"},
		{"W6", "(a) 300 pods cached; " + dedupWire, "retained heap/pod (B)"},
		{"W6", "(a) 300 pods cached; " + dedupLW, "retained heap/pod (B)"},
		{"W6", dropped + "ours default + DropFields managed fields: REST ListerWatcher over HTTP", "retained heap/pod (B)"},
		{"W6", dropped + "ours Deduplicate + StripManagedFields transform: a ListerWatcher decoding every item", "retained heap/pod (B)"},
		{"W6", "(c) 300 pods; ours default + DropFields of a controller's projection: REST ListerWatcher over HTTP; client-go: (a), every field", "retained heap/pod (B)"},
	}
	// Whether a GC cycle completed during a relist of 300 pods depends on
	// how much it allocates: (d)'s metrics are named by relistMetrics,
	// tested apart.
	for _, kase := range []string{relist + dflt, relist + dedupWire, relist + dedupLW} {
		i := slices.IndexFunc(rows, func(r benchkit.Row) bool { return r.Case == kase })
		if i < 0 || i+1 >= len(rows) {
			t.Fatalf("no rows for %s", kase)
		}
		want = append(want, rowShape{"W6", kase, rows[i].Metric}, rowShape{"W6", kase, rows[i+1].Metric})
	}
	for _, kase := range []string{
		events + "; ours default: REST ListerWatcher over HTTP",
		events + "; ours Deduplicate: decoding every event with client-go's codec",
		evDropped + "ours default + DropFields managed fields: REST ListerWatcher over HTTP",
		evDropped + "ours Deduplicate + StripManagedFields transform: decoding every event with client-go's codec",
	} {
		want = append(want, rowShape{"W6", kase, "allocs/event"}, rowShape{"W6", kase, "B/event"})
	}
	checkRows(t, rows, want)
	for _, r := range rows {
		if noRatio := strings.HasSuffix(r.Metric, "(no ratio)"); noRatio != (r.Ratio == nil) {
			t.Errorf("%s %s: ratio %v, want one only on rows whose metric does not say \"no ratio\"", r.Case, r.Metric, r.Ratio)
		}
	}
	checkNoGoroutineLeft(t, before)
}

// TestRelistMetricsSayWhenNoGCCycleCompleted checks that W6 (d) calls its
// figure a peak only when a GC cycle completed in every run of both sides.
func TestRelistMetricsSayWhenNoGCCycleCompleted(t *testing.T) {
	cycled := []cacheResult{{relistGCCycles: 3}, {relistGCCycles: 1}}
	idle := []cacheResult{{relistGCCycles: 2}, {}}
	var got [][2]string
	for _, sides := range [][2][]cacheResult{{cycled, cycled}, {cycled, idle}, {idle, idle}} {
		ratio, delta := relistMetrics(sides[0], sides[1])
		got = append(got, [2]string{ratio, delta})
	}
	want := [][2]string{
		{"peak heap ÷ own steady state (no ratio)", "peak heap Δ (MB)"},
		{"largest heap ÷ own steady state (ours': no GC cycle completed, so bytes allocated, an upper bound of the peak) (no ratio)",
			"largest heap Δ (MB) (ours': no GC cycle completed, so bytes allocated, an upper bound of the peak)"},
		{"largest heap ÷ own steady state (client-go's and ours': no GC cycle completed, so bytes allocated, an upper bound of the peak) (no ratio)",
			"largest heap Δ (MB) (client-go's and ours': no GC cycle completed, so bytes allocated, an upper bound of the peak)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
