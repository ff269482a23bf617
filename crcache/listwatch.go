package crcache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// objectForm is how an informer holds its objects: as the scheme's Go type,
// as *unstructured.Unstructured or as *metav1.PartialObjectMetadata. One
// GroupVersionKind may have one informer of each form.
type objectForm uint8

const (
	formTyped objectForm = iota
	formUnstructured
	formMetadata
)

// String names the form in informer names and errors.
func (f objectForm) String() string {
	switch f {
	case formUnstructured:
		return "unstructured"
	case formMetadata:
		return "metadata"
	default:
		return "typed"
	}
}

// listWatchRequest is everything needed to list and watch one informer's
// objects from the API server.
type listWatchRequest struct {
	gvk       schema.GroupVersionKind
	form      objectForm
	resource  string // plural resource name, from the REST mapping
	namespace string // "" for all namespaces or a cluster-scoped resource
	selector  selectors
	// dropFields are the paths of Options.DropFields for this informer.
	dropFields []string
	// shareSubObjects says that the informer deduplicates with no
	// transform, so that its decoder may share sub-objects as it decodes:
	// in a Fleet, it then decodes with the fleet's sub-object table.
	shareSubObjects bool
}

// newRESTSource returns the ListerWatcher of req through the core's own
// ListerWatchers: the REST one for typed objects (protobuf with interning
// on decode for built-in types, JSON for custom resources), the dynamic
// one for unstructured objects and the metadata one for metadata. Each
// sends the informer's selectors with every list and watch, and drops
// req.dropFields on the wire.
func (c *shared) newRESTSource(req listWatchRequest) (source, error) {
	opts := restSourceOptions{
		scheme:     c.scheme,
		resource:   req.gvk.GroupVersion().WithResource(req.resource),
		namespace:  req.namespace,
		httpClient: c.httpClient,
		tweak:      req.selector.applyTo,
		dropFields: req.dropFields,
		table:      c.tables.table(req.shareSubObjects),
	}
	switch req.form {
	case formUnstructured:
		return newDynamicSource(c.config, opts)
	case formMetadata:
		return newMetadataSource(c.config, opts, req.gvk)
	}
	obj, err := c.scheme.New(req.gvk)
	if err != nil {
		return nil, err
	}
	example, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T, the type of %v, is not a client.Object", obj, req.gvk)
	}
	return newTypedSource(c.config, opts, example)
}
