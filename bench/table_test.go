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

// TestTableMarkdown checks this harness's Markdown cells.
func TestTableMarkdown(t *testing.T) {
	var b bytes.Buffer
	rows := []benchkit.Row{newRow("W5", "GetByKey", "ns/op", 74, 110.5), newRow("W3", "(c)", "allocs/op", 29, 0)}
	if err := table.WriteMarkdown(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"| workload | case | metric | client-go | ours | ratio |",
		"|---|---|---|---:|---:|---:|",
		"| W5 | GetByKey | ns/op | 74.0 | 110.5 | 0.67× |",
		"| W3 | (c) | allocs/op | 29.0 | 0.00 | ∞ |",
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestTableJSONLines checks this harness's JSON keys.
func TestTableJSONLines(t *testing.T) {
	var b bytes.Buffer
	rows := []benchkit.Row{newRow("W1", "H=1", "ns/event", 3000, 1500), newRow("W3", "(c)", "allocs/op", 29, 0)}
	if err := table.WriteJSONLines(&b, rows); err != nil {
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
		{"workload": "W1", "case": "H=1", "metric": "ns/event", "clientgo": 3000.0, "ours": 1500.0, "ratio": 2.0},
		{"workload": "W3", "case": "(c)", "metric": "allocs/op", "clientgo": 29.0, "ours": 0.0, "ratio": nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
