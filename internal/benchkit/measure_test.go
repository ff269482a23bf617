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
	if peak < base+64<<20 {
		t.Fatalf("peak %d B, want at least %d B (base + 64 MiB)", peak, base+64<<20)
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
