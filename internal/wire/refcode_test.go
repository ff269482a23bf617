package wire

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// encodeRefs writes the records of references of encoded, objects of type
// T, with one encoder, as a snapshot does.
func encodeRefs[T any, P pbMessage[T]](t testing.TB, encoded [][]byte) [][]byte {
	t.Helper()
	enc := NewRefEncoder()
	recs := make([][]byte, len(encoded))
	for i, data := range encoded {
		recs[i] = enc.Append(nil, data, P(new(T)))
	}
	return recs
}

// decodeRefs reads recs back through table with one decoder, and fails
// unless each equals k8s.io/api's Unmarshal of encoded's object.
func decodeRefs[T any, P pbMessage[T]](t testing.TB, table *InternTable, encoded, recs [][]byte) {
	t.Helper()
	dec := NewRefDecoder()
	for i, rec := range recs {
		want := P(new(T))
		if err := want.Unmarshal(bytes.Clone(encoded[i])); err != nil {
			t.Fatal(err)
		}
		got := P(new(T))
		if err := dec.Unmarshal(table, rec, got); err != nil {
			t.Fatalf("record %d of %T: %v", i, got, err)
		}
		// reflect.DeepEqual, as decodeBoth: cmp does not tell nil from
		// empty bytes.
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("record %d of %T differs from Unmarshal (-Unmarshal +references):\n%s", i, got, testkit.DiffLarge(want, got))
		}
	}
}

// checkRefRecords writes random objects of type T, each three times so
// that their strings are repeated, as records of references and reads
// them back through each kind of table: the objects must equal
// Unmarshal's. Then it reads truncations and mutations of some records:
// an error or an object, never a panic.
func checkRefRecords[T any, P pbMessage[T]](t *testing.T, seed uint64) {
	var encoded [][]byte
	for _, data := range randomObjects[T, P](t, seed, 10) {
		encoded = append(encoded, data, data, data)
	}
	recs := encodeRefs[T, P](t, encoded)
	for _, table := range decoderTables() {
		decodeRefs[T, P](t, table, encoded, recs)
	}
	r := rand.New(rand.NewPCG(seed, 2))
	for _, rec := range recs[:6] {
		dec := NewRefDecoder()
		table := newBareInternTable()
		for n := 0; n < len(rec); n += max(7, len(rec)/50) {
			dec.Unmarshal(table, rec[:n], P(new(T)))
		}
		for range 30 {
			m := bytes.Clone(rec)
			m[r.IntN(len(m))] = byte(r.Uint32())
			dec.Unmarshal(table, m, P(new(T)))
		}
	}
}

// TestRefRecordsRoundTrip runs checkRefRecords for every root of the
// generated decoder.
func TestRefRecordsRoundTrip(t *testing.T) {
	for i, rt := range rootTests() {
		t.Run(rt.typ.String(), func(t *testing.T) { rt.refs(t, 60+uint64(i)) })
	}
}

// TestRefRecordsOfProductionPods writes production-like pods as records of
// references: every record is one of references (none falls back to
// plain), they are smaller than the pods' encodings, they read back
// equal through each kind of table, and strings repeated across pods are
// one copy.
func TestRefRecordsOfProductionPods(t *testing.T) {
	pods := prodpods.New(300)
	encoded := make([][]byte, len(pods))
	var plainBytes, refBytes int
	for i := range pods {
		data, err := pods[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		encoded[i] = data
		plainBytes += len(data)
	}
	recs := encodeRefs[corev1.Pod](t, encoded)
	for i, rec := range recs {
		if rec[0] != refCoded {
			t.Fatalf("record %d is plain", i)
		}
		refBytes += len(rec)
	}
	// About 60% of these pods' bytes are strings of their own (managed
	// fields naming the pod's IPs and containers' IDs, for one), which
	// references do not shorten.
	if refBytes >= plainBytes*4/5 {
		t.Errorf("records of references take %d bytes, the encodings %d: want less than 80%%", refBytes, plainBytes)
	}
	for _, table := range decoderTables() {
		decodeRefs[corev1.Pod](t, table, encoded, recs)
	}
	// The first pod's image is written in place, the others refer to the
	// table: one copy.
	dec := NewRefDecoder()
	restored := make([]corev1.Pod, 3)
	for i := range restored {
		if err := dec.Unmarshal(newBareInternTable(), recs[i], &restored[i]); err != nil {
			t.Fatal(err)
		}
	}
	b, c := restored[1].Spec.Containers[0].Image, restored[2].Spec.Containers[0].Image
	if b != c || unsafe.StringData(b) != unsafe.StringData(c) {
		t.Errorf("the second and third pods' first images %q and %q are not one copy", b, c)
	}
}

// TestRefRecordsShareTheTablesStrings restores two snapshots of the same
// production-like pods (two clusters of a fleet, each written by an encoder
// of its own) through one table, then decodes one of the pods from the
// wire through it: a string repeated in the snapshots (the table entries)
// is one copy in both restores and in the object decoded later.
func TestRefRecordsShareTheTablesStrings(t *testing.T) {
	for _, table := range []*InternTable{NewInternTable(), NewSubObjectSharingTable()} {
		encoded := encodedProdPods(t, 3)
		image := func(recs [][]byte) string {
			dec := NewRefDecoder()
			var pod corev1.Pod
			for _, rec := range recs {
				if err := dec.Unmarshal(table, rec, &pod); err != nil {
					t.Fatal(err)
				}
			}
			// The last pod's image refers to the table's entry.
			return pod.Spec.Containers[0].Image
		}
		first := image(encodeRefs[corev1.Pod](t, encoded))
		second := image(encodeRefs[corev1.Pod](t, encoded))
		var wire corev1.Pod
		if err := Unmarshal(table, encoded[0], &wire); err != nil {
			t.Fatal(err)
		}
		later := wire.Spec.Containers[0].Image
		if first != second || first != later {
			t.Fatalf("images %q, %q and %q differ", first, second, later)
		}
		if unsafe.StringData(first) != unsafe.StringData(second) || unsafe.StringData(first) != unsafe.StringData(later) {
			t.Errorf("sharing %v: the two restores' image and the wire's are not one copy", table.SharesSubObjects())
		}
	}
}

// TestRefRecordOfTypeWithoutDecoder writes an object of a type without an
// interning decoder as a plain record, which reads back without a table.
func TestRefRecordOfTypeWithoutDecoder(t *testing.T) {
	obj := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{"a": "b"}}}
	data, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRefEncoder().Append(nil, data, new(corev1.PersistentVolume))
	if rec[0] != refPlain {
		t.Fatalf("record kind %d, want plain", rec[0])
	}
	var got corev1.PersistentVolume
	if err := NewRefDecoder().Unmarshal(nil, rec, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj, &got) {
		t.Errorf("read back %+v, want %+v", &got, obj)
	}
}

// TestRefRecordBadReference reads a record referring past the table: an
// error, not a panic or a wrong object.
func TestRefRecordBadReference(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	data, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	enc := NewRefEncoder()
	for range 2 { // the second makes "p" and "ns" table entries
		enc.Append(nil, data, new(corev1.Pod))
	}
	rec := enc.Append(nil, data, new(corev1.Pod))
	// A fresh decoder has no table: the references do not resolve.
	err = NewRefDecoder().Unmarshal(newBareInternTable(), rec, new(corev1.Pod))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(errBadReference.Error())) {
		t.Errorf("got error %v, want %v", err, errBadReference)
	}
}

// TestRefRecordsQuantities reads quantities from records of references:
// equal to Unmarshal's, and one held as an inf.Dec is never shared between
// two objects (adding to one leaves the other as it was).
func TestRefRecordsQuantities(t *testing.T) {
	pod := func(cpu, memory string) []byte {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			}}}},
		}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// 30 digits do not fit an int64: held as an inf.Dec.
	const huge = "123456789012345678901234567890"
	encoded := [][]byte{pod("100m", huge), pod("100m", huge), pod("250m", huge)}
	recs := encodeRefs[corev1.Pod](t, encoded)
	for _, table := range decoderTables() {
		decodeRefs[corev1.Pod](t, table, encoded, recs)
	}
	dec := NewRefDecoder()
	restored := make([]corev1.Pod, len(recs))
	for i := range restored {
		if err := dec.Unmarshal(newBareInternTable(), recs[i], &restored[i]); err != nil {
			t.Fatal(err)
		}
	}
	a := restored[0].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	b := restored[1].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	a.Add(resource.MustParse("1"))
	if got := b.String(); got != huge {
		t.Errorf("after adding to the first pod's memory, the second's is %s, want %s", got, huge)
	}
	if got := restored[2].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "250m" {
		t.Errorf("the third pod's cpu is %s, want 250m", got.String())
	}
}

// FuzzRefRecordPod reads any bytes as a record of references of a
// snapshot of pods, after records of production-like pods (the seeds)
// filled the table: an error or a pod, never a panic. The decoders and
// tables are kept from one input to the next (inputs add to their state,
// as records do), so that an input costs one decode.
func FuzzRefRecordPod(f *testing.F) {
	encoded := encodedProdPods(f, 3)
	recs := encodeRefs[corev1.Pod](f, encoded)
	tables := decoderTables()
	decs := make([]*RefDecoder, len(tables))
	for i, table := range tables {
		decs[i] = NewRefDecoder()
		for _, rec := range recs {
			if err := decs[i].Unmarshal(table, rec, new(corev1.Pod)); err != nil {
				f.Fatal(err)
			}
		}
	}
	for _, rec := range recs {
		f.Add(rec)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		for i, table := range tables {
			decs[i].Unmarshal(table, rec, new(corev1.Pod))
		}
	})
}
