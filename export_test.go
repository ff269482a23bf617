package informer

import "k8s.io/apimachinery/pkg/runtime/schema"

// ResourceOf returns the resource a ListerWatcher made by NewRESTListerWatcher,
// NewMetadataListerWatcher or NewDynamicListerWatcher lists and watches.
func ResourceOf[T Object](lw ListerWatcher[T]) schema.GroupVersionResource {
	return lw.(interface {
		Resource() schema.GroupVersionResource
	}).Resource()
}

// Cache returns the informer's cache, for tests that inspect it whole.
func (i *Informer[T]) Cache() *Indexer[T] { return i.indexer }
