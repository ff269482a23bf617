package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	kjson "sigs.k8s.io/json"

	"github.com/kubetyped/informer/internal/crdtypes"
)

// decodeTyped decodes data into *into with d, holding table's lock if
// table is not nil.
func decodeTyped(d *TypedJSON, data []byte, into any, table *InternTable) (DecodeResult, error) {
	if table != nil {
		table.lock()
		defer table.mu.Unlock()
	}
	return d.Decode(data, into, table)
}

// cmpOpts compares the test types, unexported fields included.
var cmpOpts = cmp.AllowUnexported(gadgetSpec{})

// decodeBothTyped decodes data into a T with sigs.k8s.io/json and with
// the typed decoder (through strs if not nil): they must both fail or
// decode equal values. It reports whether they succeeded.
func decodeBothTyped[T any](t testing.TB, data []byte, strs *InternTable) bool {
	t.Helper()
	d, err := NewTypedJSON(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	var want, got T
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts(data, &want)
	_, gotErr := decodeTyped(d, data, &got, strs)
	if wantErr == nil && errors.Is(gotErr, errSharedTwice) && strs.shareSubObjects {
		return false // the caller decodes it again without the table
	}
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("decoding %T from %q: sigs.k8s.io/json's error %v, the typed decoder's %v", got, data, wantErr, gotErr)
	}
	if wantErr != nil {
		return false
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Fatalf("decoding %T from %q (-sigs.k8s.io/json +typed):\n%s", got, data, diff)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("decoding %T from %q: equal by cmp but not by reflect.DeepEqual:\n%#v\n%#v", got, data, want, got)
	}
	return true
}

// decodeAllTypes is decodeBothTyped with each test type.
func decodeAllTypes(t testing.TB, data []byte, strs *InternTable) {
	t.Helper()
	decodeBothTyped[crdtypes.Workload](t, data, strs)
	decodeBothTyped[crdtypes.WorkloadList](t, data, strs)
	decodeBothTyped[gadget](t, data, strs)
	decodeBothTyped[rollout](t, data, strs)
}

func TestNewTypedJSONRejects(t *testing.T) {
	type inner struct{ A string }
	type withEmbeddedPointer struct{ *inner }
	type withStringOption struct {
		N int `json:"n,string"`
	}
	type clash1 struct{ Name string }
	type clash2 struct{ Name string }
	type withClash struct {
		clash1
		clash2
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[withEmbeddedPointer](),
		reflect.TypeFor[withStringOption](),
		reflect.TypeFor[withClash](),
		reflect.TypeFor[string](),
	} {
		if _, err := NewTypedJSON(typ); err == nil {
			t.Errorf("NewTypedJSON(%v) succeeded, want an error", typ)
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[crdtypes.Workload](), reflect.TypeFor[gadget](), reflect.TypeFor[rollout]()} {
		if _, err := NewTypedJSON(typ); err != nil {
			t.Errorf("NewTypedJSON(%v): %v", typ, err)
		}
	}
}

// typedFixtures are inputs for the cases where encoding/json's rules are
// easy to get wrong; decodeAllTypes runs each through every test type.
var typedFixtures = []string{
	`{}`, `null`, ` {} `, `{"kind":"Workload","apiVersion":"a/v1"}`, `[]`, `"x"`, `1`, ``, `{`, `{}x`, `{}{}`,
	`{"metadata":{"name":"a","labels":{"x":"1","x":"2"}}}`,
	`{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}`,
	`{"metadata":{"labels":null}}`, `{"metadata":{"labels":{}}}`, `{"metadata":{"labels":{"a":null}}}`,
	`{"metadata":{"finalizers":[]}}`, `{"metadata":{"finalizers":null}}`, `{"metadata":{"finalizers":["a",null]}}`,
	`{"metadata":{"creationTimestamp":null}}`, `{"metadata":{"creationTimestamp":"2026-01-02T03:04:05Z"}}`,
	`{"metadata":{"creationTimestamp":"2026-01-02T03:04:05+02:00"}}`, `{"metadata":{"creationTimestamp":"bad"}}`,
	`{"metadata":{"creationTimestamp":"2026-01-02T03:04:05\u005a"}}`, `{"metadata":{"creationTimestamp":5}}`,
	`{"metadata":{"deletionTimestamp":null}}`, `{"metadata":{"deletionTimestamp":"2026-01-02T03:04:05Z"}}`,
	`{"metadata":{"generation":1.0}}`, `{"metadata":{"generation":1e2}}`, `{"metadata":{"generation":-0}}`,
	`{"metadata":{"generation":9223372036854775807}}`, `{"metadata":{"generation":9223372036854775808}}`,
	`{"metadata":{"generation":"1"}}`, `{"metadata":{"generation":01}}`, `{"metadata":{"generation":-}}`,
	`{"metadata":{"Name":"a","name":"b","NAME":"c"}}`, `{"Metadata":{"name":"a"}}`,
	`{"KIND":"x"}`, `{"Kind":"x"}`, `{"\u212aind":"x"}`, `{"kin\u0064":"x"}`, `{"apiVersion":5}`,
	`{"metadata":{"name":"\u00e9\ud83d\ude00\n\"\\\/"}}`, `{"metadata":{"name":"\ud800"}}`, "{\"metadata\":{\"name\":\"\xff\"}}",
	"{\"metadata\":{\"name\":\"\xed\xa0\x80\"}}", "{\"metadata\":{\"name\":\"a\x01\"}}", `{"metadata":{"name":"\x"}}`,
	`{"metadata":{"name":"\u12"}}`, `{"metadata":{"annotations":{"\u0061":"b","a":"c"}}}`,
	`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}},{"fieldsV1":null}]}}`,
	`{"metadata":{"managedFields":[{"fieldsV1":"str"}]}}`, `{"metadata":{"managedFields":[{"time":null}]}}`,
	`{"metadata":{"ownerReferences":[{"uid":"u","controller":true},{"controller":null}]}}`,
	`{"metadata":{"ownerReferences":[{"name":"a","kind":"K"},{"name":"b"}],"ownerReferences":[{"kind":"L"}]}}`,
	`{"metadata":{"ownerReferences":[{"name":"a"},{"name":"b"},{"name":"c"}],"ownerReferences":[{"kind":"L"}],"ownerReferences":[{"uid":"1"},{"uid":"2"}]}}`,
	`{"spec":{"podSets":[{"name":"a","count":2,"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1","memory":"2Gi"}}}]}}}]}}`,
	`{"spec":{"podSets":[{"template":{"spec":{"containers":[{"resources":{"limits":{"cpu":"bad"}}}]}}}]}}`,
	`{"spec":{"podSets":[{"template":{"spec":{"containers":[{"resources":{"limits":{"cpu":null}}}]}}}]}}`,
	`{"spec":{"podSets":[{"template":{"spec":{"containers":[{"ports":[{"containerPort":80.5}]}]}}}]}}`,
	`{"spec":{"priority":2147483648}}`, `{"spec":{"priority":-2147483648}}`, `{"spec":{"active":1}}`, `{"spec":{"active":null}}`,
	`{"status":{"admission":{"podSetAssignments":[{"flavors":{"cpu":"x"},"resourceUsage":{"cpu":"1"}}]}}}`,
	`{"status":{"conditions":[{"type":"A","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`,
	`{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"metadata":{"resourceVersion":"1"}}`,
	`{"items":[],"items":[{}]}`, `{"items":null}`, `{"items":[null]}`, `{"items":[1]}`,
	`{"spec":{"port":80,"maxUnavailable":"25%","limits":{"cpu":"100m"},"config":{"a":[1,2.5,"x"]},"extra":{"n":1,"f":1.5,"big":12345678901234567890,"e":1e2}}}`,
	`{"spec":{"values":[1,-1,1.0,1e400]}}`, `{"spec":{"any":9007199254740993}}`, `{"spec":{"any":null,"any":{"a":1}}}`,
	`{"spec":{"weights":{"a":1,"b":-2}}}`, `{"spec":{"weights":{"a":1.5}}}`, `{"spec":{"levels":{"x":"y"}}}`,
	`{"spec":{"rules":{"r":[{"match":"m","weight":0.5,"hosts":["h"]}]}}}`, `{"spec":{"byIndex":{"1":"a","-2":"b"}}}`,
	`{"spec":{"byIndex":{"x":"a"}}}`, `{"spec":{"ratio":1e308,"small":3.5e38}}`, `{"spec":{"small":3.5e39}}`,
	`{"spec":{"tiny":127,"count":65535,"big":18446744073709551615}}`, `{"spec":{"tiny":128}}`, `{"spec":{"count":-1}}`,
	`{"spec":{"enabled":true,"enabled":false}}`, `{"spec":{"data":"aGVsbG8="}}`, `{"spec":{"data":"!"}}`,
	`{"spec":{"timeout":"5s","micro":"2026-01-02T03:04:05.123456Z"}}`, `{"spec":{"timeout":"5"}}`,
	`{"spec":{"when":null}}`, `{"spec":{"selector":{"matchLabels":{"a":"b"}}}}`, `{"spec":{"fixed":["a","b","c"]}}`,
	`{"spec":{"raw":{"x":1}}}`, `{"spec":{"Named":{"inner":"i"},"inner":"x"}}`, `{"spec":{"owner":"o","tags":{"t":"1"},"priority":3}}`,
	`{"spec":{"Untagged":"u","untagged":"v","Skipped":"s","-":"x","unexported":"z"}}`, `{"spec":{"level":"high"}}`,
	`{"spec":{"port":"x","port":7}}`, `{"spec":{"port":null}}`, `{"spec":{"port":[]}}`, `{"spec":{"maxUnavailable":null}}`,
	`{"spec":{"config":null}}`, `{"spec":{"env":[{"name":"a","valueFrom":{"fieldRef":{"fieldPath":"x"}}}]}}`,
	`{"status":{"replicas":null},"status":null}`, `{"status":{"replicas":1},"status":{"observedGeneration":2}}`,
	`{"spec":{"sources":[null,{"repoURL":"r"}],"ignoreDifferences":[{"kind":"K"}]}}`,
	`{"spec":{"syncPolicy":{"automated":{"Prune":true},"retry":{"limit":2}}}}`,
	`{"status":{"resources":[{"kind":"A","children":[{"kind":"B","children":[{"kind":"C"}]}],"parent":{"kind":"P","parent":{"kind":"Q"}}}]}}`,
	`{"spec":{"source":{"helm":{"valuesObject":{"a":{"b":[1]}},"parameters":[{"name":"n","forceString":true}]}}}}`,
	`{"a":[[[[[[[[]]]]]]]],"b":{"c":{"d":{}}}}`, `{"a":1,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":[1,]}`, `{"a":tru}`,
	`{"a":nul}`, `{"a":"\u00"}`, `{"a":-01}`, `{"a":1.}`, `{"a":1e}`, `{"a":.5}`, `{"a":+1}`, `{"a":0x1}`, `{1:2}`,
	"{\"a\":1}\x00", "\ufeff{}", "{\t\"a\"\r\n:\n1 }",
}

func TestTypedJSONFixtures(t *testing.T) {
	for _, fixture := range typedFixtures {
		decodeAllTypes(t, []byte(fixture), nil)
		decodeAllTypes(t, []byte(fixture), newBareInternTable())
		decodeAllTypes(t, []byte(fixture), newSharingTable())
	}
}

// sameFailure checks that the typed decoder fails on data, decoded as a
// gadget, exactly when sigs.k8s.io/json does, without comparing the values
// (cmp takes minutes over 10,000 nested levels).
func sameFailure(t *testing.T, data []byte) {
	t.Helper()
	d, err := NewTypedJSON(reflect.TypeFor[gadget]())
	if err != nil {
		t.Fatal(err)
	}
	var want, got gadget
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts(data, &want)
	_, gotErr := decodeTyped(d, data, &got, nil)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("sigs.k8s.io/json's error %v, the typed decoder's %v", wantErr, gotErr)
	}
}

// TestTypedJSONDepth checks the limit on nesting, within a value decoded
// by sigs.k8s.io/json and within a skipped one.
func TestTypedJSONDepth(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			data := `{"spec":{"any":` + strings.Repeat(open, depth-2) + "1" + strings.Repeat(close, depth-2) + "}}"
			sameFailure(t, []byte(data))
			data = `{"metadata":{"name":"x","x":` + strings.Repeat(open, depth-2) + "1" + strings.Repeat(close, depth-2) + "}}"
			sameFailure(t, []byte(data))
		}
	}
}

// randomTyped returns the JSON of n random objects of type T.
func randomTyped[T any](t testing.TB, seed uint64, n int) [][]byte {
	t.Helper()
	f := newFiller(seed)
	out := make([][]byte, n)
	for i := range out {
		var obj T
		f.Fill(&obj)
		data, err := json.Marshal(&obj)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// mutationTokens are what mutate inserts: syntax, literals, escapes,
// invalid UTF-8, and keys that collide with the types' fields.
var mutationTokens = []string{
	"{", "}", "[", "]", ",", ":", `"`, `\`, "null", "true", "0", "-1", "1.5e3", "1e400", `"a"`, `""`, "[]", "{}", " ",
	`"\u00e9"`, `"\ud800"`, "\xff", `"kind":"Workload",`, `"Kind":"x",`, `"metadata":{"name":"dup"},`, `"count":1,`,
	`"items":[{}],`, `"spec":null,`, `"labels":{"a":"b"},`, `"name":"n",`, "\x01",
}

// mutate returns data with a random edit: a byte deleted, a token
// inserted, or a value's bytes duplicated.
func mutate(r *rand.Rand, data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) == 0 {
		return []byte(mutationTokens[r.IntN(len(mutationTokens))])
	}
	i := r.IntN(len(out))
	switch r.IntN(3) {
	case 0:
		return append(out[:i], out[min(len(out), i+1+r.IntN(3)):]...)
	case 1:
		tok := mutationTokens[r.IntN(len(mutationTokens))]
		return append(out[:i], append([]byte(tok), data[i:]...)...)
	default:
		j := min(len(out), i+r.IntN(40))
		return append(out[:j], append(bytes.Clone(data[i:j]), data[j:]...)...)
	}
}

// checkRandomTyped decodes random objects of type T and mutations of them
// both ways, through a table and without.
func checkRandomTyped[T any](t *testing.T, seed uint64) {
	encoded := randomTyped[T](t, seed, 30)
	strs, sharing := newBareInternTable(), newSharingTable()
	ok := 0
	for _, data := range encoded {
		for _, s := range []*InternTable{nil, strs, strs, sharing, sharing} {
			if decodeBothTyped[T](t, data, s) {
				ok++
			}
		}
	}
	if ok != 5*len(encoded) {
		t.Fatalf("%d of %d random objects decoded, want all", ok, 5*len(encoded))
	}
	r := rand.New(rand.NewPCG(seed, 3))
	for _, data := range encoded {
		for range 40 {
			decodeAllTypes(t, mutate(r, data), strs)
		}
	}
}

func TestTypedJSONRandom(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkRandomTyped[crdtypes.Workload](t, seed)
			checkRandomTyped[gadget](t, seed)
			checkRandomTyped[rollout](t, seed)
		})
	}
}

// TestTypedJSONW8 decodes the benchmark's workloads and their list, and
// checks that strings repeated between objects come from the table.
func TestTypedJSONW8(t *testing.T) {
	list := crdtypes.WorkloadList{Items: crdtypes.New(20)}
	list.Kind, list.APIVersion = "WorkloadList", crdtypes.GroupVersion.String()
	data, err := json.Marshal(&list)
	if err != nil {
		t.Fatal(err)
	}
	strs := newBareInternTable()
	decodeBothTyped[crdtypes.WorkloadList](t, data, strs)
	for _, w := range list.Items {
		one, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		decodeBothTyped[crdtypes.Workload](t, one, strs)
	}
	d, err := NewTypedJSON(reflect.TypeFor[crdtypes.WorkloadList]())
	if err != nil {
		t.Fatal(err)
	}
	var got crdtypes.WorkloadList
	if _, err := decodeTyped(d, data, &got, strs); err != nil {
		t.Fatal(err)
	}
	a, b := got.Items[0].Spec.QueueName, got.Items[8].Spec.QueueName
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("queue names %q and %q of replicas of one template are not one copy", a, b)
	}
}

func FuzzTypedJSON(f *testing.F) {
	for _, fixture := range typedFixtures {
		f.Add([]byte(fixture))
	}
	for seed := range uint64(2) {
		for _, data := range randomTyped[gadget](f, seed, 3) {
			f.Add(data)
		}
		for _, data := range randomTyped[rollout](f, seed, 3) {
			f.Add(data)
		}
		for _, data := range randomTyped[crdtypes.Workload](f, seed, 1) {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAllTypes(t, data, newBareInternTable())
		// Twice, so that the second decodes with what the first shared.
		sharing := newSharingTable()
		decodeAllTypes(t, data, sharing)
		decodeAllTypes(t, data, sharing)
	})
}

// TestTypedJSONShares decodes W8's workloads with a table that shares
// sub-objects: they equal sigs.k8s.io/json's, and the replicas of a
// template hold one copy of its pod sets, admission and managed fields'
// bytes from the second replica decoded on (the first sighting is not
// kept). A key seen twice fails the decoding instead of writing into a
// shared value.
func TestTypedJSONShares(t *testing.T) {
	d, err := NewTypedJSON(reflect.TypeFor[crdtypes.Workload]())
	if err != nil {
		t.Fatal(err)
	}
	table := newSharingTable()
	var got []*crdtypes.Workload
	for i, w := range crdtypes.New(17) {
		data, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		var want crdtypes.Workload
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
			t.Fatal(err)
		}
		decoded := new(crdtypes.Workload)
		if _, err := decodeTyped(d, data, decoded, table); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, decoded); diff != "" {
			t.Fatalf("workload %d (-sigs.k8s.io/json +typed):\n%s", i, diff)
		}
		got = append(got, decoded)
	}
	second, third := got[8], got[16] // replicas of template 0, as is got[0]
	if unsafe.SliceData(second.Spec.PodSets) != unsafe.SliceData(third.Spec.PodSets) {
		t.Error("the pod sets of two replicas are not one copy")
	}
	if second.Status.Admission != third.Status.Admission {
		t.Error("the admissions of two replicas are not one copy")
	}
	if unsafe.SliceData(second.ManagedFields[0].FieldsV1.Raw) != unsafe.SliceData(third.ManagedFields[0].FieldsV1.Raw) {
		t.Error("the managed fields' bytes of two replicas are not one copy")
	}
	if unsafe.SliceData(got[0].Spec.PodSets) == unsafe.SliceData(second.Spec.PodSets) {
		t.Error("the first replica's pod sets are the canonical ones, want its own")
	}
	dup := []byte(`{"spec":{"podSets":[{"name":"a","count":1,"template":{}}],"podSets":[{"count":2}]}}`)
	if _, err := decodeTyped(d, dup, new(crdtypes.Workload), table); !errors.Is(err, errSharedTwice) {
		t.Errorf("decoding a key seen twice: %v, want %v", err, errSharedTwice)
	}
}

// TestTypedJSONFieldTables checks the field tables of W8's Workload and
// every type it holds: each struct has one (no fallback to the map), which
// finds each field by its name and no field by a name that is not one.
func TestTypedJSONFieldTables(t *testing.T) {
	d, err := NewTypedJSON(reflect.TypeFor[crdtypes.WorkloadList]())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*tjNode]bool{}
	var walk func(n *tjNode)
	walk = func(n *tjNode) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		walk(n.elem)
		if n.kind != tjStruct {
			return
		}
		if n.fieldTab == nil && len(n.fields) > 0 {
			t.Errorf("%v: no field table", n.typ)
		}
		for name, f := range n.fields {
			if got := n.field([]byte(name)); got != f {
				t.Errorf("%v: field(%q) = %v, want the field at offset %d", n.typ, name, got, f.offset)
			}
			for _, other := range []string{name + "x", strings.ToUpper(name), name[:len(name)-1], ""} {
				if _, isField := n.fields[other]; !isField && n.field([]byte(other)) != nil {
					t.Errorf("%v: field(%q) found a field", n.typ, other)
				}
			}
			walk(f.node)
		}
	}
	walk(d.root)
	if len(seen) < 50 {
		t.Errorf("walked %d nodes, want the Workload's whole tree", len(seen))
	}
}
