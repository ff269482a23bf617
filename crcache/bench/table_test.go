package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

// TestTable checks this harness's header, columns, units and ratios: the
// median of the rounds' ratios, not the ratio of the medians.
func TestTable(t *testing.T) {
	rows := []benchkit.Row{
		newRow("W7", "Get", "ns/op", []float64{2_500_000, 40_000, 3e9}, []float64{1000, 2000, 1e6}),
		newRow("W7", "Get", "allocs/op", []float64{12, 12, 12}, []float64{0, 0, 0}),
		newRow("reconcile", "10,000 pods", "p99", []float64{0, 900}, []float64{0, 100}),
	}
	var md, js bytes.Buffer
	run := benchkit.Run{
		Command: "bench -quick", Commit: "1183cc1abcde", LoadStart: "1.00 2.00 3.00", Go: "go1.26.8 linux/amd64, GOMAXPROCS 2",
		Modules: []string{"sigs.k8s.io/controller-runtime v0.25.2", "k8s.io/client-go v0.37.2"}, Smoke: benchkit.QuickNote,
	}
	if err := table.WriteMarkdown(&md, run, rows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"- ratio = controller-runtime ÷ crcache (> 1: crcache faster or smaller)",
		`- workloads: defined in docs/benchmarks.md, "The workloads" (W7, reconcile)`,
		"- run: `bench -quick` at commit 1183cc1abcde, 0001-01-01 00:00:00 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, sigs.k8s.io/controller-runtime v0.25.2, k8s.io/client-go v0.37.2; load average 1.00 2.00 3.00 at the start",
		"- " + benchkit.QuickNote,
		"",
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
	if err := table.WriteJSONLines(&js, run, rows[2:]); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"run":{"legend":["ratio = controller-runtime ÷ crcache (\u003e 1: crcache faster or smaller)","workloads: defined in docs/benchmarks.md, \"The workloads\" (W7, reconcile)"],` +
		`"command":"bench -quick","commit":"1183cc1abcde","start":"0001-01-01T00:00:00Z","loadStart":"1.00 2.00 3.00","go":"go1.26.8 linux/amd64, GOMAXPROCS 2",` +
		`"modules":["sigs.k8s.io/controller-runtime v0.25.2","k8s.io/client-go v0.37.2"],"smoke":"` + benchkit.QuickNote + `"}}` + "\n" +
		`{"workload":"reconcile","case":"10,000 pods","metric":"p99","controllerruntime":450,"ours":50,"ratio":5}` + "\n"
	if diff := cmp.Diff(wantJSON, js.String()); diff != "" {
		t.Errorf("JSON lines (-want +got):\n%s", diff)
	}
}
