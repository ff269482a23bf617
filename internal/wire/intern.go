package wire

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"reflect"
	"strings"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubetyped/informer/internal/gcwork"
)

// Interning, the string half of deduplication (InformerOptions.Deduplicate;
// share.go holds the other half): an informer's queue passes every object it
// will cache through an intern function before the cache sees it, so that
// strings repeated across cached objects (label and annotation keys and
// values, owner references, images, env vars, node names, condition types,
// managed fields…) share one copy. It runs after the transform, on the reflector's
// goroutine, whatever the ListerWatcher, and changes no value: only where
// the bytes of equal strings live.
//
// Go's unique package is not used: its table forgets a value as soon as no
// unique.Handle to it is left, and cached objects hold strings, not handles,
// so a string interned once would get a new copy the next time. The table
// below keeps, per distinct string, a weak pointer to the bytes of its one
// copy: the copy lives exactly as long as some object uses it, and the
// table's entry for a string no object uses any more is dropped by the next
// sweep, which insertions trigger (shareSet.put), so that the table holds
// about twice what is cached at most, and which garbage collections
// trigger too (sweepAfterGC), so that what churn left behind goes when it
// stops.
//
// managedFields' FieldsV1.Raw bytes are shared the same way; they, and the
// sub-objects of share.go, are mutable things shared between cached objects
// (see docs/semantics.md, "Deduplication").

// seenSlots is the size of the filter of strings and sub-objects seen
// once: a value is copied into the table (a sub-object made the canonical
// one) only when seen a second time, so that a value unique to one object
// (a build annotation, a managed-fields entry naming the pod's IP) costs a
// hash and no copy. The filter is an array of hashes (64 KB) so that it
// never grows; a value whose second sighting comes after its slot was
// reused waits for a third. Measured on W2 (100,000 small pods, 10,000 at
// -quick): copying every string on its first sighting cost 9.9
// allocations per pod against 2.3 without interning; on W6 (e), 55,371 B
// per event against 49,393.
//
// It is set-associative, seenWays hashes per set, because one pod brings
// about 100 hashes: direct-mapped, two of them landing in the same slot
// (likely, for 100 hashes in 8,192 slots) evicted each other on every pod
// of a template, so that neither was ever shared (TestShareShares failed a
// third of its runs that way).
const seenSlots = 8192

// seenWays is the number of hashes in one set of the filter.
const seenWays = 4

// frontSets and frontWays size the front cache of strings: frontSets sets
// of frontWays entries, chosen by frontKey, each holding a string of the
// table and its key. A string found there costs its key (three loads and a
// multiplication), an array read and a comparison, where the table costs
// maphash, a Go map lookup and a weak pointer's Value (a miss in the
// processor's caches: the table holds about 8,000 strings for 3,000
// production-like pods, of which about 62 per pod are found in the front
// cache, 11 go on to the table). Two ways, because one pod brings about 70
// strings worth interning: direct-mapped, some of them would evict each
// other on every pod. Measured on the deduplication pass alone over
// production-like pods (decoded in batches of 32, decoding excluded; this
// thread's CPU time, medians of 4 interleaved runs, load 4.5-5): 17.8 µs
// per pod without the front cache, 14.3 with it keyed by maphash, 13.5
// keyed by frontKey.
//
// Its entries are strong references: a string there stays alive, and so
// stays in the table, even if no cached object uses it any more, until
// the entry is overwritten or the strings' set is swept (which empties the
// front cache). So that this is bounded, only strings of at most
// frontMaxLen bytes enter it: it pins at most frontSets×frontWays = 2,048
// strings, 128 KB of bytes, beside its own 48 KB.
const (
	frontSets   = 1 << frontSetBits
	frontWays   = 2
	frontMaxLen = 64
)

// frontSetBits is log2(frontSets): a set is chosen by the top bits of
// frontKey.
const frontSetBits = 10

// frontEntry is one string of the front cache and its frontKey.
type frontEntry struct {
	k uint64
	s string
}

// minSweepInserts is the fewest insertions between two sweeps of a share
// set (shareSet.put), so that a small set is not swept on every insertion.
const minSweepInserts = 1024

// InternTable maps strings to their one shared copy, and sub-objects to
// their canonical value (see share.go). It is safe for concurrent use
// through the package's functions (InternObject, Unmarshal and the
// decoders of NewRESTCodecs take its lock once per object); its methods
// must be called with mu held. It holds what it shares through weak
// pointers, so it keeps no object alive.
type InternTable struct {
	mu   sync.Mutex
	seed maphash.Seed
	// strings holds the shared copy of each string: a weak pointer to its
	// bytes and its length.
	strings shareSet[byte]
	// shared holds the canonical sub-objects of pods.
	shared podShares
	// raw holds the canonical sub-objects (of pods, pod templates and
	// metadata) shared at decode time,
	// keyed by their bytes as received (see share_decode.go).
	raw podShares
	// trees holds the canonical sub-trees of unstructured objects, keyed by
	// their bytes as received (see unstructured_share.go).
	trees unstrTreeSet
	// typed holds the canonical sub-objects shared by the typed JSON
	// decoder, per node (Go type), keyed by their bytes as received (see
	// json_typed_share.go).
	typed map[*tjNode]*shareSet[byte]
	// shareSubObjects makes the decoder share sub-objects (raw) and bytes
	// between the objects it decodes, not only strings; set before the
	// table is first used. Off, the decoded objects share nothing mutable.
	shareSubObjects bool
	// front caches strings of the table (see frontSets); allocated with
	// the first one.
	front *[frontSets][frontWays]frontEntry
	// seen holds the hashes of strings and sub-objects seen once, in sets
	// of seenWays chosen by hash; allocated with the first one.
	seen []uint64
	// buf holds the encoding of the sub-object being shared.
	buf []byte
	// unquoted holds the last string with escapes that the typed JSON
	// decoder unquoted, before it is interned (json_typed_decode.go).
	unquoted []byte
	// refs, while the decoder decodes a record whose strings are not in
	// the wire's form (refcode.go), says what their bytes are; nil
	// otherwise. Set and cleared with mu held (lockWith, unlock).
	refs *refMode
	// uses counts the passes and decodes that held mu (lock); usesAtGC is
	// its value at the last garbage collection's sweepAfterGC, and
	// idleSweeps the sweeps left to make while it stays unused.
	uses, usesAtGC uint64
	idleSweeps     int
}

// NewInternTable returns an empty table that also sweeps after garbage
// collections (sweepAfterGC), for as long as it is reachable. Objects
// decoded or interned through it share strings, and nothing mutable.
func NewInternTable() *InternTable {
	t := newBareInternTable()
	gcwork.AfterEachGC(t, (*InternTable).sweepAfterGC)
	return t
}

// NewSubObjectSharingTable returns an empty table, sweeping as
// NewInternTable's does, whose decoder also shares sub-objects and bytes
// between the objects it decodes, not only strings (shareSubObjects): for
// one informer deduplicating without a transform, whose decoded objects
// nobody else sees.
func NewSubObjectSharingTable() *InternTable {
	t := NewInternTable()
	t.shareSubObjects = true
	return t
}

// SharesSubObjects reports whether the table's decoder shares sub-objects
// and bytes between the objects it decodes (NewSubObjectSharingTable), not
// only strings.
func (t *InternTable) SharesSubObjects() bool {
	return t.shareSubObjects
}

// newBareInternTable returns an empty table that only sweeps on
// insertions: for tests that read its fields without holding mu.
func newBareInternTable() *InternTable {
	return &InternTable{seed: maphash.MakeSeed()}
}

// lock takes mu for one object's pass or decode, and counts the use.
func (t *InternTable) lock() {
	t.mu.Lock()
	t.uses++
}

// lockWith is lock for a decode of a record whose strings are in the form
// refs says (nil: the wire's). A decode of references uses refs' own set
// of raw sub-objects instead of t.raw (see refMode.raw).
func (t *InternTable) lockWith(refs *refMode) {
	t.lock()
	if refs != nil {
		t.refs = refs
		t.raw, refs.raw = refs.raw, t.raw
	}
}

// unlock ends what lockWith began.
func (t *InternTable) unlock() {
	if refs := t.refs; refs != nil {
		t.raw, refs.raw = refs.raw, t.raw
		t.refs = nil
	}
	t.mu.Unlock()
}

// sweepAfterGC sweeps the table if it was used since the previous garbage
// collection or the one before (afterEachGC calls it).
//
// Why: a set sweeps on insertions only (shareSet.put), so when churn stops
// it would keep the slots of the values that died since its last sweep
// (their weak pointers and encodings) and its map at the size the churn
// grew it to (a Go map never shrinks; sweep rebuilds it), until insertions
// resumed: about 1 MB after Job-like churn with Deduplicate
// (docs/benchmarks.md, the churn workload). A garbage collection is when
// values die, so it is when a sweep can drop them.
//
// It runs on the runtime's cleanup goroutine, which it must not hold up:
// it never waits for mu (a table whose mu is held is skipped until the
// next collection), and a sweep is O(slots). A collection comes after the
// program allocated about as much as its live heap, which holds the table,
// and marks the table itself, so a sweep per collection costs a fraction
// of what the collection does, and holds mu about as long as it takes
// to decode a few objects. A table unused for two collections is left
// alone: nothing died in it that the sweeps after its last use did not
// see, bar what the front cache held, which the first of them empties and
// the second drops.
func (t *InternTable) sweepAfterGC() {
	if !t.mu.TryLock() {
		return
	}
	defer t.mu.Unlock()
	switch {
	case t.uses != t.usesAtGC:
		t.usesAtGC, t.idleSweeps = t.uses, 1
	case t.idleSweeps > 0:
		t.idleSweeps--
	default:
		return
	}
	t.forget()
	t.strings.sweep()
	t.shared.sweep()
	t.raw.sweep()
	t.trees.sweep()
	for _, set := range t.typed {
		set.sweep()
	}
}

// str returns the shared copy of s, making a copy of s the shared one if
// there is none. The shared copy is always a fresh heap allocation, never
// s itself, so that the table never points into a larger buffer (or into
// read-only memory, where weak pointers cannot point) that s may share.
func (t *InternTable) str(s string) string {
	return t.intern(s, true, false)
}

// strFrom returns the string of b's bytes: the shared copy if the table
// holds one (without allocating), else a fresh copy, which becomes the
// shared one if the string was seen before (as in str). The result never
// points into b, so b may be a buffer reused afterwards: the protobuf
// decoder (decode_gen.go) takes every string of an object from it.
func (t *InternTable) strFrom(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return t.intern(unsafe.String(unsafe.SliceData(b), len(b)), false, false)
}

// repeatedFrom is strFrom for a string known to repeat (an entry of a
// snapshot's table of references, RefDecoder.addStrings): the fresh copy
// becomes the shared one even on the string's first sighting.
func (t *InternTable) repeatedFrom(b []byte) string {
	return t.intern(unsafe.String(unsafe.SliceData(b), len(b)), false, true)
}

// quantity decodes b, a resource.Quantity's encoding, into q as
// q.Unmarshal does (see refMode.quantity for records of references).
func (t *InternTable) quantity(q *resource.Quantity, b []byte) error {
	if t.refs != nil {
		return t.refs.quantity(q, b)
	}
	return q.Unmarshal(b)
}

// bytesFrom returns a slice of b's content that does not point into b,
// empty and not nil if b is empty (as gogo decodes an empty bytes field).
// If the table shares sub-objects, its bytes are shared as those of
// bytes' results are, with the same capacity rule; otherwise it is a copy
// of its own: the bytes of objects decoded with strings interned only are
// not shared, since bytes, unlike strings, can be written to.
func (t *InternTable) bytesFrom(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	if t.refs != nil {
		return t.refs.bytes(t, b)
	}
	if !t.shareSubObjects {
		return bytes.Clone(b)
	}
	s := t.strFrom(b)
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// intern is str, strFrom and repeatedFrom: it returns the shared copy of
// s, or s itself if keep and s is not to be shared, or else a fresh copy of
// s. A string is shared on its second sighting (seenBefore), or on its
// first if repeated.
func (t *InternTable) intern(s string, keep, repeated bool) string {
	if len(s) == 0 {
		return s
	}
	if t.refs != nil {
		// Checked here rather than in strFrom, which stays within the
		// inlining budget: only strFrom calls intern while refs is set.
		return t.refs.str(unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	var front *[frontWays]frontEntry
	var k uint64
	if len(s) <= frontMaxLen {
		if t.front == nil {
			t.front = new([frontSets][frontWays]frontEntry)
		}
		k = frontKey(s)
		front = &t.front[k>>(64-frontSetBits)]
		for i := range front {
			if e := &front[i]; e.k == k && e.s == s {
				return e.s
			}
		}
	}
	h := maphash.String(t.seed, s)
	if slot, p := t.strings.live(h); p != nil {
		c := unsafe.String(p, slot.n)
		if c != s {
			// another string with the same hash: leave s alone
			if keep {
				return s
			}
			return strings.Clone(s)
		}
		remember(front, k, c)
		return c
	}
	if !repeated && !t.seenBefore(h) {
		if keep {
			return s
		}
		return strings.Clone(s)
	}
	c := strings.Clone(s)
	if t.strings.put(h, shareSlot[byte]{p: weak.Make(unsafe.StringData(c)), n: len(c)}) {
		t.forget() // swept: let go of the strings the front cache pinned
	} else {
		remember(front, k, c)
	}
	return c
}

// frontKey returns the front cache's key for s, 1 to frontMaxLen bytes
// long: its length and three 8-byte words of it (first, middle, last), or
// all of it if shorter, mixed by a multiplication. Cheaper than maphash
// (which str needs only on a miss), and good enough: strings equal in
// those words and length only share a set of the cache.
func frontKey(s string) uint64 {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	n := len(b)
	var x uint64
	switch {
	case n >= 8:
		x = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[n-8:]), 21) ^
			bits.RotateLeft64(binary.LittleEndian.Uint64(b[n/2-4:]), 42)
	case n >= 4:
		x = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
	default:
		x = uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16
	}
	x ^= uint64(n) << 56
	x *= 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// forget empties the front cache.
func (t *InternTable) forget() {
	if t.front != nil {
		clear(t.front[:])
	}
}

// remember puts the string c with key k in the front cache's set front,
// if not nil, evicting the set's oldest.
func remember(front *[frontWays]frontEntry, k uint64, c string) {
	if front != nil {
		copy(front[1:], front[:])
		front[0] = frontEntry{k: k, s: c}
	}
}

// seenBefore reports whether a value with hash h was seen before, and
// records it if not.
func (t *InternTable) seenBefore(h uint64) bool {
	if t.seen == nil {
		t.seen = make([]uint64, seenSlots)
	}
	set := t.seen[h%(seenSlots/seenWays)*seenWays:][:seenWays]
	for _, seen := range set {
		if seen == h {
			return true
		}
	}
	copy(set[1:], set) // the oldest leaves
	set[0] = h
	return false
}

// bytes returns b or a slice of the same content whose bytes are shared
// with other objects. The result's capacity is its length, so appending to
// it copies; writing to it in place changes every object sharing it, which
// the no-mutation rule forbids and the mutation detector reports.
func (t *InternTable) bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	s := t.str(unsafe.String(unsafe.SliceData(b), len(b)))
	if unsafe.StringData(s) == unsafe.SliceData(b) {
		return b
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// set interns the string *p, writing to *p only if that changes where its
// bytes are.
func set[S ~string](t *InternTable, p *S) {
	if c := t.str(string(*p)); unsafe.StringData(c) != unsafe.StringData(string(*p)) {
		*p = S(c)
	}
}

// InternFunc interns the strings of one object in place.
type InternFunc[T metav1.Object] func(t *InternTable, obj T)

// InternFuncFor returns the intern function for T, chosen once: a walk of
// the fields worth interning for the core types that dominate caches
// (pods), the object's content for unstructured objects, and its metadata
// for every other type. Type-specific code is what keeps this free of
// reflection, which would cost more than the decoding it follows.
func InternFuncFor[T metav1.Object]() InternFunc[T] {
	var f any
	switch any(*new(T)).(type) {
	case *corev1.Pod:
		f = InternFunc[*corev1.Pod](func(t *InternTable, p *corev1.Pod) { t.pod(p) })
	case *unstructured.Unstructured:
		f = InternFunc[*unstructured.Unstructured](func(t *InternTable, u *unstructured.Unstructured) {
			t.content(u.Object)
		})
	case *metav1.PartialObjectMetadata:
		f = InternFunc[*metav1.PartialObjectMetadata](func(t *InternTable, m *metav1.PartialObjectMetadata) {
			t.objectMeta(&m.ObjectMeta)
		})
	default:
		if reflect.TypeFor[T]().Kind() == reflect.Interface {
			// T names many types (controller-runtime's client.Object):
			// choose by each object's own type.
			return func(t *InternTable, obj T) { internAny(t, obj) }
		}
		return func(t *InternTable, obj T) { t.meta(obj) }
	}
	return f.(InternFunc[T])
}

// internAny interns obj's strings as InternFuncFor's function for obj's
// own type does.
func internAny(t *InternTable, obj metav1.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		t.pod(o)
	case *unstructured.Unstructured:
		t.content(o.Object)
	case *metav1.PartialObjectMetadata:
		t.objectMeta(&o.ObjectMeta)
	default:
		t.meta(obj)
	}
}

// InternObject interns obj's strings with f under t's lock.
func InternObject[T metav1.Object](t *InternTable, f InternFunc[T], obj T) {
	t.lock()
	f(t, obj)
	t.mu.Unlock()
}

// meta interns the metadata of an object through its accessors.
func (t *InternTable) meta(obj metav1.Object) {
	if ns := obj.GetNamespace(); ns != "" {
		if c := t.str(ns); unsafe.StringData(c) != unsafe.StringData(ns) {
			obj.SetNamespace(c)
		}
	}
	if g := obj.GetGenerateName(); g != "" {
		if c := t.str(g); unsafe.StringData(c) != unsafe.StringData(g) {
			obj.SetGenerateName(c)
		}
	}
	if l := obj.GetLabels(); len(l) > 0 {
		shared := l
		if t.shareStringMap(&shared); mapPointer(shared) != mapPointer(l) {
			obj.SetLabels(shared)
		}
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		shared := a
		if t.shareStringMap(&shared); mapPointer(shared) != mapPointer(a) {
			obj.SetAnnotations(shared)
		}
	}
	t.ownerRefs(obj.GetOwnerReferences())
	t.managedFields(obj.GetManagedFields())
}

// objectMeta interns the fields of m that repeat across objects: not the
// name, UID or resource version.
func (t *InternTable) objectMeta(m *metav1.ObjectMeta) {
	set(t, &m.Namespace)
	set(t, &m.GenerateName)
	t.shareStringMap(&m.Labels)
	t.shareStringMap(&m.Annotations)
	if !shareSlice(t, &t.shared.ownerRefs, &m.OwnerReferences, encodeMessage[metav1.OwnerReference], nil) {
		t.ownerRefs(m.OwnerReferences)
	}
	shareStrings(t, &m.Finalizers)
	t.managedFields(m.ManagedFields)
}

// stringMap interns m's keys and values in place. Assigning to an existing
// key also stores the key given, so the map keeps the shared copy of it.
func (t *InternTable) stringMap(m map[string]string) {
	for k, v := range m {
		if ck, cv := t.str(k), t.str(v); !sameBytes(ck, k) || !sameBytes(cv, v) {
			m[ck] = cv
		}
	}
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b string) bool {
	return unsafe.StringData(a) == unsafe.StringData(b) && len(a) == len(b)
}

// strs interns the elements of s in place.
func (t *InternTable) strs(s []string) {
	for i := range s {
		set(t, &s[i])
	}
}

func (t *InternTable) ownerRefs(refs []metav1.OwnerReference) {
	for i := range refs {
		r := &refs[i]
		set(t, &r.APIVersion)
		set(t, &r.Kind)
		set(t, &r.Name)
		set(t, &r.UID)
	}
}

func (t *InternTable) managedFields(entries []metav1.ManagedFieldsEntry) {
	for i := range entries {
		e := &entries[i]
		set(t, &e.Manager)
		set(t, &e.APIVersion)
		set(t, &e.FieldsType)
		set(t, &e.Subresource)
		set(t, &e.Operation)
		if e.FieldsV1 != nil {
			if raw := t.bytes(e.FieldsV1.Raw); len(raw) > 0 && &raw[0] != &e.FieldsV1.Raw[0] {
				e.FieldsV1.Raw = raw
			}
		}
	}
}

// content interns the keys and string values of an unstructured object,
// except metadata's name, uid and resourceVersion.
func (t *InternTable) content(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case string:
			if ck, cv := t.str(k), t.str(v); !sameBytes(ck, k) || !sameBytes(cv, v) {
				m[ck] = cv
			}
			continue
		case map[string]any:
			if k == "metadata" {
				t.unstructuredMeta(v)
			} else {
				t.content(v)
			}
		case []any:
			t.contentSlice(v)
		}
		if ck := t.str(k); !sameBytes(ck, k) {
			m[ck] = v
		}
	}
}

// unstructuredMeta interns metadata, leaving the strings unique to one
// object alone.
func (t *InternTable) unstructuredMeta(m map[string]any) {
	for k, v := range m {
		switch k {
		case "name", "uid", "resourceVersion", "creationTimestamp":
			continue
		}
		switch v := v.(type) {
		case string:
			if cv := t.str(v); !sameBytes(cv, v) {
				m[k] = cv
			}
		case map[string]any:
			t.content(v)
		case []any:
			t.contentSlice(v)
		}
	}
}

func (t *InternTable) contentSlice(s []any) {
	for i, v := range s {
		switch v := v.(type) {
		case string:
			if cv := t.str(v); !sameBytes(cv, v) {
				s[i] = cv
			}
		case map[string]any:
			t.content(v)
		case []any:
			t.contentSlice(v)
		}
	}
}
