package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuantileIsTheNearestRank(t *testing.T) {
	vs := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	got := []float64{quantile(vs, 0.5), quantile(vs, 0.99), quantile(vs, 0.1), quantile([]float64{-3}, 0.99)}
	if diff := cmp.Diff([]float64{5, 10, 1, -3}, got); diff != "" {
		t.Errorf("quantiles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}, vs); diff != "" {
		t.Errorf("quantile reordered its input (-want +got):\n%s", diff)
	}
}

func TestMedianOfOddAndEvenRuns(t *testing.T) {
	id := func(v float64) float64 { return v }
	got := []float64{median([]float64{3, 1, 2}, id), median([]float64{4, 1, 3, 2}, id)}
	if diff := cmp.Diff([]float64{2, 2.5}, got); diff != "" {
		t.Errorf("medians (-want +got):\n%s", diff)
	}
}

// TestRowsFollowTheOutputContract checks the Markdown table and the JSON
// lines, and that a ratio of figures that are not both positive is left out.
func TestRowsFollowTheOutputContract(t *testing.T) {
	rows := []row{
		newRow("E1", "5000 pods", "client CPU s until synced", 3, 1.5),
		newRow("E2", "1000 updates", "p50 latency ms from response", -2, 1),
	}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		printRows(&out, rows, asJSON)
		want := []string{
			"| workload | case | metric | client-go | ours | ratio |",
			"|---|---|---|---:|---:|---:|",
			"| E1 | 5000 pods | client CPU s until synced | 3 | 1.5 | 2.00× |",
			"| E2 | 1000 updates | p50 latency ms from response | -2 | 1 | – |",
		}
		if asJSON {
			want = []string{
				`{"workload":"E1","case":"5000 pods","metric":"client CPU s until synced","clientgo":3,"ours":1.5,"ratio":2}`,
				`{"workload":"E2","case":"1000 updates","metric":"p50 latency ms from response","clientgo":-2,"ours":1,"ratio":null}`,
			}
		}
		if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(out.String()), "\n")); diff != "" {
			t.Errorf("output with json=%v (-want +got):\n%s", asJSON, diff)
		}
	}
}
