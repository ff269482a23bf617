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
	// value is the position of its values in writePrep.values and of its
	// lists in contents.funcs.
	value int
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

// file puts entry id on the list of each of its values.
func (k *funcKind[T]) file(c *contents[T], id int32, _ *writePrep, values [][]string) {
	k.join(c, id, values[k.value])
}

// join files entry id under each distinct value of values.
func (k *funcKind[T]) join(c *contents[T], id int32, values []string) {
	col := c.funcs[k.value]
	for j, v := range values {
		if !slices.Contains(values[:j], v) {
			col.join(id, col.listFor(v))
		}
	}
}

// refile moves entry id to its new values, touching only the values that
// changed.
func (k *funcKind[T]) refile(c *contents[T], id int32, _ *writePrep, all [][]string) {
	values := all[k.value]
	col := c.funcs[k.value]
	if l := col.list[id]; l >= 0 && len(values) == 1 && col.extra[id] == nil && col.lists[l].value == values[0] {
		return // the common case: the one value did not change
	}
	// Leave the lists of the values gone, then join those new.
	for l := col.list[id]; l >= 0; {
		if slices.Contains(values, col.lists[l].value) {
			break
		}
		col.leave(id, l)
		l = col.list[id]
	}
	// Backwards, because leaving an extra list moves the last extra
	// membership into the one left and drops the last: the memberships
	// before the current one stay where they are, and the one moved was
	// visited already.
	for i := len(col.extra[id]) - 1; i >= 0; i-- {
		if m := col.extra[id][i]; !slices.Contains(values, col.lists[m.list].value) {
			col.leave(id, m.list)
		}
	}
	for j, v := range values {
		if slices.Contains(values[:j], v) {
			continue
		}
		if l, ok := col.byValue[v]; ok && col.on(id, l) {
			continue
		}
		col.join(id, col.listFor(v))
	}
}
