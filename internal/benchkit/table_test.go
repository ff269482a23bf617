package benchkit

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testTable prints figures with two decimals, a ratio with a "×", and "–"
// for a row without one.
var testTable = Table{
	Theirs:    "client-go",
	TheirsKey: "clientgo",
	Ours:      "ours",
	Workloads: `docs/benchmarks.md, "The workloads"`,
	Value: func(metric string, v float64) string {
		return strconv.FormatFloat(v, 'f', 2, 64) + " " + metric
	},
	Ratio: func(r Row) string {
		if r.Ratio == nil {
			return "–"
		}
		return strconv.FormatFloat(*r.Ratio, 'f', 2, 64) + "×"
	},
}

// testRun is a finished run of a smoke test with a note.
var testRun = Run{
	Command:   "bench -quick",
	Commit:    "1183cc1abcde-dirty",
	Start:     time.Date(2026, 11, 27, 9, 10, 3, 0, time.UTC),
	End:       time.Date(2026, 11, 27, 9, 12, 45, 0, time.UTC),
	LoadStart: "1.20 0.90 0.80",
	LoadEnd:   "1.50 1.10 0.90",
	Go:        "go1.26.8 linux/amd64, GOMAXPROCS 2",
	Modules:   []string{"k8s.io/client-go v0.37.2"},
	Smoke:     QuickNote,
	Notes:     []string{"A note & <more>."},
}

// testHeader is the Markdown header of testRun in testTable.
var testHeader = []string{
	"- ratio = client-go ÷ ours (> 1: ours faster or smaller)",
	`- workloads: defined in docs/benchmarks.md, "The workloads"`,
	"- run: `bench -quick` at commit 1183cc1abcde-dirty, 2026-11-27 09:10:03–09:12:45 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2; load average 1.20 0.90 0.80 at the start, 1.50 1.10 0.90 at the end",
	"- " + QuickNote,
	"",
}

func ratio(v float64) *float64 { return &v }

// testRows have a case with HTML characters, which JSON escapes as
// encoding/json does, a row without a ratio and a row of ours alone.
var testRows = []Row{
	{Workload: "W3", Case: "(a) app=app-7 & <more>", Metric: "ns/op", Theirs: 5000, Ours: 2500, Ratio: ratio(2)},
	{Workload: "W3", Case: "(c)", Metric: "allocs/op", Theirs: 29, Ours: 0},
	{Workload: "E2", Case: "1000 updates", Metric: "p50 ms", Theirs: 1e-7, Ours: 3e21, Ratio: ratio(1.5)},
	{Workload: "E6", Case: "ours only", Metric: "stop s", Ours: 12.5, OursOnly: true},
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := testTable.WriteMarkdown(&b, testRun, testRows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(append(testHeader,
		"| workload | case | metric | client-go | ours | ratio |",
		"|---|---|---|---:|---:|---:|",
		"| W3 | (a) app=app-7 & <more> | ns/op | 5000.00 ns/op | 2500.00 ns/op | 2.00× |",
		"| W3 | (c) | allocs/op | 29.00 allocs/op | 0.00 allocs/op | – |",
		"| E2 | 1000 updates | p50 ms | 0.00 p50 ms | 3000000000000000000000.00 p50 ms | 1.50× |",
		"| E6 | ours only | stop s | – | 12.50 stop s | – |",
		"",
		"A note & <more>.",
		"",
	), "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestWriteJSONLines(t *testing.T) {
	var b bytes.Buffer
	table := testTable
	table.TheirsKey = "controllerruntime"
	if err := table.WriteJSONLines(&b, testRun, testRows); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`{"run":{"legend":["ratio = client-go ÷ ours (\u003e 1: ours faster or smaller)","workloads: defined in docs/benchmarks.md, \"The workloads\""],` +
			`"command":"bench -quick","commit":"1183cc1abcde-dirty","start":"2026-11-27T09:10:03Z","end":"2026-11-27T09:12:45Z",` +
			`"loadStart":"1.20 0.90 0.80","loadEnd":"1.50 1.10 0.90","go":"go1.26.8 linux/amd64, GOMAXPROCS 2","modules":["k8s.io/client-go v0.37.2"],` +
			`"smoke":"` + QuickNote + `","notes":["A note \u0026 \u003cmore\u003e."]}}`,
		`{"workload":"W3","case":"(a) app=app-7 \u0026 \u003cmore\u003e","metric":"ns/op","controllerruntime":5000,"ours":2500,"ratio":2}`,
		`{"workload":"W3","case":"(c)","metric":"allocs/op","controllerruntime":29,"ours":0,"ratio":null}`,
		`{"workload":"E2","case":"1000 updates","metric":"p50 ms","controllerruntime":1e-7,"ours":3e+21,"ratio":1.5}`,
		`{"workload":"E6","case":"ours only","metric":"stop s","controllerruntime":null,"ours":12.5,"ratio":null}`,
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestWriteJSONLinesStopsAtARowJSONCannotHold(t *testing.T) {
	var b bytes.Buffer
	rows := []Row{testRows[1], {Workload: "W7", Case: "Get", Metric: "ns/op", Theirs: 5, Ours: 0, Ratio: ratio(math.Inf(1))}, testRows[0]}
	err := testTable.WriteJSONLines(&b, Run{}, rows)
	if err == nil || !strings.Contains(err.Error(), "encoding row W7/Get/ns/op: json: unsupported value: +Inf") {
		t.Fatalf("error %v, want one naming row W7/Get/ns/op", err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	want := `{"workload":"W3","case":"(c)","metric":"allocs/op","clientgo":29,"ours":0,"ratio":null}` + "\n"
	if diff := cmp.Diff(want, lines[1]); len(lines) != 3 || diff != "" {
		t.Fatalf("lines before the failing row: %q, want the header and %q", lines, want)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWritersReturnWriteErrors(t *testing.T) {
	if err := testTable.WriteMarkdown(failingWriter{}, testRun, testRows); !errors.Is(err, errWrite) {
		t.Errorf("WriteMarkdown: %v, want %v", err, errWrite)
	}
	if err := testTable.WriteJSONLines(failingWriter{}, testRun, testRows); !errors.Is(err, errWrite) {
		t.Errorf("WriteJSONLines: %v, want %v", err, errWrite)
	}
}
