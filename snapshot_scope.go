package informer

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A snapshot's scope (snapshotScope, in the file's header: snapshot.go):
// what must be equal for two informers' caches to hold the same objects,
// built in one place (newSnapshotScope) from the informer's configuration
// and what its ListerWatcher lists and from where (listedScope, from the
// describedListerWatcher contract).

// newSnapshotScope builds the snapshot scope of an informer of the
// resolved configuration cfg, whose objects are of itemType (see
// snapshotItemType), over lw: the one place a scope is built. What lw
// lists (resource, namespace, selectors, dropped fields, server) comes
// from lw itself if it describes itself (describedListerWatcher), so that
// it is right however the informer was made; otherwise the resource is
// cfg's and the rest is for Snapshot.ScopeID to name. It also returns
// what lw lists, with the resource so resolved.
func newSnapshotScope[T Object](cfg config[T], itemType reflect.Type, lw ListerWatcher[T]) (snapshotScope, listedScope) {
	scope := snapshotScope{Type: snapshotTypeName(itemType), Name: cfg.Name, TransformID: cfg.Snapshot.TransformID, ScopeID: cfg.Snapshot.ScopeID}
	var listed listedScope
	if d, ok := describe(lw); ok {
		listed = d.listed
		scope.Namespace, scope.LabelSelector, scope.FieldSelector = listed.namespace, listed.labelSelector, listed.fieldSelector
		scope.DropFields, scope.Server = listed.dropFields, listed.server
	}
	if listed.resource.Empty() {
		listed.resource = cfg.Resource
	}
	scope.Resource = listed.resource.String()
	if cfg.Shard != nil {
		scope.Shard = fmt.Sprintf("%s %d/%d", cfg.Shard.key(), cfg.Shard.Index, cfg.Shard.Count)
	}
	return scope, listed
}

// snapshotTypeName names typ in a scope: its package path and name.
func snapshotTypeName(typ reflect.Type) string {
	if typ.Kind() == reflect.Pointer {
		return "*" + typ.Elem().PkgPath() + "." + typ.Elem().Name()
	}
	return typ.String()
}

// snapshotItemType returns the type of the objects of an informer of T: T
// itself, or example's type if T is an interface type; an error if
// example is no pointer to a struct implementing T.
func snapshotItemType[T Object](example any) (reflect.Type, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Interface {
		return typ, nil
	}
	if example == nil {
		return nil, fmt.Errorf("the informer's objects are of the interface type %v and Snapshot.Example does not name their concrete type", typ)
	}
	ex := reflect.TypeOf(example)
	if ex.Kind() != reflect.Pointer || ex.Elem().Kind() != reflect.Struct || !ex.Implements(typ) {
		return nil, fmt.Errorf("Snapshot.Example is a %v, not a pointer to a struct implementing %v", ex, typ)
	}
	return ex, nil
}

// sensitivity returns why objects of itemType listed from resource may
// not be written without AllowSensitive, or "": Secrets, typed or as
// metadata-only or unstructured objects of the resource; objects marked
// Sensitive; and metadata-only or unstructured objects of a resource
// nobody named, which could be Secrets.
func sensitivity(itemType reflect.Type, resource schema.GroupVersionResource, opts SnapshotOptions) string {
	switch {
	case opts.AllowSensitive:
		return ""
	case opts.Sensitive:
		return "Snapshot.Sensitive is set and Snapshot.AllowSensitive is not"
	case itemType == reflect.TypeFor[*corev1.Secret](), resource.Group == "" && resource.Resource == "secrets":
		return "the objects are Secrets and Snapshot.AllowSensitive is not set"
	case resource.Empty() && (itemType == reflect.TypeFor[*unstructured.Unstructured]() || itemType == reflect.TypeFor[*metav1.PartialObjectMetadata]()):
		return "the resource of these metadata-only or unstructured objects is not known (they could be Secrets): set InformerOptions.Resource"
	}
	return ""
}
