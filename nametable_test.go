package informer

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tableSlab is the names of a slab's entries with their name table, as
// contents keeps them.
type tableSlab struct {
	t     nameTable
	names []ObjectName
}

func newTableSlab(size int) *tableSlab {
	return &tableSlab{t: newNameTable(size, maphash.MakeSeed())}
}

// add appends an entry named namespace/name to the slab and inserts it, as
// contents.put does, and returns its number.
func (s *tableSlab) add(namespace, name string) int32 {
	id := int32(len(s.names))
	s.names = append(s.names, ObjectName{Namespace: namespace, Name: name})
	s.t.insert(id, hashObjectName(s.t.seed, ObjectName{Namespace: namespace, Name: name}))
	return id
}

func (s *tableSlab) get(name ObjectName) int32 {
	return findName(&s.t, s.names, hashObjectName(s.t.seed, name), name)
}

func (s *tableSlab) delete(id int32) {
	s.t.delete(id, slotHash(hashObjectName(s.t.seed, s.names[id])))
}

// check verifies that the table counts its entries, stays at most 3/4
// full and finds every entry from its home slot.
func (s *tableSlab) check() error {
	n := 0
	for _, sl := range s.t.slots {
		if sl.id == 0 {
			continue
		}
		n++
		name := s.names[sl.id-1]
		if sl.hash != slotHash(hashObjectName(s.t.seed, name)) {
			return fmt.Errorf("entry %s has a stale hash", name)
		}
		if s.get(name) != int32(sl.id-1) {
			return fmt.Errorf("entry %s is unreachable", name)
		}
	}
	if n != s.t.count || n*4 > len(s.t.slots)*3 {
		return fmt.Errorf("%d entries counted %d in %d slots", n, s.t.count, len(s.t.slots))
	}
	return nil
}

func TestNameTableInsertGetDelete(t *testing.T) {
	s := newTableSlab(0)
	var names []ObjectName
	for i := range 500 {
		// Cluster-scoped names that look like namespaced keys (invalid in
		// Kubernetes) are stored under their own name all the same.
		name := ObjectName{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("n-%d", i)}
		if i%5 == 0 {
			name = ObjectName{Name: fmt.Sprintf("ns-%d/c-%d", i%7, i)}
		}
		names = append(names, name)
		s.add(name.Namespace, name.Name)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if got := s.get(name); got != int32(i) {
			t.Fatalf("get(%s) = %d", name, got)
		}
		if got := findKey(&s.t, s.names, name.String()); got != int32(i) {
			t.Fatalf("findKey(%s) = %d", name, got)
		}
	}
	for i := range names {
		if i%30 != 0 {
			s.delete(int32(i))
		}
	}
	var found []string
	for i, name := range names {
		if s.get(name) >= 0 {
			found = append(found, fmt.Sprint(i))
		}
	}
	var want []string
	for i := 0; i < len(names); i += 30 {
		want = append(want, fmt.Sprint(i))
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("entries left (-want +got):\n%s", diff)
	}
	if len(s.t.slots) > 128 {
		t.Errorf("%d slots kept for %d entries", len(s.t.slots), s.t.count)
	}
}

func TestNameTableRenumber(t *testing.T) {
	s := newTableSlab(0)
	for i := range 100 {
		s.add("ns", fmt.Sprintf("p%d", i))
	}
	// Move the last entry into the place of the first, as removing the
	// first from a slab does.
	s.delete(0)
	s.t.renumber(99, 0, slotHash(hashObjectName(s.t.seed, s.names[99])))
	s.names[0], s.names = s.names[99], s.names[:99]
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if got := s.get(ObjectName{Namespace: "ns", Name: "p99"}); got != 0 {
		t.Errorf("p99 found as %d, want 0", got)
	}
	if got := s.get(ObjectName{Namespace: "ns", Name: "p0"}); got != -1 {
		t.Errorf("p0 found as %d after its removal", got)
	}
}

func TestNameTableKeysAreComparedWhole(t *testing.T) {
	s := newTableSlab(0)
	cluster, namespaced := s.add("", "a"), s.add("ns", "a")
	for key, want := range map[string]int32{
		"a": cluster, "ns/a": namespaced, "/a": -1, "ns/": -1, "ns": -1, "ns/a/": -1, "nsx/a": -1, "": -1,
	} {
		if got := findKey(&s.t, s.names, key); got != want {
			t.Errorf("findKey(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestNameTableLongNames(t *testing.T) {
	s := newTableSlab(4)
	name := ObjectName{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("x", 253)}
	id := s.add(name.Namespace, name.Name)
	if s.get(name) != id || findKey(&s.t, s.names, name.String()) != id {
		t.Error("long name not found")
	}
	s.delete(id)
	if s.get(name) != -1 || s.t.count != 0 {
		t.Error("long name not deleted")
	}
}
