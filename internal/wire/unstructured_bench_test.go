package wire

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informer/internal/crdtypes"
)

// workloadPage returns a JSON list of n W8 workloads, as a server sends
// them.
func workloadPage(tb testing.TB, n int) []byte {
	items := crdtypes.New(n)
	list := crdtypes.WorkloadList{Items: items}
	list.APIVersion, list.Kind, list.ResourceVersion = "kueue.bench.kubetyped.io/v1beta1", "WorkloadList", "1"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = list.APIVersion, "Workload"
	}
	b, err := json.Marshal(&list)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkUnstructuredDecode decodes a page of 500 W8 workloads as
// unstructured objects: with client-go's dynamic serializer, and with ours
// without and with sharing sub-trees.
func BenchmarkUnstructuredDecode(b *testing.B) {
	page := workloadPage(b, 500)
	theirs := dynamicJSONSerializer(b)
	for _, c := range []struct {
		name string
		dec  runtime.Decoder
	}{
		{"client-go", theirs},
		{"ours", NewUnstructuredSerializer(newUnstructuredDecoder(false), theirs)},
		{"ours-sharing", NewUnstructuredSerializer(newUnstructuredDecoder(true), theirs)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.dec.Decode(page, nil, &unstructured.UnstructuredList{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/object")
		})
	}
}
