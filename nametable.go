package informer

import "hash/maphash"

// nameTable is a hash table from ObjectName to entry: the Indexer's primary
// map. A Go map keyed by the two-string ObjectName hashes both strings
// separately and compares keys through a generic function, which makes a
// lookup about 2.5 times slower than in client-go's map keyed by the
// "namespace/name" string. nameTable instead hashes the bytes of the cache
// key once: GetByKey hashes its argument as it is, getByName hashes the
// same bytes without building a string. It stores no key string; it compares
// against the entry's own name. It uses linear probing with backward-shift
// deletion, so no tombstones accumulate. It is not safe for concurrent use;
// the Indexer's lock guards it.
type nameTable[T Object] struct {
	seed  maphash.Seed
	slots []nameSlot[T] // length a power of two, at most 3/4 full
	count int
}

type nameSlot[T Object] struct {
	hash uint64
	e    *entry[T] // nil: empty slot
}

const minNameSlots = 8

// newNameTable returns a table sized for size entries. Tables that share a
// seed hash names alike, so an entry's hash is valid in each of them.
func newNameTable[T Object](size int, seed maphash.Seed) nameTable[T] {
	return nameTable[T]{seed: seed, slots: make([]nameSlot[T], slotsFor(size))}
}

// slotsFor returns the table length that holds n entries at most 3/4 full.
func slotsFor(n int) int {
	slots := minNameSlots
	for slots*3 < n*4 {
		slots *= 2
	}
	return slots
}

// hashObjectName hashes name's cache key with seed, without building the
// key on the heap.
func hashObjectName(seed maphash.Seed, name ObjectName) uint64 {
	if name.Namespace == "" {
		return maphash.String(seed, name.Name)
	}
	var buf [128]byte
	if len(name.Namespace)+1+len(name.Name) <= len(buf) {
		key := append(append(append(buf[:0], name.Namespace...), '/'), name.Name...)
		return maphash.Bytes(seed, key)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(name.Namespace)
	h.WriteByte('/')
	h.WriteString(name.Name)
	return h.Sum64()
}

// get returns the entry stored under name, or nil.
func (t *nameTable[T]) get(name ObjectName) *entry[T] {
	return t.find(hashObjectName(t.seed, name), name)
}

// getKey returns the entry whose cache key is key. The key is hashed and
// compared as it is, without being split: parsing it would cost as much as
// a sixth of a lookup.
func (t *nameTable[T]) getKey(key string) *entry[T] {
	hash := maphash.String(t.seed, key)
	mask := uint64(len(t.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.hash == hash && isKeyOf(key, s.e.name) {
			return s.e
		}
	}
}

// isKeyOf reports whether key is name's cache key, name.String().
func isKeyOf(key string, name ObjectName) bool {
	ns := len(name.Namespace)
	if ns == 0 {
		return key == name.Name
	}
	return len(key) == ns+1+len(name.Name) && key[ns] == '/' &&
		key[:ns] == name.Namespace && key[ns+1:] == name.Name
}

func (t *nameTable[T]) find(hash uint64, name ObjectName) *entry[T] {
	mask := uint64(len(t.slots) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.hash == hash && s.e.name == name {
			return s.e
		}
	}
}

// insert adds e, whose name must not be in the table and whose hash must
// be hashObjectName(t.seed, e.name).
func (t *nameTable[T]) insert(e *entry[T]) {
	if (t.count+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	t.place(nameSlot[T]{hash: e.hash, e: e})
	t.count++
}

func (t *nameTable[T]) place(s nameSlot[T]) {
	mask := uint64(len(t.slots) - 1)
	i := s.hash & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// delete removes e, which must be in the table.
func (t *nameTable[T]) delete(e *entry[T]) {
	mask := uint64(len(t.slots) - 1)
	i := e.hash & mask
	for t.slots[i].e != e {
		i = (i + 1) & mask
	}
	// Shift back the following slots that probed past i, so that every
	// entry stays reachable from its home slot without tombstones.
	for j := (i + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		home := t.slots[j].hash & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nameSlot[T]{}
	t.count--
	if len(t.slots) > minNameSlots && t.count*8 < len(t.slots) {
		t.resize(slotsFor(t.count * 2))
	}
}

func (t *nameTable[T]) resize(slots int) {
	old := t.slots
	t.slots = make([]nameSlot[T], slots)
	for _, s := range old {
		if s.e != nil {
			t.place(s)
		}
	}
}
