package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

func ratioOf(r benchkit.Row) float64 {
	if r.Ratio == nil {
		return math.Inf(1)
	}
	return *r.Ratio
}

func TestNewRowRatio(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cg, ours  float64
		wantRatio float64
	}{
		{"ours faster", 300, 100, 3},
		{"ours slower", 100, 400, 0.25},
		{"both zero", 0, 0, 1},
		{"ours zero", 5, 0, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratioOf(newRow("W", "c", "m", tc.cg, tc.ours)); got != tc.wantRatio {
				t.Fatalf("ratio %v, want %v", got, tc.wantRatio)
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	got := []string{
		formatValue(159578480), formatValue(-1234), formatValue(999.94), formatValue(12.345), formatValue(1.254),
		formatRatio(newRow("", "", "", 4911, 1).Ratio), formatRatio(newRow("", "", "", 1.5, 1).Ratio), formatRatio(nil),
	}
	want := []string{"159,578,480", "-1,234", "999.9", "12.3", "1.25", "4,911×", "1.50×", "∞"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// quickRun is the header of a -quick run, as benchMain makes it.
var quickRun = benchkit.Run{
	Command: "bench -quick", Commit: "1183cc1abcde", LoadStart: "1.00 2.00 3.00", Go: "go1.26.8 linux/amd64, GOMAXPROCS 2",
	Modules: []string{"k8s.io/client-go v0.37.2"}, Smoke: benchkit.QuickNote,
}

// TestTableMarkdown checks this harness's header and Markdown cells: the
// legend first, a -quick run said to be a smoke run, "∞" for an infinite
// ratio and "–" for a row without one.
func TestTableMarkdown(t *testing.T) {
	var b bytes.Buffer
	rows := []benchkit.Row{
		newRow("W5", "GetByKey", "ns/op", 74, 110.5),
		newRow("W3", "(c)", "allocs/op", 29, 0),
		withoutRatio(newRow("W6", "(d) relist", "peak heap ÷ own steady state (no ratio)", 2.16, 1.11)),
	}
	if err := table.WriteMarkdown(&b, quickRun, rows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"- ratio = client-go ÷ ours (> 1: ours faster or smaller)",
		`- workloads: defined in docs/benchmarks.md, "The workloads"`,
		"- run: `bench -quick` at commit 1183cc1abcde, 0001-01-01 00:00:00 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2; load average 1.00 2.00 3.00 at the start",
		"- -quick: a smoke run (small sizes, one repetition): its ratios show that the harness works and checks its results; they are not the product's figures (docs/benchmarks.md has those)",
		"",
		"| workload | case | metric | client-go | ours | ratio |",
		"|---|---|---|---:|---:|---:|",
		"| W5 | GetByKey | ns/op | 74.0 | 110.5 | 0.67× |",
		"| W3 | (c) | allocs/op | 29.0 | 0.00 | ∞ |",
		"| W6 | (d) relist | peak heap ÷ own steady state (no ratio) | 2.16 | 1.11 | – |",
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestTableJSONLines checks this harness's JSON keys: a first object
// holding the header under "run", then the rows.
func TestTableJSONLines(t *testing.T) {
	var b bytes.Buffer
	rows := []benchkit.Row{newRow("W1", "H=1", "ns/event", 3000, 1500), newRow("W3", "(c)", "allocs/op", 29, 0)}
	if err := table.WriteJSONLines(&b, quickRun, rows); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		{"run": map[string]any{
			"legend":    []any{"ratio = client-go ÷ ours (> 1: ours faster or smaller)", `workloads: defined in docs/benchmarks.md, "The workloads"`},
			"command":   "bench -quick",
			"commit":    "1183cc1abcde",
			"start":     "0001-01-01T00:00:00Z",
			"loadStart": "1.00 2.00 3.00",
			"go":        "go1.26.8 linux/amd64, GOMAXPROCS 2",
			"modules":   []any{"k8s.io/client-go v0.37.2"},
			"smoke":     benchkit.QuickNote,
		}},
		{"workload": "W1", "case": "H=1", "metric": "ns/event", "clientgo": 3000.0, "ours": 1500.0, "ratio": 2.0},
		{"workload": "W3", "case": "(c)", "metric": "allocs/op", "clientgo": 29.0, "ours": 0.0, "ratio": nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
