package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/synctrial"
)

// TestE7ChartSeries checks the chart's series: one per metric and side of
// ours, named alike for both sides (the Deduplicate series once kept the
// metric's "until synced" and "(VmHWM)"), each point client-go's figure over
// ours'.
func TestE7ChartSeries(t *testing.T) {
	theirs := synctrial.Result{CPUSeconds: 4, PeakRSS: 3 << 20, PeakHeap: 2 << 20, RetainedHeap: 1 << 20}
	ours := synctrial.Result{CPUSeconds: 2, PeakRSS: 1 << 20, PeakHeap: 1 << 20, RetainedHeap: 1 << 19}
	chart := e7Chart([]e7Point{{pods: 1000, results: [][]synctrial.Result{{theirs}, {ours}, {ours}}}})
	type series struct {
		Name   string
		Dashed bool
		Y      float64
	}
	var got []series
	for _, s := range chart.Series {
		if len(s.Points) != 1 || s.Points[0].X != 1000 {
			t.Fatalf("series %q: points %v, want one at 1000 pods", s.Name, s.Points)
		}
		got = append(got, series{s.Name, s.Dashed, s.Points[0].Y})
	}
	want := []series{
		{"client CPU s", false, 2}, {"peak RSS MiB", false, 3}, {"peak heap MiB", false, 2}, {"retained heap B/pod", false, 2},
		{"client CPU s, Deduplicate", true, 2}, {"peak RSS MiB, Deduplicate", true, 3}, {"peak heap MiB, Deduplicate", true, 2}, {"retained heap B/pod, Deduplicate", true, 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}
