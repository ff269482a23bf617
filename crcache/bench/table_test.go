package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

// TestTable checks this harness's columns, units and ratios: the median of
// the rounds' ratios, not the ratio of the medians.
func TestTable(t *testing.T) {
	rows := []benchkit.Row{
		newRow("W7", "Get", "ns/op", []float64{2_500_000, 40_000, 3e9}, []float64{1000, 2000, 1e6}),
		newRow("W7", "Get", "allocs/op", []float64{12, 12, 12}, []float64{0, 0, 0}),
		newRow("reconcile", "10,000 pods", "p99", []float64{0, 900}, []float64{0, 100}),
	}
	var md, js bytes.Buffer
	if err := table.WriteMarkdown(&md, rows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"| workload | case | metric | controller-runtime | crcache | ratio |",
		"|---|---|---|---:|---:|---:|",
		"| W7 | Get | ns/op | 2.50 ms | 2.0 µs | 2500× |",
		"| W7 | Get | allocs/op | 12 | 0 | +Inf× |",
		"| reconcile | 10,000 pods | p99 | 450 ns | 50 ns | 5.0× |",
		"",
	}, "\n")
	if diff := cmp.Diff(want, md.String()); diff != "" {
		t.Errorf("Markdown (-want +got):\n%s", diff)
	}
	if err := table.WriteJSONLines(&js, rows[2:]); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"workload":"reconcile","case":"10,000 pods","metric":"p99","controllerruntime":450,"ours":50,"ratio":5}` + "\n"
	if diff := cmp.Diff(wantJSON, js.String()); diff != "" {
		t.Errorf("JSON lines (-want +got):\n%s", diff)
	}
}
