package informer

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// funcKind is the index kind of one user index whose function is not
// MetaNamespaceIndexFunc: one posting list per value the function returns.
// The function runs in prepare, without any lock; filing reads the values
// from the prepared write.
type funcKind[T Object] struct {
	name string
	fn   IndexFunc[T]
	// owner is the kind's position in its plan and the owner of its lists;
	// bucket is its user index's position (contents.buckets[bucket]); value
	// is the position of its values in writePrep.values.
	owner  int32
	bucket int
	value  int
}

var _ indexKind[*metav1.PartialObjectMetadata] = (*funcKind[*metav1.PartialObjectMetadata])(nil)

// prepare calls the index function and adds its values to v.
func (k *funcKind[T]) prepare(obj T, name ObjectName, v *prepValues) error {
	values, err := callIndexFunc(k.name, k.fn, obj, name)
	if err != nil {
		return err
	}
	v.add(values)
	return nil
}

// lists is the number of values, duplicates included.
func (k *funcKind[T]) lists(_ *writePrep, values [][]string) int { return len(values[k.value]) }

// file puts e on the list of each of its values.
func (k *funcKind[T]) file(c *contents[T], e *entry[T], _ *writePrep, values [][]string) {
	k.join(c, e, values[k.value])
}

// join files e under each distinct value of values.
func (k *funcKind[T]) join(c *contents[T], e *entry[T], values []string) {
	buckets := c.buckets[k.bucket]
	for j, v := range values {
		if slices.Contains(values[:j], v) {
			continue
		}
		l := buckets[v]
		if l == nil {
			l = &posting[T]{owner: k.owner, value: v}
			buckets[v] = l
		}
		c.join(e, l)
	}
}

// refile moves e to its new values, touching only the values that changed.
func (k *funcKind[T]) refile(c *contents[T], e *entry[T], _ *writePrep, all [][]string) {
	values := all[k.value]
	kept := 0
	for slot := 0; slot < len(e.members); {
		m := e.members[slot]
		if m.owner == k.owner {
			if slices.Contains(values, m.p.value) {
				kept++
			} else {
				c.leave(e, slot)
				continue // slot now holds another membership
			}
		}
		slot++
	}
	if kept == len(values) {
		return // the common case: the values did not change
	}
	buckets := c.buckets[k.bucket]
	for j, v := range values {
		if slices.Contains(values[:j], v) {
			continue
		}
		l := buckets[v]
		if l != nil && e.slotOf(l) >= 0 {
			continue
		}
		if l == nil {
			l = &posting[T]{owner: k.owner, value: v}
			buckets[v] = l
		}
		c.join(e, l)
	}
}

// forget drops the emptied list of a value.
func (k *funcKind[T]) forget(c *contents[T], l *posting[T]) {
	delete(c.buckets[k.bucket], l.value)
}
