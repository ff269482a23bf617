package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informer/internal/crdtypes"
)

// workloadCodecs returns the JSON decoders of a REST client of W8's
// workloads: apimachinery's, and the one decoding with the typed JSON
// decoder.
func workloadCodecs(t testing.TB) (codec, typed runtime.Decoder, interns *InternTable) {
	t.Helper()
	scheme, types := workloadJSONTypes(t)
	decoder := func(codecs runtime.NegotiatedSerializer) runtime.Decoder {
		d, err := runtime.NewClientNegotiator(codecs, crdtypes.GroupVersion).Decoder(runtime.ContentTypeJSON, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	interns = newBareInternTable()
	return decoder(NewRESTCodecs(scheme, nil, nil)), decoder(NewRESTCodecs(scheme, interns, types)), interns
}

// decodeWorkloadBoth decodes data with both decoders, into each kind of
// object the REST client passes (none for watch events, a new list for
// lists) and some it does not, with and without default kinds: they must
// return the same object and kind, and fail together.
func decodeWorkloadBoth(t testing.TB, codec, typed runtime.Decoder, data []byte) {
	t.Helper()
	gvk := crdtypes.GroupVersion.WithKind("Workload")
	intos := []func() runtime.Object{
		func() runtime.Object { return nil },
		func() runtime.Object { return &crdtypes.WorkloadList{} },
		func() runtime.Object { return &crdtypes.Workload{} },
		func() runtime.Object { return &crdtypes.Workload{Spec: crdtypes.WorkloadSpec{QueueName: "q"}} },
		func() runtime.Object { return &metav1.Status{} },
	}
	for i, into := range intos {
		for _, defaults := range []*schema.GroupVersionKind{nil, &gvk} {
			wantObj, wantGVK, wantErr := codec.Decode(data, defaults, into())
			gotObj, gotGVK, gotErr := typed.Decode(data, defaults, into())
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("decoding %q into #%d: apimachinery's error %v, ours %v", data, i, wantErr, gotErr)
			}
			if wantErr != nil {
				continue
			}
			if diff := cmp.Diff(wantObj, gotObj); diff != "" {
				t.Fatalf("decoding %q into #%d (-apimachinery +ours):\n%s", data, i, diff)
			}
			if diff := cmp.Diff(wantGVK, gotGVK); diff != "" {
				t.Fatalf("the kind of %q into #%d (-apimachinery +ours):\n%s", data, i, diff)
			}
		}
	}
}

// workloadInputs are bodies and watch objects of W8's workloads, and
// variations where the kind is hard to find.
func workloadInputs(t testing.TB) [][]byte {
	t.Helper()
	workloads := crdtypes.New(9)
	var out [][]byte
	for i := range workloads {
		w := &workloads[i]
		if i%3 != 2 {
			w.TypeMeta = metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "Workload"}
		}
		data, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	list := crdtypes.WorkloadList{TypeMeta: metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "WorkloadList"}, Items: workloads[:3]}
	list.ResourceVersion = "42"
	data, err := json.Marshal(&list)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, data)
	for _, s := range []string{
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","metadata":{"name":"a"}}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"WorkloadList","items":[{"metadata":{"name":"a"}}]}`,
		`{"apiVersion":"v1","kind":"Status","status":"Failure","message":"gone","code":410}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Status","status":"Failure"}`,
		`{"kind":"Workload","metadata":{"name":"a"}}`, `{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","Kind":"WorkloadList"}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","APIVERSION":"v1"}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","\u212aind":"Status","kind":"Workload"}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","kind":null}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":null,"kind":"Workload"}`,
		`{"apiVersion":"a/b/c","kind":"Workload"}`, `{"apiVersion":"v2","kind":"Workload"}`, `{"apiVersion":5,"kind":"Workload"}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Gadget"}`, `{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload"} x`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","spec":{"priority":1.5}}`,
		`{"apiVersion":"kueue.bench.kubetyped.io/v1beta1","kind":"Workload","metadata":{"creationTimestamp":"x"}}`,
		`null`, `{}`, `[]`, ``, `"Workload"`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

func TestTypedJSONDecoderMatchesCodec(t *testing.T) {
	codec, typed, interns := workloadCodecs(t)
	inputs := workloadInputs(t)
	for _, data := range inputs {
		decodeWorkloadBoth(t, codec, typed, data)
	}
	// The workloads were decoded by the typed JSON decoder, not handed to
	// apimachinery's: their strings are in the table.
	if interns.len() == 0 {
		t.Fatal("no string was interned")
	}
	// Truncations and edits of the workloads, where the decoders must fail
	// together.
	r := rand.New(rand.NewPCG(1, 2))
	for _, data := range inputs[:3] {
		for range 30 {
			i := r.IntN(len(data))
			decodeWorkloadBoth(t, codec, typed, data[:i])
			edited := append(append(append([]byte(nil), data[:i]...), []byte(fmt.Sprint([]string{`"`, "}", ",", "null", "0"}[r.IntN(5)]))...), data[i:]...)
			decodeWorkloadBoth(t, codec, typed, edited)
		}
	}
}

func FuzzTypedJSONDecoderMatchesCodec(f *testing.F) {
	codec, typed, _ := workloadCodecs(f)
	for _, data := range workloadInputs(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeWorkloadBoth(t, codec, typed, data)
	})
}
