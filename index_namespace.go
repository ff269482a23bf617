package informer

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// namespaceKind is the index kind of one posting list per namespace: the
// Indexer keeps it always, for the Lister's namespaced queries and label
// selections, and it serves every user index whose function is
// MetaNamespaceIndexFunc (see newUserIndex), whose values are then neither
// computed nor filed separately. An object's namespace is part of its name,
// so a stored entry never changes lists.
type namespaceKind[T Object] struct{}

var _ indexKind[*metav1.PartialObjectMetadata] = namespaceKind[*metav1.PartialObjectMetadata]{}

// prepare needs nothing beyond the name writePrep holds.
func (namespaceKind[T]) prepare(T, ObjectName, *prepValues) error { return nil }

// lists is always one: the object's namespace ("" when cluster-scoped).
func (namespaceKind[T]) lists(*writePrep, [][]string) int { return 1 }

// file puts e on its namespace's list, created if needed.
func (namespaceKind[T]) file(c *contents[T], e *entry[T], p *writePrep, _ [][]string) {
	ns := c.namespaces[p.name.Namespace]
	if ns == nil {
		ns = &posting[T]{owner: ownerNamespace, value: p.name.Namespace}
		c.namespaces[p.name.Namespace] = ns
	}
	c.join(e, ns)
}

// refile changes nothing: the entry's namespace is that of its name.
func (namespaceKind[T]) refile(*contents[T], *entry[T], *writePrep, [][]string) {}

// forget drops the emptied list of a namespace.
func (namespaceKind[T]) forget(c *contents[T], l *posting[T]) {
	delete(c.namespaces, l.value)
}
