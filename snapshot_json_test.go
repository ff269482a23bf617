package informer

import (
	stdjson "encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// numberWidget is a CRD Go type whose fields hold numbers the ways a CRD
// type can: in interface values (any, maps and lists of any, nested) and
// in typed fields.
type numberWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              numberWidgetSpec `json:"spec"`
}

type numberWidgetSpec struct {
	Any    any                 `json:"any,omitempty"`
	Values map[string]any      `json:"values,omitempty"`
	List   []any               `json:"list,omitempty"`
	Nested *numberWidgetNested `json:"nested,omitempty"`
	Float  float64             `json:"float"` // omitempty would drop -0: see snapshot_json.go
	Int    int64               `json:"int,omitempty"`
	Name   string              `json:"name,omitempty"`
}

type numberWidgetNested struct {
	Config map[string]any `json:"config,omitempty"`
	Items  []numberItem   `json:"items,omitempty"`
}

type numberItem struct {
	Value any `json:"value"`
}

func (w *numberWidget) DeepCopyObject() k8sruntime.Object {
	out := &numberWidget{TypeMeta: w.TypeMeta, ObjectMeta: *w.ObjectMeta.DeepCopy(), Spec: w.Spec}
	s := &out.Spec
	s.Any = k8sruntime.DeepCopyJSONValue(w.Spec.Any)
	if w.Spec.Values != nil {
		s.Values = k8sruntime.DeepCopyJSON(w.Spec.Values)
	}
	if w.Spec.List != nil {
		s.List = k8sruntime.DeepCopyJSONValue(w.Spec.List).([]any)
	}
	if n := w.Spec.Nested; n != nil {
		s.Nested = &numberWidgetNested{}
		if n.Config != nil {
			s.Nested.Config = k8sruntime.DeepCopyJSON(n.Config)
		}
		for _, item := range n.Items {
			s.Nested.Items = append(s.Nested.Items, numberItem{Value: k8sruntime.DeepCopyJSONValue(item.Value)})
		}
	}
	return out
}

type numberWidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []numberWidget `json:"items"`
}

func (l *numberWidgetList) DeepCopyObject() k8sruntime.Object {
	out := &numberWidgetList{TypeMeta: l.TypeMeta, ListMeta: *l.ListMeta.DeepCopy()}
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*numberWidget))
	}
	return out
}

var numberWidgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "numberwidgets"}

// hostileNumbers are JSON numbers whose decoding is easy to change: past
// 2^53, negative zero, out of range, integral floats, denormals, the
// int64 bounds and just past them, exponents.
var hostileNumbers = []string{
	"9007199254740993", "-9007199254740993", "-0", "-0.0", "0.0", "0", "2.0", "2", "1.0e2", "100.0",
	"1.5e-320", "5e-324", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
	"-9223372036854775809", "1e20", "1e21", "123456789012345678901234567890", "1E3", "1e-7", "0.1",
	"-1.5", "1.7976931348623157e308", "1e400", "-1e400",
}

// hostileDocuments are the objects, as JSON, of the number tests: each
// hostile number in every interface position, and strings that look like
// numbers.
func hostileDocuments() []string {
	var docs []string
	for i, n := range hostileNumbers {
		spec := `{"any":` + n + `,"values":{"a":` + n + `,"b":[` + n + `,{"c":` + n + `}]},"list":[` + n + `,"` + n + `",[` + n + `]],` +
			`"nested":{"config":{"deep":{"er":` + n + `}},"items":[{"value":` + n + `},{"value":"` + n + `"}]},"name":"` + n + `"}`
		docs = append(docs, numberDoc(i, spec))
		// The typed fields too, where the number fits them.
		docs = append(docs, numberDoc(100+i, `{"float":`+n+`,"any":{"n":`+n+`}}`))
		docs = append(docs, numberDoc(200+i, `{"int":`+n+`}`))
	}
	return append(docs, numberDoc(300, `{"any":"1e400","values":{"n":"-0","m":"2.0","o":"9007199254740993"}}`))
}

func numberDoc(i int, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"NumberWidget","metadata":{"name":"w%03d","namespace":"default","resourceVersion":"3"},"spec":%s}`, i, spec)
}

// exactFloats compares floats by their bits: -0 and 0 differ.
var exactFloats = cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })

// decodeTyped decodes docs as the REST ListerWatcher's client does (the
// JSON serializer of apimachinery over sigs.k8s.io/json), leaving out those
// it rejects: they never reach a cache.
func decodeTyped(t *testing.T, docs []string) []*numberWidget {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	gv := numberWidgetGVR.GroupVersion()
	scheme.AddKnownTypeWithName(gv.WithKind("NumberWidget"), &numberWidget{})
	scheme.AddKnownTypeWithName(gv.WithKind("NumberWidgetList"), &numberWidgetList{})
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{})
	var out []*numberWidget
	for _, doc := range docs {
		obj, _, err := serializer.Decode([]byte(doc), nil, &numberWidget{})
		if err != nil {
			continue
		}
		out = append(out, obj.(*numberWidget))
	}
	return out
}

// decodeUnstructured decodes docs as the dynamic ListerWatcher's client
// does (client-go's UnstructuredJSONScheme), leaving out those it rejects.
func decodeUnstructured(docs []string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode([]byte(doc), nil, nil)
		if err != nil {
			continue
		}
		out = append(out, obj.(*unstructured.Unstructured))
	}
	return out
}

// TestSnapshotJSONKeepsNumbers: objects written to a JSON snapshot are
// restored equal, bit for bit, to what client-go's decoding of their wire
// bytes gave, whatever numbers they hold (hostileDocuments): CRD Go types
// (integers in interface values came back as float64, wrong past 2^53) and
// unstructured objects (the wire's 2.0 and -0.0, float64s, came back as
// int64).
func TestSnapshotJSONKeepsNumbers(t *testing.T) {
	docs := hostileDocuments()
	typed := decodeTyped(t, docs)
	unstr := decodeUnstructured(docs)
	if len(typed) < len(docs)/2 || len(unstr) < len(docs)/2 {
		t.Fatalf("client-go decoded %d typed and %d unstructured of %d documents", len(typed), len(unstr), len(docs))
	}
	path := filepath.Join(t.TempDir(), "widgets"+snapshotSuffix)

	typedScope := snapshotScopeFor[*numberWidget]("widgets", numberWidgetGVR, "")
	typedCodec := newSnapshotCodec[*numberWidget](nil)
	_, err := writeSnapshot(path, snapshotHeader{Scope: typedScope, ResourceVersion: "3"}, typedCodec, typed)
	plMust(t, err)
	gotTyped, err := readSnapshot(path, typedScope, typedCodec)
	plMust(t, err)
	if diff := cmp.Diff(typed, gotTyped.objects, exactFloats); diff != "" {
		t.Errorf("restored CRD objects (-client-go's decoding +restored):\n%s", diff)
	}

	unstrScope := snapshotScopeFor[*unstructured.Unstructured]("widgets", numberWidgetGVR, "")
	unstrCodec := newSnapshotCodec[*unstructured.Unstructured](nil)
	_, err = writeSnapshot(path, snapshotHeader{Scope: unstrScope, ResourceVersion: "3"}, unstrCodec, unstr)
	plMust(t, err)
	gotUnstr, err := readSnapshot(path, unstrScope, unstrCodec)
	plMust(t, err)
	if diff := cmp.Diff(unstr, gotUnstr.objects, exactFloats); diff != "" {
		t.Errorf("restored unstructured objects (-client-go's decoding +restored):\n%s", diff)
	}
	for _, obj := range typed {
		if slices.ContainsFunc(gotTyped.objects, func(o *numberWidget) bool { return o == obj }) {
			t.Fatal("a restored object is the cached one")
		}
	}
}

// TestSnapshotJSONRestartKeepsNumbers restarts informers of the CRD type
// and of unstructured objects from their snapshots: the cache they start
// with equals client-go's decoding of the wire bytes.
func TestSnapshotJSONRestartKeepsNumbers(t *testing.T) {
	docs := hostileDocuments()
	t.Run("typed", func(t *testing.T) {
		restartWith(t, decodeTyped(t, docs))
	})
	t.Run("unstructured", func(t *testing.T) {
		restartWith(t, decodeUnstructured(docs))
	})
}

// restartWith runs an informer over objects, stops it (which writes its
// snapshot), starts another with the same options on a server where
// nothing changed, and compares its cache with objects.
func restartWith[T Object](t *testing.T, objects []T) {
	t.Helper()
	opts := InformerOptions[T]{Name: "widgets", Resource: numberWidgetGVR, Snapshot: SnapshotOptions{Dir: snapDir(t)}}
	for run := range 2 {
		lw := informertest.NewFakeListerWatcher[T]()
		var copies []T
		for _, obj := range objects {
			copies = append(copies, obj.DeepCopyObject().(T))
		}
		lw.SetList("3", copies...)
		inf := MustNewInformer(t, lw, opts)
		stop := plRun(t, inf)
		Eventually(t, "synced", inf.HasSynced)
		if run == 1 {
			if got := inf.Stats().Snapshot; got.Restored != 1 || got.RestoredObjects != int64(len(objects)) {
				t.Fatalf("snapshot stats %+v, want %d objects restored", got, len(objects))
			}
			cached, err := inf.Lister().List(nil)
			plMust(t, err)
			byName := func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) }
			slices.SortFunc(cached, byName)
			want := slices.SortedFunc(slices.Values(objects), byName)
			if diff := cmp.Diff(want, cached, exactFloats); diff != "" {
				t.Errorf("restored cache (-client-go's decoding +restored):\n%s", diff)
			}
		}
		stop()
	}
}

// BenchmarkSnapshotJSONRecords encodes and decodes the JSON records of
// 1,000 CRD objects (internal/crdtypes' Workloads, about 11 KB each), typed
// and unstructured (decoded from their JSON as the dynamic client decodes
// it): format 3's records (encodeJSONRecord, decodeJSONRecord) beside what
// format 2 did (encoding/json both ways), per object.
func BenchmarkSnapshotJSONRecords(b *testing.B) {
	const n = 1_000
	workloads := crdtypes.New(n)
	typed := make([]*crdtypes.Workload, n)
	unstr := make([]*unstructured.Unstructured, n)
	for i := range workloads {
		typed[i] = &workloads[i]
		typed[i].APIVersion, typed[i].Kind = "kueue.bench.kubetyped.io/v1beta1", "Workload"
		data, err := stdjson.Marshal(typed[i])
		plMust(b, err)
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
		plMust(b, err)
		unstr[i] = obj.(*unstructured.Unstructured)
	}
	b.Run("typed", func(b *testing.B) { benchmarkJSONRecords(b, typed) })
	b.Run("unstructured", func(b *testing.B) { benchmarkJSONRecords(b, unstr) })
}

func benchmarkJSONRecords[T Object](b *testing.B, objects []T) {
	newObject := newSnapshotCodec[T](nil).newObject
	for _, side := range []struct {
		name   string
		encode func(T) ([]byte, error)
		decode func([]byte, any) error
	}{
		{"format2", func(obj T) ([]byte, error) { return stdjson.Marshal(obj) }, stdjson.Unmarshal},
		{"format3", encodeJSONRecord[T], decodeJSONRecord},
	} {
		records := make([][]byte, len(objects))
		b.Run(side.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, obj := range objects {
					rec, err := side.encode(obj)
					plMust(b, err)
					records[i] = rec
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(objects)), "ns/object")
		})
		b.Run(side.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, rec := range records {
					plMust(b, side.decode(rec, newObject()))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(objects)), "ns/object")
		})
	}
}
