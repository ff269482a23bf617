package informer

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// labelKind is the index kind of one posting list per label key and value,
// which the Lister's label selectors read (selection.go). The Indexer keeps
// it always. It files from the prepared write's labels: the pairs the queue
// copied, or else the label map.
type labelKind[T Object] struct{}

var _ indexKind[*metav1.PartialObjectMetadata] = labelKind[*metav1.PartialObjectMetadata]{}

// labelKey holds the posting lists of one label key, one per value.
type labelKey[T Object] struct {
	key    string
	values map[string]*posting[T]
	count  int // objects carrying the key: the sum of the lists' lengths
}

// prepare needs nothing beyond the labels writePrep holds.
func (labelKind[T]) prepare(T, ObjectName, *prepValues) error { return nil }

// lists is one per label.
func (labelKind[T]) lists(p *writePrep, _ [][]string) int { return p.labelCount() }

// file puts e on the list of each of its labels.
func (labelKind[T]) file(c *contents[T], e *entry[T], p *writePrep, _ [][]string) {
	if p.pairs != nil {
		for _, lp := range p.pairs {
			c.joinLabel(e, lp.key, lp.value)
		}
		return
	}
	for k, v := range p.labels {
		c.joinLabel(e, k, v)
	}
}

// refile moves e to the label lists of the object p describes. It compares
// p's labels with the lists e is on, not with the previous object's map, so
// that the index stays exact even if that map was modified in place.
// Updates usually keep the labels, which costs one comparison per label.
func (labelKind[T]) refile(c *contents[T], e *entry[T], p *writePrep, _ [][]string) {
	e.labels = p.labels
	kept := 0
	for slot := 0; slot < len(e.members); {
		if m := &e.members[slot]; m.owner == ownerLabel {
			if p.hasLabel(m.p.label.key, m.p.value) {
				kept++
			} else {
				c.leave(e, slot)
				continue // slot now holds another membership
			}
		}
		slot++
	}
	if kept == p.labelCount() {
		return // every label is still filed
	}
	if p.pairs != nil {
		for _, lp := range p.pairs {
			if !c.filedUnder(e, lp.key, lp.value) {
				c.joinLabel(e, lp.key, lp.value)
			}
		}
		return
	}
	for k, v := range p.labels {
		if !c.filedUnder(e, k, v) {
			c.joinLabel(e, k, v)
		}
	}
}

// forget drops the emptied list of a label value, and the key once it has
// no value left.
func (labelKind[T]) forget(c *contents[T], l *posting[T]) {
	delete(l.label.values, l.value)
	if len(l.label.values) == 0 {
		delete(c.labels, l.label.key)
	}
}

// joinLabel files e under label key=value.
func (c *contents[T]) joinLabel(e *entry[T], key, value string) {
	lk := c.labels[key]
	if lk == nil {
		lk = &labelKey[T]{key: key, values: map[string]*posting[T]{}}
		c.labels[key] = lk
	}
	l := lk.values[value]
	if l == nil {
		l = &posting[T]{owner: ownerLabel, value: value, label: lk}
		lk.values[value] = l
	}
	c.join(e, l)
}

// filedUnder reports whether e is on the list of label key=value.
func (c *contents[T]) filedUnder(e *entry[T], key, value string) bool {
	lk := c.labels[key]
	if lk == nil {
		return false
	}
	l := lk.values[value]
	return l != nil && e.slotOf(l) >= 0
}
