package informer

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// selectLabels returns the objects in namespace ("" for every namespace) whose
// labels match selector, in no particular order, or nil if none match. A nil
// selector matches everything. The result is the caller's; the objects are
// shared and must not be modified.
//
// Requirements with the operators =, ==, in and exists are answered from the
// label index, and the namespace from a per-namespace list: it walks only
// the smallest of these candidate lists and tests the namespace and the other
// requirements on its objects, through the lists each object is on rather
// than its labels. Its cost is proportional to that list, not to the size of
// the store. The result always equals testing selector.Matches on every
// object in namespace.
func (s *Indexer[T]) selectLabels(namespace string, selector labels.Selector) []T {
	if selector == nil {
		selector = labels.Everything()
	}
	if labels.MatchesNothing(selector) {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	reqs, selectable := selector.Requirements()
	if !selectable {
		// The selector cannot describe itself: ask it about every object.
		return c.scan(namespace, selector)
	}
	src, ok := c.pickSource(namespace, selector, reqs)
	if !ok {
		return nil
	}
	var buf [4]labelFilter[T]
	filters := buf[:0]
	if src.nsFilter != nil {
		filters = append(filters, labelFilter[T]{kind: memberOf, one: src.nsFilter})
	}
	filters = c.appendFilters(filters, selector, reqs, src.answered)
	return src.collect(filters)
}

// candidates is where a Select finds its candidates: one list (base), or the
// lists of a label key for one value, several values or every value.
type candidates[T Object] struct {
	base     *posting[T]
	key      *labelKey[T]
	value    string   // the key's single value, when values is nil and !exists
	values   []string // the key's values (in), distinct
	exists   bool     // every value of the key
	size     int      // number of candidates
	answered int      // the requirement the candidates satisfy, -1 if none
	nsFilter *posting[T]
}

// pickSource chooses the smallest candidate lists for namespace and reqs.
// It returns false when the result is certainly empty.
func (c *contents[T]) pickSource(namespace string, sel labels.Selector, reqs labels.Requirements) (candidates[T], bool) {
	src := candidates[T]{base: c.all, answered: -1}
	if namespace != "" {
		if src.base = c.namespaces[namespace]; src.base == nil {
			return src, false
		}
	}
	src.size = len(src.base.items)
	for j := range reqs {
		r := &reqs[j]
		cand := candidates[T]{answered: j}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if v, ok := exactValue(sel, reqs, j); ok {
				cand.value = v
			} else {
				cand.values = distinct(r.ValuesUnsorted())
			}
		case selection.Exists:
			cand.exists = true
		default:
			continue // not answerable from the index; tested on candidates
		}
		if cand.key = c.labels[r.Key()]; cand.key == nil {
			return src, false
		}
		cand.size = cand.count()
		if cand.size == 0 {
			return src, false
		}
		if cand.size < src.size {
			src = cand
		}
	}
	if src.key != nil && namespace != "" {
		src.nsFilter = c.namespaces[namespace]
	}
	return src, true
}

// count returns the number of candidates of a label candidates set.
func (src *candidates[T]) count() int {
	switch {
	case src.exists:
		return src.key.count
	case src.values == nil:
		if p := src.key.values[src.value]; p != nil {
			return len(p.items)
		}
		return 0
	}
	n := 0
	for _, v := range src.values {
		if p := src.key.values[v]; p != nil {
			n += len(p.items)
		}
	}
	return n
}

// collect returns the candidates of src that pass every filter.
func (src *candidates[T]) collect(filters []labelFilter[T]) []T {
	out := make([]T, 0, src.size)
	add := func(p *posting[T]) {
		if p == nil {
			return
		}
		if len(filters) == 0 {
			out = p.appendObjects(out)
			return
		}
		for i := range p.items {
			if passes(filters, p.items[i].e) {
				out = append(out, p.items[i].obj)
			}
		}
	}
	switch {
	case src.key == nil:
		add(src.base)
	case src.exists:
		for _, p := range src.key.values {
			add(p)
		}
	case src.values == nil:
		add(src.key.values[src.value])
	default:
		for _, v := range src.values {
			add(src.key.values[v])
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// filterKind says how a labelFilter tests an entry.
type filterKind uint8

const (
	memberOf    filterKind = iota // on one of the lists
	notMemberOf                   // on none of the lists
	hasKey                        // on a list of the label key
	lacksKey                      // on no list of the label key
	matches                       // the requirement matches the labels
)

// labelFilter is one test a candidate must pass. Tests against lists
// compare pointers among the entry's memberships, which live in the entry
// itself, instead of looking labels up in the object's map.
type labelFilter[T Object] struct {
	kind filterKind
	one  *posting[T]   // the list, when many is nil
	many []*posting[T] // the lists
	key  *labelKey[T]
	req  *labels.Requirement
}

// appendFilters appends a filter for every requirement except skip. A
// negative requirement on a key or values no object has is always true and
// needs no filter.
func (c *contents[T]) appendFilters(filters []labelFilter[T], sel labels.Selector, reqs labels.Requirements, skip int) []labelFilter[T] {
	for j := range reqs {
		if j == skip {
			continue
		}
		r := &reqs[j]
		lk := c.labels[r.Key()]
		f := labelFilter[T]{key: lk, req: r}
		switch op := r.Operator(); op {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.NotEquals, selection.NotIn:
			f.kind = memberOf
			if op == selection.NotEquals || op == selection.NotIn {
				f.kind = notMemberOf
			}
			if lk == nil { // only a negative requirement gets here
				continue
			}
			if v, ok := exactValue(sel, reqs, j); ok && f.kind == memberOf {
				f.one = lk.values[v]
			} else {
				for _, v := range distinct(r.ValuesUnsorted()) {
					if p := lk.values[v]; p != nil {
						f.many = append(f.many, p)
					}
				}
				if len(f.many) == 1 {
					f.one, f.many = f.many[0], nil
				}
			}
			if f.one == nil && f.many == nil && f.kind == notMemberOf {
				continue
			}
		case selection.Exists:
			f.kind = hasKey
		case selection.DoesNotExist:
			if lk == nil {
				continue
			}
			f.kind = lacksKey
		default:
			f.kind = matches
		}
		filters = append(filters, f)
	}
	return filters
}

// passes reports whether e passes every filter.
func passes[T Object](filters []labelFilter[T], e *entry[T]) bool {
	for i := range filters {
		f := &filters[i]
		var ok bool
		switch f.kind {
		case memberOf:
			ok = f.onList(e)
		case notMemberOf:
			ok = !f.onList(e)
		case hasKey:
			ok = f.key != nil && hasLabelKey(e, f.key)
		case lacksKey:
			ok = !hasLabelKey(e, f.key)
		default:
			ok = f.req.Matches(labels.Set(e.labels))
		}
		if !ok {
			return false
		}
	}
	return true
}

func (f *labelFilter[T]) onList(e *entry[T]) bool {
	for i := range e.members {
		p := e.members[i].p
		if p == f.one || (f.many != nil && slices.Contains(f.many, p)) {
			return true
		}
	}
	return false
}

func hasLabelKey[T Object](e *entry[T], lk *labelKey[T]) bool {
	for i := range e.members {
		if m := &e.members[i]; m.owner == ownerLabel && m.p.label == lk {
			return true
		}
	}
	return false
}

// scan tests a selector that cannot list its requirements on every object
// of namespace.
func (c *contents[T]) scan(namespace string, sel labels.Selector) []T {
	p := c.all
	if namespace != "" {
		if p = c.namespaces[namespace]; p == nil {
			return nil
		}
	}
	var out []T
	for i := range p.items {
		if sel.Matches(labels.Set(p.items[i].e.labels)) {
			out = append(out, p.items[i].obj)
		}
	}
	return out
}

// exactValue returns the value the j-th requirement demands without
// allocating, when it is the selector's first requirement on its key and
// has a single value: that is exactly what RequiresExactMatch reports.
func exactValue(sel labels.Selector, reqs labels.Requirements, j int) (string, bool) {
	key := reqs[j].Key()
	for i := range j {
		if reqs[i].Key() == key {
			return "", false
		}
	}
	return sel.RequiresExactMatch(key)
}

// distinct removes repeated values in place: a requirement built without
// validation may repeat a value, which would list its objects twice.
func distinct(values []string) []string {
	out := values[:0]
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
