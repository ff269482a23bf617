package benchkit

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	vs := []float64{3, 1, 2}
	got := []float64{Median(vs), Median([]float64{4, 1, 3, 2}), Median([]float64{7})}
	if diff := cmp.Diff([]float64{2, 2.5, 7}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 1, 2}, vs); diff != "" {
		t.Fatalf("Median reordered its input (-want +got):\n%s", diff)
	}
	type run struct{ ns, allocs float64 }
	runs := []run{{9, 1}, {1, 3}, {5, 2}}
	got = []float64{MedianOf(runs, func(r run) float64 { return r.ns }), MedianOf(runs, func(r run) float64 { return r.allocs })}
	if diff := cmp.Diff([]float64{5, 2}, got); diff != "" {
		t.Fatalf("MedianOf (-want +got):\n%s", diff)
	}
}

var sink []byte

func TestHeapSamplerSeesAnAllocation(t *testing.T) {
	runtime.GC()
	base := ReadHeapObjects()
	s := StartHeapSampler(time.Millisecond)
	sink = make([]byte, 64<<20)
	time.Sleep(10 * time.Millisecond)
	peak := s.Stop()
	sink = nil
	// The allocation may start a cycle that frees what was still live at
	// base (objects a finalizer kept for one more cycle, as other tests'
	// files): allow 1 MiB of that.
	if want := base + 63<<20; peak < want {
		t.Fatalf("peak %d B, want at least %d B (base + 64 MiB, less 1 MiB)", peak, want)
	}
}

// TestHeapSamplerCountsGCCycles checks that GCCycles counts the cycles
// completed in the window, and none outside it.
func TestHeapSamplerCountsGCCycles(t *testing.T) {
	runtime.GC()
	s := StartHeapSampler(time.Millisecond)
	runtime.GC()
	runtime.GC()
	s.Stop()
	runtime.GC()
	// Other goroutines of the test binary may start a cycle too.
	if n := s.GCCycles(); n < 2 {
		t.Fatalf("%d GC cycles, want at least the 2 forced in the window", n)
	}
	idle := StartHeapSampler(time.Hour)
	idle.Stop()
	if n := idle.GCCycles(); n > 1 {
		t.Fatalf("%d GC cycles in an empty window, want at most 1", n)
	}
}

func TestStartCPUProfileWritesAProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := StartCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Fatalf("profile %s: %v, want a file that is not empty", path, err)
	}
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Fatal("StartCPUProfile in a missing directory: no error")
	}
}
