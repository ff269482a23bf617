package main

import (
	"testing"
)

// TestCustomResourcesWorkload runs W8 on a few workloads: every row is
// there, and the CPU and bytes allocated are measured (the retained heap
// of 60 objects is too small to assert on under a loaded machine's noise).
func TestCustomResourcesWorkload(t *testing.T) {
	cfg := tinyConfig
	cfg.w8Objects = 60
	rows, err := runCustomResources(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []rowShape
	for _, how := range []string{"list pages of 500", "watch event objects one by one"} {
		for _, ours := range []string{"ours default (typed JSON decoder, strings interned)", "ours crcache defaults (sub-objects shared too)"} {
			for _, m := range []string{"CPU/object (ns)", "B allocated/object", "retained heap/object (B)"} {
				want = append(want, rowShape{"W8", "60 workloads (~11 KB JSON), " + how + "; " + ours, m})
			}
		}
	}
	checkRows(t, rows, want)
	for _, r := range rows {
		if r.Metric != "retained heap/object (B)" && (r.Theirs <= 0 || r.Ours <= 0) {
			t.Errorf("%s, %s: client-go %v, ours %v, want both positive", r.Case, r.Metric, r.Theirs, r.Ours)
		}
	}
}
