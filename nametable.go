package informer

import "hash/maphash"

// nameTable is a hash table from ObjectName to the number of an entry (its
// position in the contents' slab, contents.go): the Indexer's primary map.
// A Go map keyed by the two-string ObjectName hashes both strings
// separately and compares keys through a generic function, which makes a
// lookup about 2.5 times slower than in client-go's map keyed by the
// "namespace/name" string. nameTable instead hashes the bytes of the cache
// key once: GetByKey hashes its argument as it is, getByName hashes the
// same bytes without building a string. It stores no key: a slot is 8
// bytes, 32 bits of the hash and the entry's number, and a hit is
// confirmed against the entry's name, which the contents keep beside the
// slab (contents.entryNames). It uses linear probing with backward-shift
// deletion, so no tombstones accumulate. It is not safe for concurrent
// use; the Indexer's lock guards it.
type nameTable struct {
	seed  maphash.Seed
	slots []nameSlot // length a power of two, at most 3/4 full
	count int
}

// nameSlot is one slot of a nameTable.
type nameSlot struct {
	hash uint32 // the name's hash, shortened (slotHash)
	id   uint32 // the entry's number plus one; 0: empty slot
}

const minNameSlots = 8

// newNameTable returns a table sized for size entries. Tables that share a
// seed hash names alike, so an entry's hash is valid in each of them.
func newNameTable(size int, seed maphash.Seed) nameTable {
	return nameTable{seed: seed, slots: make([]nameSlot, slotsFor(size))}
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

// slotHash is the part of a name's hash a slot keeps: it places the slot
// (its low bits) and tells most other names apart without reading their
// objects.
func slotHash(hash uint64) uint32 { return uint32(hash) }

// findName returns the number of the entry stored under name, whose hash
// is hash, or -1; names[id] is the name of entry id (contents.entryNames).
func findName(t *nameTable, names []ObjectName, hash uint64, name ObjectName) int32 {
	h := slotHash(hash)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.id == 0 {
			return -1
		}
		if s.hash == h {
			if names[s.id-1] == name {
				return int32(s.id - 1)
			}
		}
	}
}

// findKey returns the number of the entry whose cache key is key, or -1;
// names[id] is the name of entry id. The key is hashed and compared as it
// is, without being split: parsing it would cost as much as a sixth of a
// lookup.
func findKey(t *nameTable, names []ObjectName, key string) int32 {
	h := slotHash(maphash.String(t.seed, key))
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.id == 0 {
			return -1
		}
		if s.hash == h && isKeyOf(key, names[s.id-1]) {
			return int32(s.id - 1)
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

// insert adds the entry numbered id, whose name must not be in the table
// and whose name hashes to hash.
func (t *nameTable) insert(id int32, hash uint64) {
	if (t.count+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	t.place(nameSlot{hash: slotHash(hash), id: uint32(id) + 1})
	t.count++
}

func (t *nameTable) place(s nameSlot) {
	mask := uint32(len(t.slots) - 1)
	i := s.hash & mask
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// slotOf returns the position of the slot of the entry numbered id, whose
// slot hash is h, which must be in the table.
func (t *nameTable) slotOf(id int32, h uint32) uint32 {
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].id != uint32(id)+1 {
		i = (i + 1) & mask
	}
	return i
}

// renumber records that the entry numbered from, whose slot hash is h, is
// now numbered to.
func (t *nameTable) renumber(from, to int32, h uint32) {
	t.slots[t.slotOf(from, h)].id = uint32(to) + 1
}

// delete removes the entry numbered id, whose slot hash is h, which must
// be in the table.
func (t *nameTable) delete(id int32, h uint32) {
	mask := uint32(len(t.slots) - 1)
	i := t.slotOf(id, h)
	// Shift back the following slots that probed past i, so that every
	// entry stays reachable from its home slot without tombstones.
	for j := (i + 1) & mask; t.slots[j].id != 0; j = (j + 1) & mask {
		home := t.slots[j].hash & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nameSlot{}
	t.count--
	if len(t.slots) > minNameSlots && t.count*8 < len(t.slots) {
		t.resize(slotsFor(t.count * 2))
	}
}

func (t *nameTable) resize(slots int) {
	old := t.slots
	t.slots = make([]nameSlot, slots)
	for _, s := range old {
		if s.id != 0 {
			t.place(s)
		}
	}
}
