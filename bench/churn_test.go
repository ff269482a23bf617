package main

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChurnWorkload(t *testing.T) {
	before := runtime.NumGoroutine()
	rows, err := runChurn(tinyConfig)
	if err != nil {
		t.Fatal(err)
	}
	kase := "500 create/update/delete cycles, nothing cached after; ours: "
	want := []rowShape{
		{"churn", kase + "default", "retained heap Δ after churn (KiB) (no ratio)"},
		{"churn", kase + "Deduplicate", "retained heap Δ after churn (KiB) (no ratio)"},
	}
	if diff := cmp.Diff(want, shapes(rows)); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if r.Ratio != nil {
			t.Errorf("%s %s: a ratio of two changes near zero", r.Case, r.Metric)
		}
	}
	checkNoGoroutineLeft(t, before)
}
