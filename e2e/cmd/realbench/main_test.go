package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
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

// TestRowsFollowTheOutputContract checks the Markdown table and the JSON
// lines, and that a ratio of figures that are not both positive is left out.
func TestRowsFollowTheOutputContract(t *testing.T) {
	rows := []benchkit.Row{
		newRow("E1", "5000 pods", "client CPU s until synced", 3, 1.5),
		newRow("E2", "1000 updates", "p50 latency ms from response", -2, 1),
	}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		write := table.WriteMarkdown
		if asJSON {
			write = table.WriteJSONLines
		}
		if err := write(&out, rows); err != nil {
			t.Fatal(err)
		}
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
