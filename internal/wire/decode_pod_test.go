package wire

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/testkit"
)

// TestUnmarshalPodEqualsUnmarshal decodes production-like and random pods
// both ways, twice through one table, so that the second decode takes its
// strings from the table.
func TestUnmarshalPodEqualsUnmarshal(t *testing.T) {
	for name, encoded := range map[string][][]byte{
		"prod":   encodedProdPods(t, 300),
		"random": randomObjects[corev1.Pod](t, 16, 200),
	} {
		for _, table := range decoderTables() {
			t.Run(fmt.Sprint(name, "/", table.shareSubObjects), func(t *testing.T) {
				for range 2 {
					for _, data := range encoded {
						decodeBoth[corev1.Pod](t, table, data)
					}
				}
			})
		}
	}
}

// decodeReplicas decodes, through table, 5 production-like pods: replicas of
// one Deployment (decodeBoth checks each against Pod.Unmarshal).
func decodeReplicas(t *testing.T, table *InternTable) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, data := range encodedProdPods(t, 5) {
		pods = append(pods, decodeBoth[corev1.Pod](t, table, data))
	}
	return pods
}

// TestUnmarshalPodShares decodes replicas of one Deployment and checks that
// the last two share their strings' bytes: labels, images, env vars.
func TestUnmarshalPodShares(t *testing.T) {
	pods := decodeReplicas(t, newBareInternTable())
	a, b := pods[3], pods[4]
	same := func(what, x, y string) {
		t.Helper()
		if x == "" || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q not shared", what, x, y)
		}
	}
	if len(a.Labels) == 0 {
		t.Fatal("no labels")
	}
	for k, v := range a.Labels {
		same("label value", v, b.Labels[k])
		for k2 := range b.Labels {
			if k2 == k {
				same("label key", k, k2)
			}
		}
	}
	for c := range a.Spec.Containers {
		ca, cb := &a.Spec.Containers[c], &b.Spec.Containers[c]
		same("image", ca.Image, cb.Image)
		for e := range ca.Env {
			same("env name", ca.Env[e].Name, cb.Env[e].Name)
			if ca.Env[e].Value != "" {
				same("env value", ca.Env[e].Value, cb.Env[e].Value)
			}
		}
	}
	if a.Name == b.Name || unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
		t.Error("names shared")
	}
}

// TestUnmarshalPodDoesNotAliasData decodes pods, overwrites the buffer
// they were decoded from, as the next response reusing it does, and
// compares them with a decode of a copy.
func TestUnmarshalPodDoesNotAliasData(t *testing.T) {
	encoded := append(encodedProdPods(t, 20), randomObjects[corev1.Pod](t, 17, 50)...)
	for _, table := range decoderTables() {
		for round := range 2 {
			for i, data := range encoded {
				buf := bytes.Clone(data)
				got := &corev1.Pod{}
				table.mu.Lock()
				err := unmarshalPod(table, buf, got)
				table.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
				for j := range buf {
					buf[j] = 0xa5
				}
				want := &corev1.Pod{}
				if err := want.Unmarshal(data); err != nil {
					t.Fatal(err)
				}
				if diff := testkit.DiffLarge(want, got); diff != "" {
					t.Fatalf("sharing sub-objects %v, round %d, pod %d changed with the buffer (-want +got):\n%s", table.shareSubObjects, round, i, diff)
				}
			}
		}
	}
}

// TestUnmarshalPodSharesOnlyStrings checks that, with a table that does
// not share sub-objects (the default), replicas of one Deployment share
// strings but no map, list, pointed-to struct or bytes.
func TestUnmarshalPodSharesOnlyStrings(t *testing.T) {
	pods := decodeReplicas(t, newBareInternTable())
	a, b := pods[3], pods[4]
	if unsafe.StringData(a.Labels["app"]) != unsafe.StringData(b.Labels["app"]) {
		t.Error("the label app is not shared")
	}
	type shared struct{ Labels, Env, Limits, Probe, SecurityContext, FieldsV1 bool }
	ca, cb := &a.Spec.Containers[0], &b.Spec.Containers[0]
	got := shared{
		Labels:          mapPointer(a.Labels) == mapPointer(b.Labels),
		Env:             unsafe.SliceData(ca.Env) == unsafe.SliceData(cb.Env),
		Limits:          mapPointer(ca.Resources.Limits) == mapPointer(cb.Resources.Limits),
		Probe:           ca.ReadinessProbe == cb.ReadinessProbe,
		SecurityContext: ca.SecurityContext == cb.SecurityContext,
		FieldsV1:        unsafe.SliceData(a.ManagedFields[0].FieldsV1.Raw) == unsafe.SliceData(b.ManagedFields[0].FieldsV1.Raw),
	}
	if diff := cmp.Diff(shared{}, got); diff != "" {
		t.Errorf("shared between replicas (-want +got):\n%s", diff)
	}
}

// podRuleEncodings returns hand-made pod encodings, by what they
// exercise of gogo's rules: merging, overwriting, appending, map entries,
// packed lists, empty bytes, unknown fields of every wire type, and the
// errors of bad tags, wire types and lengths.
func podRuleEncodings() map[string][]byte {
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	varintField := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	str := func(num protowire.Number, s string) []byte { return bytesField(num, []byte(s)) }
	meta := func(parts ...[]byte) []byte { return bytesField(1, cat(parts...)) }   // Pod.metadata
	spec := func(parts ...[]byte) []byte { return bytesField(2, cat(parts...)) }   // Pod.spec
	entry := func(parts ...[]byte) []byte { return bytesField(11, cat(parts...)) } // ObjectMeta.labels
	podSecurity := func(parts ...[]byte) []byte { return spec(bytesField(14, cat(parts...))) }
	managed := func(raw []byte) []byte { // ObjectMeta.managedFields[0].fieldsV1.Raw
		return meta(bytesField(17, bytesField(7, bytesField(1, raw))))
	}
	long := func(v uint64, n int) []byte { // v as a varint of n bytes
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		b[n-1] &= 0x7f
		return b
	}
	return map[string][]byte{
		"empty":                   nil,
		"later scalar wins":       meta(str(1, "a"), str(1, "b")),
		"message merges":          cat(meta(str(1, "a")), meta(str(3, "ns"))),
		"pointer message merges":  cat(spec(bytesField(14, varintField(6, 1))), spec(bytesField(14, varintField(5, 7)))),
		"repeated appends":        spec(bytesField(2, str(1, "a")), bytesField(2, str(1, "b"))),
		"map entry":               meta(entry(str(1, "k"), str(2, "v"))),
		"map entry no key":        meta(entry(str(2, "v"))),
		"map entry no value":      meta(entry(str(1, "k"))),
		"map entry empty":         meta(entry()),
		"map duplicate key":       meta(entry(str(1, "k"), str(2, "v")), entry(str(1, "k"), str(2, "w"))),
		"map entry unknown field": meta(entry(str(1, "k"), varintField(3, 9), str(2, "v"))),
		"map entry key twice":     meta(entry(str(1, "k"), str(1, "j"), str(2, "v"))),
		"map entry varint key":    meta(entry(varintField(1, 3))),
		"map entry field zero":    meta(entry(protowire.AppendVarint(nil, 2), str(1, "k"))),
		"map key past entry":      meta(bytesField(11, cat(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{3})), str(1, "a")),
		"resource list":           spec(bytesField(2, bytesField(8, bytesField(1, cat(str(1, "cpu"), bytesField(2, str(1, "100m"))))))),
		"resource list no value":  spec(bytesField(2, bytesField(8, bytesField(1, str(1, "cpu"))))),
		"bad quantity":            spec(bytesField(2, bytesField(8, bytesField(1, cat(str(1, "cpu"), bytesField(2, str(1, "x"))))))),
		"packed":                  podSecurity(bytesField(4, cat(protowire.AppendVarint(nil, 1), protowire.AppendVarint(nil, 300)))),
		"packed empty":            podSecurity(bytesField(4, nil)),
		"unpacked":                podSecurity(varintField(4, 1), varintField(4, 300)),
		"packed and unpacked":     podSecurity(varintField(4, 1), bytesField(4, protowire.AppendVarint(nil, 2)), varintField(4, 3)),
		"packed truncated":        podSecurity(bytesField(4, []byte{0x80})),
		"empty bytes":             managed(nil),
		"bytes":                   managed([]byte(`{"f:metadata":{}}`)),
		"bytes twice":             cat(managed([]byte("ab")), managed([]byte("c"))),
		"pointer scalar":          spec(varintField(4, 30)),
		"pointer string":          spec(str(31, "Never")),
		"bool":                    spec(varintField(11, 2)),
		"int32 truncated":         spec(bytesField(2, bytesField(6, varintField(3, 1<<40|80)))),
		"10-byte varint":          spec(cat(protowire.AppendTag(nil, 4, protowire.VarintType), long(1<<63|5, 10))),
		"10-byte varint overflow": spec(cat(protowire.AppendTag(nil, 4, protowire.VarintType), long(5, 9), []byte{0x7f})),
		"11-byte varint":          spec(cat(protowire.AppendTag(nil, 4, protowire.VarintType), long(5, 11))),
		"padded tag":              cat(long(1<<3|2, 5), protowire.AppendBytes(nil, str(1, "a"))),
		"tag truncated to int32":  cat(protowire.AppendVarint(nil, (1<<32|1)<<3|2), protowire.AppendBytes(nil, str(1, "a"))),
		"negative field number":   cat(protowire.AppendVarint(nil, (1<<31)<<3|2), protowire.AppendBytes(nil, nil)),
		"field zero":              cat(protowire.AppendVarint(nil, 2), protowire.AppendBytes(nil, nil)),
		"end group":               protowire.AppendTag(nil, 9, protowire.EndGroupType),
		"unknown varint":          cat(varintField(9, 1), meta(str(1, "a"))),
		"unknown fixed64":         protowire.AppendFixed64(protowire.AppendTag(nil, 9, protowire.Fixed64Type), 1),
		"unknown fixed32":         protowire.AppendFixed32(protowire.AppendTag(nil, 9, protowire.Fixed32Type), 1),
		"unknown fixed truncated": cat(protowire.AppendTag(nil, 9, protowire.Fixed64Type), []byte{1, 2}),
		"unknown bytes":           str(9, "x"),
		"unknown group":           cat(protowire.AppendTag(nil, 9, protowire.StartGroupType), varintField(1, 1), protowire.AppendTag(nil, 7, protowire.EndGroupType)),
		"unknown nested groups":   cat(protowire.AppendTag(nil, 9, protowire.StartGroupType), protowire.AppendTag(nil, 9, protowire.StartGroupType), protowire.AppendTag(nil, 9, protowire.EndGroupType), protowire.AppendTag(nil, 9, protowire.EndGroupType)),
		"unknown open group":      protowire.AppendTag(nil, 9, protowire.StartGroupType),
		"unknown wire type 6":     protowire.AppendVarint(nil, 9<<3|6),
		"unknown in map entry":    meta(entry(cat(protowire.AppendTag(nil, 5, protowire.StartGroupType), protowire.AppendTag(nil, 5, protowire.EndGroupType)))),
		"wrong wire type string":  meta(varintField(1, 1)),
		"wrong wire type varint":  spec(str(4, "x")),
		"wrong wire type message": varintField(1, 1),
		"wrong wire type group":   cat(protowire.AppendTag(nil, 1, protowire.StartGroupType), protowire.AppendTag(nil, 1, protowire.EndGroupType)),
		"wrong wire type packed":  podSecurity(protowire.AppendFixed32(protowire.AppendTag(nil, 4, protowire.Fixed32Type), 1)),
		"length past end":         cat(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{5, 1}),
		"negative length":         cat(protowire.AppendTag(nil, 1, protowire.BytesType), long(1<<63, 10)),
		"huge length":             cat(protowire.AppendTag(nil, 1, protowire.BytesType), long(1<<62, 9)),
		"time":                    meta(bytesField(8, varintField(1, 1700000000))),
		"empty time":              meta(bytesField(8, nil)),
		"int or string":           spec(bytesField(2, bytesField(10, bytesField(1, bytesField(3, cat(varintField(1, 1), str(3, "http"))))))),
	}
}

// TestUnmarshalPodRules decodes hand-made encodings that exercise gogo's
// rules one by one (podRuleEncodings), twice through one table.
func TestUnmarshalPodRules(t *testing.T) {
	cases := podRuleEncodings()
	for _, table := range decoderTables() {
		for round := range 2 {
			for name, data := range cases {
				t.Run(fmt.Sprint(name, "/", table.shareSubObjects, "/", round), func(t *testing.T) {
					decodeBoth[corev1.Pod](t, table, data)
				})
			}
		}
	}
}

// TestUnmarshalPodBadBytes decodes truncations and random mutations of
// production-like and random pods: unmarshalPod must fail exactly when
// Pod.Unmarshal does, and decode the same pod when neither fails.
func TestUnmarshalPodBadBytes(t *testing.T) {
	encoded := append(encodedProdPods(t, 2), randomObjects[corev1.Pod](t, 18, 5)...)
	r := rand.New(rand.NewPCG(18, 0))
	tables := decoderTables()
	for i, data := range encoded {
		table := tables[i%len(tables)]
		// Every 7th length: every length takes too long under -race, and
		// the fuzzer covers the rest.
		for n := 0; n < len(data); n += 7 {
			decodeBoth[corev1.Pod](t, table, data[:n])
		}
		for range 300 {
			m := bytes.Clone(data)
			for range 1 + r.IntN(3) {
				m[r.IntN(len(m))] = byte(r.Uint32())
			}
			decodeBoth[corev1.Pod](t, table, m)
		}
	}
}

// FuzzUnmarshalPod compares unmarshalPod with Pod.Unmarshal on any bytes.
func FuzzUnmarshalPod(f *testing.F) {
	rules := slices.Collect(maps.Values(podRuleEncodings()))
	fuzzDecode[corev1.Pod](f, encodedProdPods(f, 3), randomObjects[corev1.Pod](f, 19, 5), rules)
}

// TestInternTableShrinksFromBytes decodes strings through strFrom, lets
// them go and checks that a sweep leaves the table empty.
func TestInternTableShrinksFromBytes(t *testing.T) {
	table := newBareInternTable()
	kept := make([]string, 3000)
	for i := range kept {
		// Longer than 16 bytes and seen twice: see TestInternTableShrinks.
		b := []byte(fmt.Sprintf("a-string-long-enough-%d", i))
		_ = table.strFrom(b)
		kept[i] = table.strFrom(b)
		if unsafe.StringData(kept[i]) == unsafe.SliceData(b) {
			t.Fatal("strFrom returned a string pointing into its argument")
		}
	}
	if n := table.len(); n < len(kept) {
		t.Fatalf("table holds %d strings, want at least %d", n, len(kept))
	}
	if again := table.strFrom([]byte(strings.Clone(kept[0]))); unsafe.StringData(again) != unsafe.StringData(kept[0]) {
		t.Error("strFrom did not return the shared copy")
	}
	runtime.KeepAlive(kept)
	eventuallyForgetsAll(t, table)
}

// BenchmarkDecodePod decodes production-like pods (1,000 of them, replicas
// sharing their Deployment's template, in turn) from protobuf, each way an
// informer may (see the cases), through benchDecode: each decoded pod
// replaces the previous one of its name in a cache, so that the table holds
// what a cache uses. cpu-ns/op is the process's CPU time (garbage
// collection included), less disturbed than ns/op on a shared machine.
func BenchmarkDecodePod(b *testing.B) {
	encoded := encodedProdPods(b, 1000)
	interned := func(table *InternTable, data []byte, p *corev1.Pod) error {
		table.lock()
		defer table.mu.Unlock()
		return unmarshalPod(table, data, p)
	}
	benchDecode(b, encoded, []decodeBenchCase[corev1.Pod]{
		{"Unmarshal", false, func(_ *InternTable, data []byte, p *corev1.Pod) error { return p.Unmarshal(data) }},
		// The default: strings interned on decode.
		{"unmarshalPod", false, interned},
		// Deduplicate without a transform: sub-objects shared on decode.
		{"unmarshalPod sharing", true, interned},
		// Deduplicate with a transform: the pass after decoding.
		{"unmarshalPod+Deduplicate", false, func(table *InternTable, data []byte, p *corev1.Pod) error {
			if err := interned(table, data, p); err != nil {
				return err
			}
			InternObject(table, InternFuncFor[*corev1.Pod](), p)
			return nil
		}},
		// Deduplicate before decoding pods straight into the table.
		{"Unmarshal+Deduplicate", false, func(table *InternTable, data []byte, p *corev1.Pod) error {
			if err := p.Unmarshal(data); err != nil {
				return err
			}
			InternObject(table, InternFuncFor[*corev1.Pod](), p)
			return nil
		}},
	})
}

// TestUnmarshalPodSharesSubObjects checks that replicas of one Deployment
// decoded by unmarshalPod share their template's sub-objects, but for the
// first one, as the deduplication pass does.
func TestUnmarshalPodSharesSubObjects(t *testing.T) {
	pods := decodeReplicas(t, newSharingTable())
	checkSharedSubObjects(t, pods[3], pods[4])
	if mapPointer(pods[0].Labels) == mapPointer(pods[3].Labels) {
		t.Error("the first replica's labels are shared: want them kept")
	}
}

// TestUnmarshalPodDoesNotWriteShared decodes pods whose encodings repeat a
// field holding a shared sub-object (a label map, a pod security context,
// a toleration list), so that the second occurrence merges into or appends
// to what the first decoded: the pods cached before must not change.
func TestUnmarshalPodDoesNotWriteShared(t *testing.T) {
	table := newSharingTable()
	encoded := encodedProdPods(t, 60)
	var cached []*corev1.Pod
	for range 2 {
		cached = cached[:0]
		for _, data := range encoded {
			cached = append(cached, decodeBoth[corev1.Pod](t, table, data))
		}
	}
	snapshot := make([]*corev1.Pod, len(cached))
	for i, p := range cached {
		snapshot[i] = p.DeepCopy()
	}
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	fsGroup := protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), 99)
	extras := [][]byte{
		field(1, field(11, append(field(1, []byte("extra")), field(2, []byte("label"))...))), // metadata.labels
		field(2, field(14, fsGroup)),                 // spec.securityContext
		field(2, field(22, field(1, []byte("key")))), // spec.tolerations
	}
	for _, data := range encoded {
		for _, extra := range extras {
			decodeBoth[corev1.Pod](t, table, append(slices.Clip(data), extra...))
		}
	}
	for i, p := range cached {
		if !reflect.DeepEqual(snapshot[i], p) {
			t.Fatalf("cached pod %d changed (-before +after):\n%s", i, testkit.DiffLarge(snapshot[i], p))
		}
	}
}

// TestUnmarshalPodMapReadPastEntry decodes a map entry whose key runs past
// the entry (gogo reads it within the message, not the entry), with the
// same bytes for the map and different bytes after it: the map must not
// be shared.
func TestUnmarshalPodMapReadPastEntry(t *testing.T) {
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	entry := field(11, []byte{0x0a, 3}) // a key of 3 bytes in an entry of 2
	table := newSharingTable()
	for _, name := range []string{"a", "a", "a", "b", "b", "c"} {
		decodeBoth[corev1.Pod](t, table, field(1, append(slices.Clip(entry), field(1, []byte(name))...)))
	}
}

// TestUnmarshalPodTableShrinks decodes many pods, lets them go and checks
// that a sweep leaves no sub-object shared at decode time in the table.
func TestUnmarshalPodTableShrinks(t *testing.T) {
	table := newSharingTable()
	var pods []*corev1.Pod
	for _, data := range encodedProdPods(t, 2000) {
		pods = append(pods, decodeBoth[corev1.Pod](t, table, data))
	}
	checkSharesShrink(t, table, &table.raw, pods)
}

// TestUnmarshalPodSharesWholeFields decodes pods where a shared field
// (a map, a list, a pointer) occurs again after an unknown group, which
// the count of occurrences does not see past: the value decoded, more
// than the first occurrence's bytes, must not become the canonical value
// for those bytes.
func TestUnmarshalPodSharesWholeFields(t *testing.T) {
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	group := cat(protowire.AppendTag(nil, 99, protowire.StartGroupType), protowire.AppendTag(nil, 99, protowire.EndGroupType))
	label := func(k string) []byte { return field(11, cat(field(1, []byte(k)), field(2, []byte("v")))) }
	toleration := func(k string) []byte { return field(22, field(1, []byte(k))) }
	fsGroup := func(v uint64) []byte {
		return field(14, protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), v))
	}
	runAsUser := field(14, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 7))
	for name, c := range map[string]struct{ whole, first []byte }{
		"map":     {field(1, cat(label("a"), label("b"), group, label("c"))), field(1, cat(label("a"), label("b")))},
		"list":    {field(2, cat(toleration("a"), group, toleration("b"))), field(2, toleration("a"))},
		"pointer": {field(2, cat(fsGroup(1), group, runAsUser)), field(2, fsGroup(1))},
	} {
		t.Run(name, func(t *testing.T) {
			table := newSharingTable()
			for _, data := range [][]byte{c.whole, c.whole, c.whole, c.first, c.first, c.first, c.whole} {
				decodeBoth[corev1.Pod](t, table, data)
			}
		})
	}
}
