package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	kjson "sigs.k8s.io/json"

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

func BenchmarkTypedJSONWorkload(b *testing.B) {
	b.Run("sigs.k8s.io-json", func(b *testing.B) {
		data := benchWorkloads(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var w crdtypes.Workload
			if err := kjson.UnmarshalCaseSensitivePreserveInts(data[i%len(data)], &w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		data := benchWorkloads(b)
		d, err := NewTypedJSON(reflect.TypeFor[crdtypes.Workload]())
		if err != nil {
			b.Fatal(err)
		}
		strs := NewInternTable()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var w crdtypes.Workload
			if _, err := decodeTyped(d, data[i%len(data)], &w, strs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
