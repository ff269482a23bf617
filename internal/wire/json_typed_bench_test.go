package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	kjson "sigs.k8s.io/json"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// benchWorkloads returns the JSON of 64 of W8's workloads.
func benchWorkloads(b *testing.B) [][]byte {
	var out [][]byte
	size := 0
	for _, w := range crdtypes.New(64) {
		data, err := json.Marshal(&w)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
		size += len(data)
	}
	b.SetBytes(int64(size / len(out)))
	return out
}

// loopCPU runs decode(i) in b's loop and also reports the process's CPU
// time per call (cpu-ns/op, garbage collection included), which, unlike
// ns/op, does not count waiting for a core on a shared machine.
func loopCPU(b *testing.B, decode func(i int)) {
	b.ReportAllocs()
	start, err := benchkit.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for ; b.Loop(); n++ {
		decode(n)
	}
	end, err := benchkit.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(end-start)/float64(n), "cpu-ns/op")
}

func BenchmarkTypedJSONWorkload(b *testing.B) {
	b.Run("sigs.k8s.io-json", func(b *testing.B) {
		data := benchWorkloads(b)
		loopCPU(b, func(i int) {
			var w crdtypes.Workload
			if err := kjson.UnmarshalCaseSensitivePreserveInts(data[i%len(data)], &w); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("typed", func(b *testing.B) {
		data := benchWorkloads(b)
		d, err := NewTypedJSON(reflect.TypeFor[crdtypes.Workload]())
		if err != nil {
			b.Fatal(err)
		}
		strs := NewInternTable()
		loopCPU(b, func(i int) {
			var w crdtypes.Workload
			if _, err := decodeTyped(d, data[i%len(data)], &w, strs); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkTypedJSONListPage decodes a list page of 500 W8 workloads
// (one op: the page) into a WorkloadList, with a table per page.
func BenchmarkTypedJSONListPage(b *testing.B) {
	page := workloadPage(b, crdPageSizeForBench)
	b.SetBytes(int64(len(page)))
	d, err := NewTypedJSON(reflect.TypeFor[crdtypes.WorkloadList]())
	if err != nil {
		b.Fatal(err)
	}
	loopCPU(b, func(int) {
		var list crdtypes.WorkloadList
		if _, err := decodeTyped(d, page, &list, NewInternTable()); err != nil {
			b.Fatal(err)
		}
	})
}

// crdPageSizeForBench is the list page size of W8 (bench's crdPageSize).
const crdPageSizeForBench = 500
