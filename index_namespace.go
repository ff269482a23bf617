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

// file puts entry id on its namespace's list, created if needed.
func (namespaceKind[T]) file(c *contents[T], id int32, p *writePrep, _ [][]string) {
	c.ns.join(id, c.ns.listFor(p.name.Namespace))
}

// refile changes nothing: the entry's namespace is that of its name.
func (namespaceKind[T]) refile(*contents[T], int32, *writePrep, [][]string) {}
