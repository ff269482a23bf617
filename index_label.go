package informer

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// labelKind is the index kind of one posting list per label key and value,
// which the Lister's label selectors read (selection.go). It indexes only
// the keys some selection has named (contents.labelKeys): the first
// selection on a key indexes it, for good (indexLabelKeys), and until then
// a key costs nothing, which keeps the store of a kind nobody selects by
// label as small as client-go's. It files from the prepared write's
// labels: the pairs the queue copied, or else the label map.
type labelKind[T Object] struct{}

var _ indexKind[*metav1.PartialObjectMetadata] = labelKind[*metav1.PartialObjectMetadata]{}

// prepare needs nothing beyond the labels writePrep holds.
func (labelKind[T]) prepare(T, ObjectName, *prepValues) error { return nil }

// file puts entry id on the list of each of its labels whose key is
// indexed.
func (labelKind[T]) file(c *contents[T], id int32, p *writePrep, _ [][]string) {
	for _, li := range c.labelKeys {
		if v, ok := p.label(li.key); ok {
			li.join(id, li.listFor(v))
		}
	}
}

// refile moves entry id to the lists of the labels of the object p
// describes. It compares p's labels with the lists the entry is on, not
// with the previous object's map, so that the index stays exact even if
// that map was modified in place. Updates usually keep the labels, which
// costs one comparison per indexed key.
func (labelKind[T]) refile(c *contents[T], id int32, p *writePrep, _ [][]string) {
	for _, li := range c.labelKeys {
		v, ok := p.label(li.key)
		l := li.list[id]
		if l >= 0 {
			if ok && li.lists[l].value == v {
				continue
			}
			li.leave(id, l)
		}
		if ok {
			li.join(id, li.listFor(v))
		}
	}
}

// indexLabelKey indexes the label key, which must not be indexed yet: one
// pass over every stored object.
func (c *contents[T]) indexLabelKey(key string) *labelIndex {
	li := &labelIndex{key: key, listColumn: newListColumn(len(c.objs), cap(c.objs))}
	for id, obj := range c.objs {
		if v, ok := obj.GetLabels()[key]; ok {
			li.join(int32(id), li.listFor(v))
		}
	}
	c.labels[key] = li
	c.labelKeys = append(c.labelKeys, li)
	return li
}

// labelKeyNames returns the indexed label keys.
func (c *contents[T]) labelKeyNames() []string {
	keys := make([]string, len(c.labelKeys))
	for i, li := range c.labelKeys {
		keys[i] = li.key
	}
	return keys
}
