package wire

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// unstructuredFixtures are documents whose decoding client-go's dynamic
// client and ours must agree on: lists, objects, and every corner of
// JSON client-go's decoding treats its own way.
var unstructuredFixtures = []string{
	`{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"5","continue":"x"},"items":[{"metadata":{"name":"a","namespace":"ns","uid":"u1","labels":{"app":"web"}}},{"kind":"X","metadata":{"name":"b"}},null,{"apiVersion":"v2"}]}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":[]}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":null}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList"}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":{}}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":"x"}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":[1]}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":[[]]}`,
	`{"apiVersion":"example.com/v1","kind":"WorkloadList","items":[{"a":1}],"items":[{"b":2}]}`,
	`{"apiVersion":"example.com/v1","kind":"List","items":[{"kind":5}]}`,
	`{"apiVersion":"example.com/v1","kind":"Workload","metadata":{"name":"w"},"spec":{"a":[1,2,{"b":null}]}}`,
	`{"apiVersion":"v1","kind":"Status","status":"Failure","message":"gone","reason":"Expired","code":410}`,
	`{"apiVersion":"v1","kind":"WatchEvent","type":"ADDED"}`,
	`{"apiVersion":"meta.k8s.io/v1","kind":"Status","status":"Failure"}`,
	`{"kind":"Workload"}`,
	`{"apiVersion":null,"kind":"Workload"}`,
	`{"apiVersion":"v1","kind":null}`,
	`{"apiVersion":"v1","kind":""}`,
	`{"apiVersion":"v1","kind":5}`,
	`{"apiVersion":3,"kind":"X"}`,
	`{"apiVersion":"a/b/c","kind":"X"}`,
	`{"apiVersion":"v1","Kind":"X"}`,
	`{"apiVersion":"v1","kind":"X","KIND":"Y"}`,
	`{"ApiVersion":"v2","apiVersion":"v1","kind":"X"}`,
	`{"apiVersion":"v1","\u212aind":"Y","kind":"X"}`,
	"{\"apiVersion\":\"v1\",\"\xe2\x84\xaaind\":\"Y\",\"kind\":\"X\"}",
	`{"apiVersion":"v1","kind":"X","kind":"Y"}`,
	`{"apiVersion":"v1","kind":"X","a":1,"a":"two"}`,
	`{"apiVersion":"v1","kind":"X","n":[0,-0,1.0,1e3,1E-3,-1.5e+2,9223372036854775807,9223372036854775808,-9223372036854775808,-9223372036854775809,123456789012345678901234567890,0.1,1e308]}`,
	`{"apiVersion":"v1","kind":"X","n":1e400}`,
	`{"apiVersion":"v1","kind":"X","n":-1e400}`,
	`{"apiVersion":"v1","kind":"X","n":01}`,
	`{"apiVersion":"v1","kind":"X","n":1.}`,
	`{"apiVersion":"v1","kind":"X","n":.5}`,
	`{"apiVersion":"v1","kind":"X","n":-}`,
	`{"apiVersion":"v1","kind":"X","n":1e}`,
	`{"apiVersion":"v1","kind":"X","n":+1}`,
	`{"apiVersion":"v1","kind":"X","n":NaN}`,
	`{"apiVersion":"v1","kind":"X","s":"a\nb\t\"q\"\\ \/ \u00e9 \ud83d\ude00 \ud800 \udc00x \u0000"}`,
	"{\"apiVersion\":\"v1\",\"kind\":\"X\",\"s\":\"caf\xc3\xa9 \xff\xfe bad\",\"\xff\":1}",
	"{\"apiVersion\":\"v1\",\"kind\":\"X\",\"s\":\"a\x01b\"}",
	`{"apiVersion":"v1","kind":"X","s":"\x"}`,
	`{"apiVersion":"v1","kind":"X","s":"\u12"}`,
	`{"apiVersion":"v1","kind":"X","s":"unterminated}`,
	`{"apiVersion":"v1","kind":"X","b":[true,false,null],"e":{},"ea":[],"ee":[[],[{}]]}`,
	` 	{ "apiVersion" : "v1" ,
 "kind":"X" , "a" : [ 1 , 2 ] }
 `,
	`{"apiVersion":"v1","kind":"X"} x`,
	`{"apiVersion":"v1","kind":"X"}{}`,
	`{"apiVersion":"v1","kind":"X",}`,
	`{"apiVersion":"v1","kind":"X","a":[1,]}`,
	`{"apiVersion":"v1","kind":"X" "a":1}`,
	`{"apiVersion":"v1","kind":"X","a"1}`,
	`{"apiVersion":"v1","kind":"X",a:1}`,
	`{"apiVersion":"v1","kind":"X","a":tru}`,
	`{"apiVersion":"v1","kind":"X","a":nul}`,
	`{"apiVersion":"v1","kind":"X","a":True}`,
	`{"apiVersion":"v1","kind":"X","a":[}`,
	`{"apiVersion":"v1","kind":"X","a":{]}`,
	`{"apiVersion":"v1","kind":"X"`,
	"\xef\xbb\xbf{\"apiVersion\":\"v1\",\"kind\":\"X\"}",
	`[]`, `[{"kind":"X"}]`, `"x"`, `null`, `1`, `true`, ``, ` `, `{}`,
	`{"apiVersion":"v1","kind":"X","metadata":{"name":"n","uid":"u","resourceVersion":"1","creationTimestamp":"2024-01-01T00:00:00Z","labels":{"a":"b"},"name":5}}`,
	`{"apiVersion":"v1","kind":"X","metadata":null}`,
	`{"apiVersion":"v1","kind":"X","metadata":"m"}`,
}

func TestUnstructuredFixtures(t *testing.T) {
	theirs := dynamicJSONSerializer(t)
	for _, share := range []bool{false, true} {
		ours := NewUnstructuredSerializer(newUnstructuredDecoder(share), theirs)
		for _, doc := range unstructuredFixtures {
			// Three times: with sharing, the third decode reuses what the
			// second made canonical.
			for range 3 {
				if err := diffDecoders(ours, theirs, []byte(doc)); err != nil {
					t.Errorf("share=%v: %v", share, err)
				}
			}
		}
	}
}

// TestUnstructuredDepth checks the nesting limit: client-go decodes 10,000
// levels and rejects 10,001.
func TestUnstructuredDepth(t *testing.T) {
	theirs := dynamicJSONSerializer(t)
	ours := NewUnstructuredSerializer(newUnstructuredDecoder(true), theirs)
	for _, depth := range []int{unstrShareMaxDepth - 1, unstrShareMaxDepth + 1, unstrMaxDepth - 1, unstrMaxDepth, unstrMaxDepth + 1} {
		// The object is one level; the rest are arrays under "a".
		doc := []byte(`{"apiVersion":"v1","kind":"X","a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
		if err := diffDecoders(ours, theirs, doc); err != nil {
			t.Errorf("depth %d: %v", depth, err)
		}
	}
}

// TestUnstructuredDecodesItself checks that the decoder, not the fallback,
// decodes the documents client-go accepts without oddities, so that the
// differential tests compare it.
func TestUnstructuredDecodesItself(t *testing.T) {
	d := newUnstructuredDecoder(true)
	list := workloadList(rand.New(rand.NewPCG(1, 2)), 20)
	for range 2 {
		if _, _, ok := d.DecodeList(list); !ok {
			t.Fatalf("DecodeList gave up on %s", list)
		}
	}
	if _, ok := d.DecodeObject([]byte(unstructuredFixtures[10])); !ok {
		t.Fatalf("DecodeObject gave up on %s", unstructuredFixtures[10])
	}
}

func TestUnstructuredRandom(t *testing.T) {
	theirs := dynamicJSONSerializer(t)
	for _, share := range []bool{false, true} {
		ours := NewUnstructuredSerializer(newUnstructuredDecoder(share), theirs)
		r := rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
		for i := range 2000 {
			doc := randomDocument(r)
			if err := diffDecoders(ours, theirs, doc); err != nil {
				t.Fatalf("share=%v, document %d: %v", share, i, err)
			}
		}
		for i := range 5 {
			doc := workloadList(r, 30)
			if err := diffDecoders(ours, theirs, doc); err != nil {
				t.Fatalf("share=%v, workload list %d: %v", share, i, err)
			}
		}
	}
}

// TestUnstructuredShares checks that with sharing on, the sub-trees of
// replicas are one value once a sub-tree was seen twice, that the objects'
// own maps are not, and that with it off nothing is.
func TestUnstructuredShares(t *testing.T) {
	doc := func(name string) []byte {
		return []byte(`{"apiVersion":"example.com/v1","kind":"Workload","metadata":{"name":"` + name + `","labels":{"app":"web","tier":"front"}},"spec":{"template":{"containers":[{"name":"c","image":"nginx:1.27","args":["--a","--b"]}]}},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	}
	for _, share := range []bool{false, true} {
		d := newUnstructuredDecoder(share)
		var objs []map[string]any
		for i := range 4 {
			m, ok := d.DecodeObject(doc(fmt.Sprint("w", i)))
			if !ok {
				t.Fatal("DecodeObject gave up")
			}
			objs = append(objs, m)
		}
		got := map[string]bool{
			"spec":       sameMap(objs[2]["spec"], objs[3]["spec"]),
			"labels":     sameMap(objs[2]["metadata"].(map[string]any)["labels"], objs[3]["metadata"].(map[string]any)["labels"]),
			"conditions": sameSlice(objs[2]["status"].(map[string]any)["conditions"], objs[3]["status"].(map[string]any)["conditions"]),
			"metadata":   sameMap(objs[2]["metadata"], objs[3]["metadata"]),
			"first two":  sameMap(objs[0]["spec"], objs[1]["spec"]),
		}
		want := map[string]bool{"spec": share, "labels": share, "conditions": share, "metadata": false, "first two": false}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("share=%v: shared sub-trees (-want +got):\n%s", share, diff)
		}
		if diff := cmp.Diff(objs[0]["spec"], objs[3]["spec"]); diff != "" {
			t.Errorf("share=%v: spec differs between replicas:\n%s", share, diff)
		}
	}
}

// TestUnstructuredInterns checks that keys and string values come from the
// table (the same copy in every object from the string's second sighting
// on), but for the metadata strings unique to an object.
func TestUnstructuredInterns(t *testing.T) {
	d := newUnstructuredDecoder(false)
	doc := []byte(`{"apiVersion":"v1","kind":"X","metadata":{"name":"n1","uid":"u1","namespace":"ns"},"spec":{"image":"nginx"}}`)
	var objs []map[string]any
	for range 3 {
		m, ok := d.DecodeObject(doc)
		if !ok {
			t.Fatal("DecodeObject gave up")
		}
		objs = append(objs, m)
	}
	second, third := objs[1], objs[2]
	got := map[string]bool{}
	for k := range third {
		got["key "+k] = sameString(k, keyOf(second, k))
	}
	for _, k := range []string{"name", "uid", "namespace"} {
		got["metadata."+k] = sameString(third["metadata"].(map[string]any)[k].(string), second["metadata"].(map[string]any)[k].(string))
	}
	got["spec.image"] = sameString(third["spec"].(map[string]any)["image"].(string), second["spec"].(map[string]any)["image"].(string))
	want := map[string]bool{"key apiVersion": true, "key kind": true, "key metadata": true, "key spec": true,
		"metadata.name": false, "metadata.uid": false, "metadata.namespace": true, "spec.image": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("strings shared between the second and third objects (-want +got):\n%s", diff)
	}
}

// keyOf returns m's own copy of key.
func keyOf(m map[string]any, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

// sameString reports whether a and b are the same bytes in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

func sameMap(a, b any) bool {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	return aok && bok && *(*unsafe.Pointer)(unsafe.Pointer(&am)) == *(*unsafe.Pointer)(unsafe.Pointer(&bm))
}

func sameSlice(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	return aok && bok && len(as) > 0 && len(bs) > 0 && &as[0] == &bs[0]
}

// TestUnstructuredSerializerTargets checks the results the serializer
// gives for each target, beyond agreeing with client-go: a list's items
// take its kind, a watch's Status is typed.
func TestUnstructuredSerializerTargets(t *testing.T) {
	s := NewUnstructuredSerializer(newUnstructuredDecoder(false), dynamicJSONSerializer(t))
	got := decodeAs(s, []byte(unstructuredFixtures[0]), "list")
	want := decodeResult{Obj: &unstructured.UnstructuredList{
		Object: map[string]any{"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "5", "continue": "x"}},
		Items: []unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u1", "labels": map[string]any{"app": "web"}}}},
			{Object: map[string]any{"kind": "X", "metadata": map[string]any{"name": "b"}}},
			{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}},
			{Object: map[string]any{"apiVersion": "v2"}},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}

// randomDocument returns a random JSON object, mostly valid, with the
// kinds of values, keys and spellings client-go's decoding treats its own
// way.
func randomDocument(r *rand.Rand) []byte {
	var b strings.Builder
	g := docGen{r: r, b: &b}
	b.WriteString("{")
	if r.IntN(10) > 0 {
		b.WriteString(`"apiVersion":` + g.pick(`"v1"`, `"example.com/v1"`, `"a/b/c"`, `null`, `1`, `""`) + ",")
	}
	if r.IntN(10) > 0 {
		b.WriteString(g.pick(`"kind"`, `"kind"`, `"kind"`, `"Kind"`) + ":" + g.pick(`"Thing"`, `"ThingList"`, `"Status"`, `""`, `null`, `[]`) + ",")
	}
	if r.IntN(3) == 0 {
		b.WriteString(`"items":`)
		if r.IntN(8) == 0 {
			g.value(0)
		} else {
			b.WriteString("[")
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteString(",")
				}
				if r.IntN(6) == 0 {
					g.value(1)
				} else {
					g.object(1)
				}
			}
			b.WriteString("]")
		}
		b.WriteString(",")
	}
	g.members(0)
	b.WriteString("}")
	out := []byte(b.String())
	if r.IntN(20) == 0 && len(out) > 0 { // corrupt a byte
		const bytes = "{}[],:\"\\x0 \x01\xff"
		out[r.IntN(len(out))] = bytes[r.IntN(len(bytes))]
	}
	if r.IntN(40) == 0 && len(out) > 1 { // truncate
		out = out[:r.IntN(len(out))]
	}
	return out
}

// docGen writes random JSON values.
type docGen struct {
	r *rand.Rand
	b *strings.Builder
}

func (g docGen) pick(choices ...string) string { return choices[g.r.IntN(len(choices))] }

func (g docGen) members(depth int) {
	n := g.r.IntN(5)
	for i := range n {
		if i > 0 {
			g.b.WriteString(",")
		}
		g.b.WriteString(g.str() + ":")
		g.value(depth + 1)
	}
	if n == 0 {
		g.b.WriteString(`"k":1`)
	}
}

func (g docGen) object(depth int) {
	g.b.WriteString("{")
	if depth < 6 {
		g.members(depth)
	}
	g.b.WriteString("}")
}

func (g docGen) value(depth int) {
	switch k := g.r.IntN(10); {
	case k < 2 && depth < 6:
		g.object(depth)
	case k < 4 && depth < 6:
		g.b.WriteString("[")
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b.WriteString(",")
			}
			g.value(depth + 1)
		}
		g.b.WriteString("]")
	case k < 6:
		g.b.WriteString(g.str())
	case k < 8:
		g.b.WriteString(g.number())
	default:
		g.b.WriteString(g.pick("true", "false", "null", " null ", "\n\ttrue"))
	}
}

func (g docGen) str() string {
	return g.pick(`"a"`, `"name"`, `"metadata"`, `"uid"`, `"kind"`, `"KIND"`, `"apiVersion"`, `"items"`, `""`,
		`"caf\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"tab\there"`, `"quote\"d"`, "\"raw \xc3\xa9\"", "\"bad \xff\"",
		`"`+strconv.Itoa(g.r.IntN(1000))+`"`, `"nginx:1.27"`, `"Ready"`)
}

func (g docGen) number() string {
	switch g.r.IntN(6) {
	case 0:
		return strconv.FormatInt(g.r.Int64()-g.r.Int64(), 10)
	case 1:
		return strconv.FormatFloat(g.r.NormFloat64()*1e6, 'g', -1, 64)
	case 2:
		return strconv.FormatFloat(g.r.NormFloat64(), 'e', -1, 64)
	case 3:
		return g.pick("0", "-0", "1.0", "1e2", "1E+2", "9223372036854775808", "-9223372036854775809", "1e400", "12345678901234567890123")
	default:
		return strconv.Itoa(g.r.IntN(100))
	}
}

// workloadList returns a list of n custom resources shaped like Kueue
// Workloads, replicas of a few templates with managed fields, as JSON.
func workloadList(r *rand.Rand, n int) []byte {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"WorkloadList","metadata":{"resourceVersion":"123"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		tpl := r.IntN(3)
		fmt.Fprintf(&b, `{"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"Workload","metadata":{"name":"job-%d","namespace":"team-%d","uid":"%08x-0000","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"kueue.x-k8s.io/queue-name":"q%d","app":"trainer"},"managedFields":[{"manager":"kueue","operation":"Update","apiVersion":"kueue.x-k8s.io/v1beta1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:podSets":{},"f:queueName":{}}}},{"manager":"kueue-admission","operation":"Update","subresource":"status","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Admitted\"}":{".":{},"f:status":{}}}}}}]},`, i, tpl, r.Uint32(), 1000+i, tpl)
		fmt.Fprintf(&b, `"spec":{"queueName":"q%d","priority":%d,"podSets":[{"name":"main","count":%d,"template":{"spec":{"containers":[{"name":"trainer","image":"registry.example.com/trainer:v%d","args":["--epochs","10","--lr","0.001"],"resources":{"requests":{"cpu":"2","memory":"8Gi"},"limits":{"nvidia.com/gpu":"1"}},"env":[{"name":"RANK","value":"0"},{"name":"WORLD","value":"8"}]}],"restartPolicy":"Never","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}]}}}]},`, tpl, tpl*10, 1+tpl, tpl)
		fmt.Fprintf(&b, `"status":{"conditions":[{"type":"Admitted","status":"True","reason":"Admitted","message":"ok","lastTransitionTime":"2026-01-01T00:00:0%dZ","observedGeneration":1}],"admission":{"clusterQueue":"cq","podSetAssignments":[{"name":"main","flavors":{"cpu":"default","nvidia.com/gpu":"a100"},"count":%d,"resourceUsage":{"cpu":"%d","memory":"8Gi"}}]}}}`, r.IntN(3), 1+tpl, 2*(1+tpl))
	}
	b.WriteString("]}")
	return []byte(b.String())
}
