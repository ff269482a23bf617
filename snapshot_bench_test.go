package informer

import (
	"bytes"
	"compress/gzip"
	"context"
	"hash/crc32"
	"io"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/wire"
)

// BenchmarkSnapshot measures the parts of a snapshot of 100,000
// production-like pods (internal/prodpods): taking the pointers under the
// store's read lock (all the lock is held for), encoding the file, writing
// it (encoding, fsync, rename) unpaced as the save when Run ends and paced
// as a periodic save (wall and CPU time), reading it back with the interning
// decoder, the CRC-32C alone, and gzip at its fastest level (not used:
// see docs/restart.md).
func BenchmarkSnapshot(b *testing.B) {
	const n = 100_000
	pods := prodpods.New(n)
	store := NewIndexer[*corev1.Pod](nil)
	items := make([]*corev1.Pod, n)
	for i := range pods {
		items[i] = &pods[i]
	}
	if err := store.Replace(items, "1"); err != nil {
		b.Fatal(err)
	}
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	codec := newSnapshotCodec[*corev1.Pod](wire.NewInternTable())
	var encoded bytes.Buffer
	if _, err := encodeSnapshot(&encoded, snapshotHeader{Scope: scope, ResourceVersion: "1"}, codec, items); err != nil {
		b.Fatal(err)
	}
	perObject := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/object")
	}
	b.Run("pointers", func(b *testing.B) {
		for b.Loop() {
			if objs, _ := store.listAtVersion(); len(objs) != n {
				b.Fatal(len(objs))
			}
		}
		perObject(b)
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			objs, rv := store.listAtVersion()
			if _, err := encodeSnapshot(io.Discard, snapshotHeader{Scope: scope, ResourceVersion: rv}, codec, objs); err != nil {
				b.Fatal(err)
			}
		}
		perObject(b)
		b.ReportMetric(float64(encoded.Len())/n, "bytes/object")
	})
	// write writes the snapshot, paced as a periodic save is if paced, and
	// reports the process's CPU time (getrusage) per object besides the
	// wall time: a paced save should take about savePaceDuty times the
	// wall time of an unpaced one for the same CPU.
	write := func(paced bool) func(b *testing.B) {
		return func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "pods"+snapshotSuffix)
			cpuBefore, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				objs, rv := store.listAtVersion()
				var pace *savePacer
				if paced {
					pace = newSavePacer(context.Background(), clock.RealClock{})
				}
				if _, err := writeSnapshotPaced(path, snapshotHeader{Scope: scope, ResourceVersion: rv}, codec, objs, pace); err != nil {
					b.Fatal(err)
				}
			}
			cpuAfter, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			perObject(b)
			b.ReportMetric(float64((cpuAfter-cpuBefore).Nanoseconds())/float64(b.N)/n, "cpu-ns/object")
		}
	}
	b.Run("write", write(false))
	b.Run("write-paced", write(true))
	b.Run("read", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "pods"+snapshotSuffix)
		if _, err := writeSnapshot(path, snapshotHeader{Scope: scope, ResourceVersion: "1"}, codec, items); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			snap, err := readSnapshot(path, scope, newSnapshotCodec[*corev1.Pod](wire.NewInternTable()))
			if err != nil || len(snap.objects) != n {
				b.Fatal(err)
			}
		}
		perObject(b)
	})
	b.Run("crc32c", func(b *testing.B) {
		for b.Loop() {
			crc32.Checksum(encoded.Bytes(), castagnoli)
		}
		perObject(b)
	})
	b.Run("gzip-fastest", func(b *testing.B) {
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			w, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
			w.Write(encoded.Bytes())
			w.Close()
		}
		perObject(b)
		b.ReportMetric(float64(out.Len())/n, "bytes/object")
	})
}

// BenchmarkSnapshotRestore reads and decodes a snapshot of 5,000
// production-like pods (E4's size) as a starting process does: the pods it
// was written from are gone and the heap collected before each restore,
// so that the collector runs as often as it would in a fresh process. It
// reports the process's CPU time (getrusage: the decoding goroutine and the
// collector's workers alike) per object, which a loaded machine does not
// inflate as it does wall time, the garbage collections per restore and
// the peak of the live heap (sampled every millisecond).
func BenchmarkSnapshotRestore(b *testing.B) {
	const n = 5_000
	path := filepath.Join(b.TempDir(), "pods"+snapshotSuffix)
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	func() {
		pods := prodpods.New(n)
		items := make([]*corev1.Pod, n)
		for i := range pods {
			items[i] = &pods[i]
		}
		if _, err := writeSnapshot(path, snapshotHeader{Scope: scope, ResourceVersion: "1"}, newSnapshotCodec[*corev1.Pod](nil), items); err != nil {
			b.Fatal(err)
		}
	}()
	var cpu time.Duration
	var gcs uint64
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		cpuBefore, err := benchkit.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		sampler := benchkit.StartHeapSampler(time.Millisecond)
		b.StartTimer()
		snap, err := readSnapshot(path, scope, newSnapshotCodec[*corev1.Pod](wire.NewInternTable()))
		if err != nil || len(snap.objects) != n {
			b.Fatal(err)
		}
		b.StopTimer()
		cpuAfter, err := benchkit.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, sampler.Stop())
		cpu += cpuAfter - cpuBefore
		gcs += sampler.GCCycles()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/n, "cpu-ns/object")
	b.ReportMetric(float64(gcs)/float64(b.N), "gcs/op")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}
