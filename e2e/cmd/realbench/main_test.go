package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
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
// lines: the header (legend, run, what -quick means here), the rows, a
// ratio of figures that are not both positive left out, and the notes
// under the table, which explain E2's negative latency from the response.
func TestRowsFollowTheOutputContract(t *testing.T) {
	rows := []benchkit.Row{
		newRow("E1", "5000 pods", "client CPU s until synced", 3, 1.5),
		newRow("E2", "1000 updates", "p50 latency ms from response", -2, 1),
	}
	cfg := config{pods: 5000, runs: 3, updates: 1000, writers: 4, e1: true, e2: true}
	info := benchkit.Run{
		Command: "realbench -quick", Commit: "1183cc1abcde", LoadStart: "1.00 2.00 3.00", Go: "go1.26.8 linux/amd64, GOMAXPROCS 2",
		Modules: []string{"k8s.io/client-go v0.37.2"}, Smoke: quickNote,
	}
	pods := "5000 production-like pods, 9644 B each as protobuf on the server; E1 medians of 3 interleaved runs per side; E2 medians of 3 rounds of 1000 updates by 4 writers."
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		cfg.json = asJSON
		if err := report(&out, cfg, info, 9644, 0, rows, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"- ratio = client-go ÷ ours (> 1: ours faster or smaller)",
			`- workloads: defined in docs/benchmarks.md, "The workloads" (E1, E2, E5)`,
			"- run: `realbench -quick` at commit 1183cc1abcde, 0001-01-01 00:00:00 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2; load average 1.00 2.00 3.00 at the start",
			"- -quick: CI mode: E2 makes rounds of 1,000 updates instead of 10,000, so its ratios are a smoke run, not the product's figures; E1 runs as in a full run",
			"",
			"| workload | case | metric | client-go | ours | ratio |",
			"|---|---|---|---:|---:|---:|",
			"| E1 | 5000 pods | client CPU s until synced | 3 | 1.5 | 2.00× |",
			"| E2 | 1000 updates | p50 latency ms from response | -2 | 1 | – |",
			"",
			pods,
			"",
			`E2: latency "from response" is the time from the writer reading the response to its write until the handler's notification; it is negative when the handler hears of the write (its watch event) before the writer has read the write's response, which is why its p50 is often negative and has no ratio. Latency "from request" counts from sending the write, and is always positive.`,
		}
		if asJSON {
			header, err := json.Marshal(map[string]any{"run": map[string]any{
				"legend":  []string{"ratio = client-go ÷ ours (> 1: ours faster or smaller)", `workloads: defined in docs/benchmarks.md, "The workloads" (E1, E2, E5)`},
				"command": "realbench -quick", "commit": "1183cc1abcde", "start": "0001-01-01T00:00:00Z", "loadStart": "1.00 2.00 3.00",
				"go": "go1.26.8 linux/amd64, GOMAXPROCS 2", "modules": []string{"k8s.io/client-go v0.37.2"}, "smoke": quickNote,
				"notes": []string{pods, e2Note},
			}})
			if err != nil {
				t.Fatal(err)
			}
			want = []string{
				string(header),
				`{"workload":"E1","case":"5000 pods","metric":"client CPU s until synced","clientgo":3,"ours":1.5,"ratio":2}`,
				`{"workload":"E2","case":"1000 updates","metric":"p50 latency ms from response","clientgo":-2,"ours":1,"ratio":null}`,
			}
		}
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		if asJSON {
			// The header's keys in the order encoding/json sorts a map's.
			got[0] = reencode(t, got[0])
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("output with json=%v (-want +got):\n%s", asJSON, diff)
		}
	}
}

// TestCacheRowsFollowInASectionOfTheirOwn checks that the rows comparing
// controller-runtime's cache with crcache follow the client-go table in a
// section whose columns and legend name the two caches, with a note saying
// what was synced; in JSON, as a second header line and its rows.
func TestCacheRowsFollowInASectionOfTheirOwn(t *testing.T) {
	rows := []benchkit.Row{newRow("E1", "5000 pods", "client CPU s until synced", 3, 1.5)}
	cacheRows := []benchkit.Row{newRow("E1 through crcache", "5000 pods, same data, default settings", "retained heap MB", 90, 40)}
	cfg := config{pods: 5000, runs: 3, updates: 1000, writers: 4, crcache: true}
	info := benchkit.Run{Command: "realbench", Commit: "1183cc1abcde", LoadStart: "1.00 2.00 3.00", Go: "go1.26.8 linux/amd64, GOMAXPROCS 2", Modules: []string{"k8s.io/client-go v0.37.2"}}
	note := "E1 through crcache: the same 5000 pods synced by a cache.Cache built by controller-runtime's cache.New and by crcache.New with default options, each in its own process; medians of 3 interleaved runs per side."
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		cfg.json = asJSON
		if err := report(&out, cfg, info, 9644, 0, rows, cacheRows); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{
			"- ratio = controller-runtime ÷ crcache (> 1: crcache faster or smaller)",
			`- workloads: defined in docs/benchmarks.md, "The workloads" (E1 through crcache, E5)`,
			"- run: `realbench` at commit 1183cc1abcde, 0001-01-01 00:00:00 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2; load average 1.00 2.00 3.00 at the start",
			"",
			"| workload | case | metric | controller-runtime | crcache | ratio |",
			"|---|---|---|---:|---:|---:|",
			"| E1 through crcache | 5000 pods, same data, default settings | retained heap MB | 90.0 | 40.0 | 2.25× |",
			"",
			note,
		}
		got := lines[max(0, len(lines)-len(want)):]
		if asJSON {
			header, err := json.Marshal(map[string]any{"run": map[string]any{
				"legend":  []string{"ratio = controller-runtime ÷ crcache (> 1: crcache faster or smaller)", `workloads: defined in docs/benchmarks.md, "The workloads" (E1 through crcache, E5)`},
				"command": "realbench", "commit": "1183cc1abcde", "start": "0001-01-01T00:00:00Z", "loadStart": "1.00 2.00 3.00",
				"go": "go1.26.8 linux/amd64, GOMAXPROCS 2", "modules": []string{"k8s.io/client-go v0.37.2"}, "notes": []string{note},
			}})
			if err != nil {
				t.Fatal(err)
			}
			want = []string{
				string(header),
				`{"workload":"E1 through crcache","case":"5000 pods, same data, default settings","metric":"retained heap MB","controllerruntime":90,"ours":40,"ratio":2.25}`,
			}
			got = lines[len(lines)-2:]
			got[0] = reencode(t, got[0])
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("output with json=%v (-want +got):\n%s", asJSON, diff)
		}
	}
}

// reencode decodes a JSON object and encodes it again, with its keys sorted.
func reencode(t *testing.T, line string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPeakMetricSaysWhenNoCycleCompleted checks that a heap sampled
// without a completed GC cycle is not called a peak.
func TestPeakMetricSaysWhenNoCycleCompleted(t *testing.T) {
	cycled := []syncResult{{PeakGCCycles: 4}, {PeakGCCycles: 1}}
	got := []string{peakMetric(cycled, cycled), peakMetric(cycled, []syncResult{{PeakGCCycles: 3}, {}})}
	want := []string{"peak heap MB", "heap growth MB (no GC cycle completed: bytes allocated, not a peak)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

var allocSink []byte

// TestWriteAllocsProfileCountsTheLatestAllocations checks that the
// allocation profile -profile writes counts what was allocated after the
// last GC cycle: a 64 MiB allocation made just before it.
func TestWriteAllocsProfileCountsTheLatestAllocations(t *testing.T) {
	runtime.GC()
	var before bytes.Buffer
	if err := writeAllocsProfile(&before, 1); err != nil {
		t.Fatal(err)
	}
	// With GC off, no cycle completes between the allocation and the
	// profile unless writeAllocsProfile runs one.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	allocSink = make([]byte, 64<<20)
	allocSink = nil
	var after bytes.Buffer
	if err := writeAllocsProfile(&after, 1); err != nil {
		t.Fatal(err)
	}
	if grew := allocatedBytes(t, after.String()) - allocatedBytes(t, before.String()); grew < 63<<20 {
		t.Fatalf("the profile's bytes allocated grew by %d B, want about 64 MiB (at least 63 MiB: the profile samples)", grew)
	}
}

// allocatedBytes reads the total bytes allocated from the first line of a
// text allocation profile: "heap profile: N: B [AN: AB] @ heap/R".
func allocatedBytes(t *testing.T, profile string) int64 {
	t.Helper()
	var inuseObjects, inuseBytes, allocObjects, allocBytes, rate int64
	if _, err := fmt.Sscanf(profile, "heap profile: %d: %d [%d: %d] @ heap/%d", &inuseObjects, &inuseBytes, &allocObjects, &allocBytes, &rate); err != nil {
		t.Fatalf("reading the profile's first line %q: %v", strings.SplitN(profile, "\n", 2)[0], err)
	}
	return allocBytes
}
