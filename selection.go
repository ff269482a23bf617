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
//
// The label index holds the keys selections have named (see labelKind): a
// selection naming a key for the first time first indexes it, in one pass
// over the store under the write lock.
func (s *Indexer[T]) selectLabels(namespace string, selector labels.Selector) []T {
	if selector == nil {
		selector = labels.Everything()
	}
	if labels.MatchesNothing(selector) {
		return nil
	}
	reqs, selectable := selector.Requirements()
	s.mu.RLock()
	for selectable && !s.c.indexes(reqs) {
		s.mu.RUnlock()
		s.indexLabelKeys(reqs)
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	c := s.c
	if !selectable {
		// The selector cannot describe itself: ask it about every object.
		return c.scan(namespace, selector)
	}
	src, ok := c.pickSource(namespace, selector, reqs)
	if !ok {
		return nil
	}
	var buf [4]labelFilter
	filters := buf[:0]
	if src.nsFilter >= 0 {
		filters = append(filters, labelFilter{kind: memberOf, col: &c.ns, one: src.nsFilter})
	}
	filters = c.appendFilters(filters, selector, reqs, src.answered)
	return collect(&src, c, filters)
}

// indexedOperator reports whether requirements with op are tested through
// the label index; the others (Gt, Lt) are tested on the labels.
func indexedOperator(op selection.Operator) bool {
	return op != selection.GreaterThan && op != selection.LessThan
}

// indexes reports whether the label index holds every key reqs tests
// through it.
func (c *contents[T]) indexes(reqs labels.Requirements) bool {
	for i := range reqs {
		if indexedOperator(reqs[i].Operator()) && c.labels[reqs[i].Key()] == nil {
			return false
		}
	}
	return true
}

// indexLabelKeys indexes the keys reqs tests through the label index that
// are not indexed yet.
func (s *Indexer[T]) indexLabelKeys(reqs labels.Requirements) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range reqs {
		if key := reqs[i].Key(); indexedOperator(reqs[i].Operator()) && s.c.labels[key] == nil {
			s.c.indexLabelKey(key)
			s.labelsIndexed.Store(true)
		}
	}
}

// candidates is where a Select finds its candidates: every entry, one
// namespace's list, or the lists of a label key for one value, several
// values or every value.
type candidates struct {
	base     *posting // nil: every entry, unless key is set
	key      *labelIndex
	value    int32   // the key's single list, when values is nil and !exists
	values   []int32 // the key's lists (in), distinct
	exists   bool    // every list of the key
	size     int     // number of candidates
	answered int     // the requirement the candidates satisfy, -1 if none
	nsFilter int32   // the namespace's list the candidates must be on, or -1
}

// pickSource chooses the smallest candidate lists for namespace and reqs.
// It returns false when the result is certainly empty.
func (c *contents[T]) pickSource(namespace string, sel labels.Selector, reqs labels.Requirements) (candidates, bool) {
	src := candidates{answered: -1, nsFilter: -1, size: len(c.objs)}
	nsList := int32(-1)
	if namespace != "" {
		l, ok := c.ns.byValue[namespace]
		if !ok {
			return src, false
		}
		nsList, src.base = l, &c.ns.lists[l]
		src.size = len(src.base.ids)
	}
	for j := range reqs {
		r := &reqs[j]
		cand := candidates{answered: j, nsFilter: -1}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if cand.key = c.labels[r.Key()]; cand.key == nil {
				return src, false
			}
			if v, ok := exactValue(sel, reqs, j); ok {
				l, ok := cand.key.byValue[v]
				if !ok {
					return src, false
				}
				cand.value = l
			} else {
				for _, v := range distinct(r.ValuesUnsorted()) {
					if l, ok := cand.key.byValue[v]; ok {
						cand.values = append(cand.values, l)
					}
				}
				if cand.values == nil {
					return src, false
				}
			}
		case selection.Exists:
			cand.exists = true
			if cand.key = c.labels[r.Key()]; cand.key == nil {
				return src, false
			}
		default:
			continue // not answerable from the index; tested on candidates
		}
		cand.size = cand.count()
		if cand.size == 0 {
			return src, false
		}
		if cand.size < src.size {
			src = cand
		}
	}
	if src.key != nil {
		src.nsFilter = nsList
	}
	return src, true
}

// count returns the number of candidates of a label candidates set.
func (src *candidates) count() int {
	switch {
	case src.exists:
		return src.key.count
	case src.values == nil:
		return len(src.key.lists[src.value].ids)
	}
	n := 0
	for _, l := range src.values {
		n += len(src.key.lists[l].ids)
	}
	return n
}

// collect returns the candidates of src that pass every filter.
func collect[T Object](src *candidates, c *contents[T], filters []labelFilter) []T {
	out := make([]T, 0, src.size)
	add := func(ids []int32) {
		if len(filters) == 0 {
			out = c.appendObjects(out, ids)
			return
		}
		for _, id := range ids {
			if passes(c, filters, id) {
				out = append(out, c.objs[id])
			}
		}
	}
	switch {
	case src.key == nil && src.base == nil:
		if len(filters) == 0 {
			out = append(out, c.objs...)
		} else {
			for id := range c.objs {
				if passes(c, filters, int32(id)) {
					out = append(out, c.objs[id])
				}
			}
		}
	case src.key == nil:
		add(src.base.ids)
	case src.exists:
		for l := range src.key.lists {
			add(src.key.lists[l].ids)
		}
	case src.values == nil:
		add(src.key.lists[src.value].ids)
	default:
		for _, l := range src.values {
			add(src.key.lists[l].ids)
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
// compare the list number each entry has in the key's (or the namespaces')
// column, beside the entry's neighbours', instead of looking labels up in
// the object's map.
type labelFilter struct {
	kind filterKind
	col  *listColumn // the label key's or the namespaces' lists; nil if no object has the key
	one  int32       // the list, when many is nil; -1 for none
	many []int32     // the lists
	req  *labels.Requirement
}

// appendFilters appends a filter for every requirement except skip. A
// negative requirement on a key or values no object has is always true and
// needs no filter.
func (c *contents[T]) appendFilters(filters []labelFilter, sel labels.Selector, reqs labels.Requirements, skip int) []labelFilter {
	for j := range reqs {
		if j == skip {
			continue
		}
		r := &reqs[j]
		f := labelFilter{req: r, one: -1}
		li := c.labels[r.Key()]
		if li != nil {
			f.col = &li.listColumn
		}
		switch op := r.Operator(); op {
		case selection.Equals, selection.DoubleEquals, selection.In, selection.NotEquals, selection.NotIn:
			f.kind = memberOf
			if op == selection.NotEquals || op == selection.NotIn {
				f.kind = notMemberOf
			}
			if li == nil || li.count == 0 { // only a negative requirement gets here
				if f.kind == notMemberOf {
					continue
				}
				f.col = nil
				break
			}
			if v, ok := exactValue(sel, reqs, j); ok && f.kind == memberOf {
				if l, ok := li.byValue[v]; ok {
					f.one = l
				}
			} else {
				for _, v := range distinct(r.ValuesUnsorted()) {
					if l, ok := li.byValue[v]; ok {
						f.many = append(f.many, l)
					}
				}
				if len(f.many) == 1 {
					f.one, f.many = f.many[0], nil
				}
			}
			if f.one < 0 && f.many == nil && f.kind == notMemberOf {
				continue
			}
		case selection.Exists:
			f.kind = hasKey
		case selection.DoesNotExist:
			if li == nil || li.count == 0 {
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

// passes reports whether entry id passes every filter.
func passes[T Object](c *contents[T], filters []labelFilter, id int32) bool {
	for i := range filters {
		f := &filters[i]
		var ok bool
		switch f.kind {
		case memberOf:
			ok = f.onList(id)
		case notMemberOf:
			ok = !f.onList(id)
		case hasKey:
			ok = f.col != nil && f.col.list[id] >= 0
		case lacksKey:
			ok = f.col.list[id] < 0
		default:
			ok = f.req.Matches(labels.Set(c.objs[id].GetLabels()))
		}
		if !ok {
			return false
		}
	}
	return true
}

// onList reports whether entry id is on the filter's lists. Label and
// namespace columns hold an entry on one list at most.
func (f *labelFilter) onList(id int32) bool {
	if f.col == nil {
		return false
	}
	l := f.col.list[id]
	return l >= 0 && (l == f.one || (f.many != nil && slices.Contains(f.many, l)))
}

// scan tests a selector that cannot list its requirements on every object
// of namespace.
func (c *contents[T]) scan(namespace string, sel labels.Selector) []T {
	var out []T
	test := func(obj T) {
		if sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	if namespace == "" {
		for _, obj := range c.objs {
			test(obj)
		}
		return out
	}
	p, ok := c.ns.lookup(namespace)
	if !ok {
		return nil
	}
	for _, id := range p.ids {
		test(c.objs[id])
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
