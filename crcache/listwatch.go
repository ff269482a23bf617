package crcache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
	bookmarks bool
}

// newRESTSource returns the ListerWatcher of req, through controller-runtime's
// REST client for typed objects and client-go's dynamic and metadata clients
// for the other forms, as controller-runtime's own cache does.
func (c *shared) newRESTSource(req listWatchRequest) (source, error) {
	var list func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	var watchFn func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	gvr := req.gvk.GroupVersion().WithResource(req.resource)
	switch req.form {
	case formUnstructured:
		cfg := rest.CopyConfig(c.config)
		cfg.NegotiatedSerializer = nil
		dc, err := dynamic.NewForConfigAndClient(cfg, c.httpClient)
		if err != nil {
			return nil, err
		}
		var ri dynamic.ResourceInterface = dc.Resource(gvr)
		if req.namespace != "" {
			ri = dc.Resource(gvr).Namespace(req.namespace)
		}
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) }
		watchFn = ri.Watch
	case formMetadata:
		cfg := rest.CopyConfig(c.config)
		cfg.NegotiatedSerializer = nil
		mc, err := metadata.NewForConfigAndClient(cfg, c.httpClient)
		if err != nil {
			return nil, err
		}
		var ri metadata.ResourceInterface = mc.Resource(gvr)
		if req.namespace != "" {
			ri = mc.Resource(gvr).Namespace(req.namespace)
		}
		// The server answers with kind PartialObjectMetadata; readers and
		// handlers expect the resource's own kind, as controller-runtime
		// sets it.
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := ri.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range l.Items {
				l.Items[i].SetGroupVersionKind(req.gvk)
			}
			return l, nil
		}
		watchFn = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := ri.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if m, ok := e.Object.(*metav1.PartialObjectMetadata); ok {
					m.SetGroupVersionKind(req.gvk)
				}
				return e, true
			}), nil
		}
	default:
		rc, err := apiutil.RESTClientForGVK(req.gvk, false, false, c.config, c.codecs, c.httpClient)
		if err != nil {
			return nil, err
		}
		listObj, err := c.scheme.New(req.gvk.GroupVersion().WithKind(req.gvk.Kind + "List"))
		if err != nil {
			return nil, fmt.Errorf("list type of %v: %w", req.gvk, err)
		}
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out := listObj.DeepCopyObject()
			err := rc.Get().NamespaceIfScoped(req.namespace, req.namespace != "").Resource(req.resource).
				VersionedParams(&opts, c.paramCodec).Do(ctx).Into(out)
			if err != nil {
				return nil, err
			}
			return out, nil
		}
		watchFn = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return rc.Get().NamespaceIfScoped(req.namespace, req.namespace != "").Resource(req.resource).
				VersionedParams(&opts, c.paramCodec).Watch(ctx)
		}
	}
	return sourceFromListWatch(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			req.selector.applyTo(&opts)
			return list(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = opts.AllowWatchBookmarks || req.bookmarks
			req.selector.applyTo(&opts)
			return watchFn(ctx, opts)
		},
	}), nil
}
