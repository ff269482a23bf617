package informer

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelKey holds the posting lists of one label key, one per value.
type labelKey[T Object] struct {
	key    string
	values map[string]*posting[T]
	count  int // objects carrying the key: the sum of the lists' lengths
}

// joinLabel files e under label key=value.
func (c *contents[T]) joinLabel(e *entry[T], key, value string) {
	lk := c.labels[key]
	if lk == nil {
		lk = &labelKey[T]{key: key, values: map[string]*posting[T]{}}
		c.labels[key] = lk
	}
	p := lk.values[value]
	if p == nil {
		p = &posting[T]{owner: ownerLabel, value: value, label: lk}
		lk.values[value] = p
	}
	c.join(e, p)
}

// relabel moves e from its indexed labels to newLabels. Updates usually
// carry the same labels (often the very same map), which costs one lookup
// per label.
func (c *contents[T]) relabel(e *entry[T], newLabels map[string]string) {
	old := e.labels
	e.labels = newLabels
	if sameLabels(old, newLabels) {
		return
	}
	for k, v := range old {
		if nv, ok := newLabels[k]; !ok || nv != v {
			c.leave(e, e.slotOf(c.labels[k].values[v]))
		}
	}
	for k, v := range newLabels {
		if ov, ok := old[k]; !ok || ov != v {
			c.joinLabel(e, k, v)
		}
	}
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// Select returns the objects in namespace ("" for every namespace) whose
// labels match selector, in no particular order, or nil if none match. A nil
// selector matches everything. The result is the caller's; the objects are
// shared and must not be modified.
//
// Requirements with the operators =, ==, in and exists are answered from the
// label index, and the namespace from a per-namespace list: Select walks only
// the smallest of these candidate lists and tests the other requirements
// (!=, notin, !key, gt, lt) on its objects. Its cost is proportional to that
// list, not to the size of the store. The result always equals testing
// selector.Matches on every object in namespace.
func (s *Indexer[T]) Select(namespace string, selector labels.Selector) []T {
	if selector == nil {
		selector = labels.Everything()
	}
	if labels.MatchesNothing(selector) {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	reqs, selectable := selector.Requirements()
	if !selectable {
		// The selector cannot describe itself: ask it about every object.
		return s.c.scan(namespace, selector)
	}
	var q query[T]
	if !s.c.plan(&q, namespace, selector, reqs) {
		return nil
	}
	return q.run(namespace, reqs)
}

// query is the plan of one Select: the disjoint candidate lists to walk and
// what remains to be tested on their objects.
type query[T Object] struct {
	lists    []*posting[T]
	listsBuf [4]*posting[T]
	size     int  // total length of lists
	answered int  // the requirement the lists answer, -1 if none
	checkNS  bool // the lists hold objects of other namespaces too
}

// plan picks the smallest candidate lists for namespace and reqs. It
// returns false when some requirement matches no stored object.
func (c *contents[T]) plan(q *query[T], namespace string, sel labels.Selector, reqs labels.Requirements) bool {
	q.lists = q.listsBuf[:0]
	q.answered = -1
	base := c.all
	if namespace != "" {
		if base = c.namespaces[namespace]; base == nil {
			return false
		}
	}
	q.size = len(base.items)
	var best *labelKey[T]
	var bestValues []string // nil: every value of best (exists)
	var bestOne [1]string   // bestValues' storage for a single value
	for j := range reqs {
		r := &reqs[j]
		var one [1]string
		var values []string
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if v, ok := exactValue(sel, reqs, j); ok {
				one[0] = v
				values = one[:]
			} else {
				values = distinct(r.ValuesUnsorted())
			}
		case selection.Exists:
		default:
			continue // not answerable from the index; tested on candidates
		}
		lk := c.labels[r.Key()]
		if lk == nil {
			return false
		}
		n := lk.count
		if values != nil {
			n = 0
			for _, v := range values {
				if p := lk.values[v]; p != nil {
					n += len(p.items)
				}
			}
		}
		if n == 0 {
			return false
		}
		if n < q.size {
			q.size, q.answered, best, bestValues = n, j, lk, values
			if len(values) == 1 {
				bestOne[0] = values[0]
				bestValues = bestOne[:]
			}
		}
	}
	switch {
	case best == nil:
		q.lists = append(q.lists, base)
	case bestValues == nil:
		for _, p := range best.values {
			q.lists = append(q.lists, p)
		}
		q.checkNS = namespace != ""
	default:
		for _, v := range bestValues {
			if p := best.values[v]; p != nil {
				q.lists = append(q.lists, p)
			}
		}
		q.checkNS = namespace != ""
	}
	return true
}

// run collects the objects of the planned lists that are in namespace and
// match every requirement the lists do not answer.
func (q *query[T]) run(namespace string, reqs labels.Requirements) []T {
	out := make([]T, 0, q.size)
	unanswered := len(reqs)
	if q.answered >= 0 {
		unanswered--
	}
	for _, p := range q.lists {
		if unanswered == 0 && !q.checkNS {
			out = p.appendObjects(out)
			continue
		}
		for i := range p.items {
			it := &p.items[i]
			if q.checkNS && it.e.name.Namespace != namespace {
				continue
			}
			if matchesExcept(reqs, q.answered, it.e.labels) {
				out = append(out, it.obj)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func matchesExcept(reqs labels.Requirements, skip int, objLabels map[string]string) bool {
	for j := range reqs {
		if j != skip && !reqs[j].Matches(labels.Set(objLabels)) {
			return false
		}
	}
	return true
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
