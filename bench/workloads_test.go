package main

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/benchkit"
)

// rowShape is a row without its measured values.
type rowShape struct{ Workload, Case, Metric string }

func shapes(rows []benchkit.Row) []rowShape {
	out := make([]rowShape, len(rows))
	for i, r := range rows {
		out[i] = rowShape{r.Workload, r.Case, r.Metric}
	}
	return out
}

// checkRows fails unless rows have exactly the wanted shapes and every
// client-go figure is positive.
func checkRows(t *testing.T, rows []benchkit.Row, want []rowShape) {
	t.Helper()
	if diff := cmp.Diff(want, shapes(rows)); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if r.Theirs <= 0 || r.Ours < 0 {
			t.Errorf("%s %s %s: client-go %v, ours %v", r.Workload, r.Case, r.Metric, r.Theirs, r.Ours)
		}
	}
}

func TestDispatchWorkload(t *testing.T) {
	before, procs := runtime.NumGoroutine(), runtime.GOMAXPROCS(0)
	rows, err := runDispatch(tinyConfig)
	if err != nil {
		t.Fatal(err)
	}
	var want []rowShape
	for i, c := range []string{"H=1", "H=8", "H=8, one sleeps 1 ms/event (the other 7)", "H=1, GOMAXPROCS=1", "H=8, GOMAXPROCS=1"} {
		metrics := []string{"ns/event", "CPU ns/event (process)", "allocs/event", "B/event"}
		if i == 2 {
			metrics = metrics[:1] // the slow handler's own figures are not W1's
		}
		for _, m := range metrics {
			want = append(want, rowShape{"W1", c, m})
		}
	}
	writes := "cache writes alone (no informer)"
	want = append(want, rowShape{"W1", writes, "ns/event"}, rowShape{"W1", writes, "CPU ns/event (process)"})
	checkRows(t, rows, want)
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS is %d after W1, want it back at %d", got, procs)
	}
	checkNoGoroutineLeft(t, before)
}

func TestInitialSyncWorkload(t *testing.T) {
	before := runtime.NumGoroutine()
	rows, err := runInitialSync(tinyConfig)
	if err != nil {
		t.Fatal(err)
	}
	kase := "list of 7,500 pods"
	checkRows(t, rows, []rowShape{
		{"W2", kase, "time to synced (ms)"}, {"W2", kase, "allocs/pod"}, {"W2", kase, "B/pod"},
		{"W2", kase, "retained heap/pod (B)"},
	})
	checkNoGoroutineLeft(t, before)
}

func TestStoreWorkloads(t *testing.T) {
	var rows []benchkit.Row
	for _, run := range []func(config) ([]benchkit.Row, error){runList, runIndex, runGet} {
		rs, err := run(tinyConfig)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	var want []rowShape
	for _, c := range listCases {
		for _, m := range []string{"ns/op", "allocs/op", "B/op"} {
			want = append(want, rowShape{"W3", c.name, m})
		}
	}
	want = append(want,
		rowShape{"store", "7,500 pods, namespace index", "retained heap/pod (B)"},
		rowShape{"W4", `ByIndex("byNode", "node-7")`, "ns/op"},
		rowShape{"W4", `ByIndex("byNode", "node-7")`, "allocs/op"},
		rowShape{"W4", "Update (node-7 ⇄ node-8)", "ns/op"},
		rowShape{"W4", "Update (node-7 ⇄ node-8)", "allocs/op"},
		rowShape{"W5", `GetByKey("ns-7/pod-7007")`, "ns/op"},
		rowShape{"W5", `Namespace("ns-7").Get("pod-7007")`, "ns/op"},
	)
	if diff := cmp.Diff(want, shapes(rows)); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if r.Metric == "ns/op" && (r.Theirs <= 0 || r.Ours <= 0) {
			t.Errorf("%s %s: client-go %v ns/op, ours %v ns/op", r.Workload, r.Case, r.Theirs, r.Ours)
		}
	}
}
