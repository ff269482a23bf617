package crcache

// Every use of the core package's API is in this file, so that a change of
// that API touches nothing else.

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informer "github.com/kubetyped/informer"
)

// source lists and watches the objects of one informer: the core's
// ListerWatcher over client.Object values.
type source = informer.ListerWatcher[client.Object]

// sourceFromListWatch adapts a client-go ListerWatcher.
func sourceFromListWatch(lw toolscache.ListerWatcher) source {
	return informer.NewCacheListerWatcher[client.Object](lw)
}

// restSourceOptions configure the core's ListerWatchers of one informer.
type restSourceOptions struct {
	scheme     *runtime.Scheme
	resource   schema.GroupVersionResource
	namespace  string
	httpClient *http.Client
	tweak      func(*metav1.ListOptions)
	dropFields []string
	// table is the decoding table the ListerWatcher shares with the
	// other caches of a Fleet; nil outside one.
	table *informer.DecodingTable
}

func (o restSourceOptions) rest() informer.RESTOptions {
	return informer.RESTOptions{
		Scheme:           o.scheme,
		Resource:         o.resource,
		Namespace:        o.namespace,
		HTTPClient:       o.httpClient,
		TweakListOptions: o.tweak,
		DropFields:       o.dropFields,
		DecodingTable:    o.table,
	}
}

// decodingTables are the tables the caches of one Fleet decode with: one
// sharing strings only, for the informers that do not deduplicate on
// decode, and one sharing strings and sub-objects, for those that do (see
// listWatchRequest.shareSubObjects). A string decoded into both is held
// once in each.
type decodingTables struct {
	strings, subObjects *informer.DecodingTable
}

func newDecodingTables() *decodingTables {
	return &decodingTables{strings: informer.NewDecodingTable(false), subObjects: informer.NewDecodingTable(true)}
}

// table returns the table of a ListerWatcher that shares sub-objects as it
// decodes, or only strings; nil for a cache outside a Fleet (t nil).
func (t *decodingTables) table(shareSubObjects bool) *informer.DecodingTable {
	switch {
	case t == nil:
		return nil
	case shareSubObjects:
		return t.subObjects
	}
	return t.strings
}

// newTypedSource returns the core's REST ListerWatcher of example's type,
// unwrapped, so that an informer deduplicating over it shares sub-objects
// as the ListerWatcher decodes them.
func newTypedSource(config *rest.Config, o restSourceOptions, example client.Object) (source, error) {
	return informer.NewRESTListerWatcherOf[client.Object](config, o.rest(), example)
}

// checkDropFields checks that example's type has the fields of paths, as
// the REST ListerWatcher of that type would when created.
func checkDropFields(config *rest.Config, scheme *runtime.Scheme, httpClient *http.Client, example client.Object, paths []string) error {
	_, err := informer.NewRESTListerWatcherOf[client.Object](config, informer.RESTOptions{Scheme: scheme, HTTPClient: httpClient, DropFields: paths}, example)
	return err
}

// newDynamicSource returns the core's dynamic ListerWatcher, handing out
// its objects as client.Object values: an informer deduplicating over it
// shares sub-trees as it decodes them.
func newDynamicSource(config *rest.Config, o restSourceOptions) (source, error) {
	return informer.NewDynamicListerWatcherOf[client.Object](config, o.rest())
}

// newMetadataSource returns the core's metadata ListerWatcher, handing out
// its objects as client.Object values with gvk as their kind: the server
// answers with kind PartialObjectMetadata, and readers and handlers expect
// the resource's own kind, as controller-runtime sets it.
func newMetadataSource(config *rest.Config, o restSourceOptions, gvk schema.GroupVersionKind) (source, error) {
	return informer.NewMetadataListerWatcherOf[client.Object](config, o.rest(), gvk)
}

// coreInformer is one informer of the core package over client.Object
// values, with the views of it the cache hands out.
type coreInformer struct {
	inf    *informer.Informer[client.Object]
	shared toolscache.SharedIndexInformer
}

// informerSettings configures newCoreInformer.
type informerSettings struct {
	name      string
	resource  schema.GroupVersionResource
	resync    time.Duration
	transform toolscache.TransformFunc
	// watchErrorHandler, if set, is called with every list or watch error.
	watchErrorHandler toolscache.WatchErrorHandlerWithContext
	// deduplicate and detectMutations are the core informer's options of
	// those names.
	deduplicate     bool
	detectMutations bool
	// snapshot is where the informer keeps its snapshot (Options.Snapshot).
	snapshot snapshotSettings
}

// snapshotSettings are Options.Snapshot for one informer: options, and
// what the cache knows of the informer that the core cannot see.
type snapshotSettings struct {
	options informer.SnapshotOptions
	// example is an object of the informer's concrete type.
	example runtime.Object
	// scopeID names the informer's form, namespace, selectors and dropped
	// fields, so that a snapshot is restored only by one listing the same.
	scopeID string
}

// coreOptions returns the core's SnapshotOptions of s.
func (s snapshotSettings) coreOptions() informer.SnapshotOptions {
	o := s.options
	if o.Dir != "" {
		o.Example, o.ScopeID = s.example, s.scopeID
	}
	return o
}

// newCoreInformer returns an informer that is not running yet.
func newCoreInformer(src source, s informerSettings) (*coreInformer, error) {
	var transform informer.TransformFunc[client.Object]
	if s.transform != nil {
		t := s.transform
		transform = func(obj client.Object) (client.Object, error) {
			out, err := t(obj)
			if err != nil {
				return nil, err
			}
			o, ok := out.(client.Object)
			if !ok {
				return nil, fmt.Errorf("transform returned a %T, which is not a client.Object", out)
			}
			return o, nil
		}
	}
	inf, err := informer.NewInformer(src, informer.InformerOptions[client.Object]{
		ResyncPeriod: new(s.resync),
		Transform:    transform,
		Name:         s.name,
		Resource:     s.resource,
		Deduplicate:  new(s.deduplicate),
		// Nil when off, so that KUBE_CACHE_MUTATION_DETECTOR still turns
		// it on, as for any informer without a setting of its own.
		DetectMutations: onOrInherit(s.detectMutations),
		Snapshot:        s.snapshot.coreOptions(),
	})
	if err != nil {
		return nil, err
	}
	shared := informer.AsSharedIndexInformer(inf)
	if s.watchErrorHandler != nil {
		if err := shared.SetWatchErrorHandlerWithContext(s.watchErrorHandler); err != nil {
			return nil, err
		}
	}
	return &coreInformer{inf: inf, shared: shared}, nil
}

// run runs the informer until ctx is done.
func (c *coreInformer) run(ctx context.Context) { c.inf.Run(ctx) }

// get returns the cached object namespace/name.
func (c *coreInformer) get(namespace, name string) (client.Object, bool) {
	obj, err := c.inf.Lister().Namespace(namespace).Get(name)
	return obj, err == nil
}

// list returns the cached objects of namespace ("" for all) that selector
// (nil for all) matches, from the label index.
func (c *coreInformer) list(namespace string, selector labels.Selector) []client.Object {
	if selector == nil {
		selector = labels.Everything()
	}
	objs, _ := c.inf.Lister().Namespace(namespace).List(selector)
	return objs
}

// byIndex returns the cached objects whose index values under index
// include value.
func (c *coreInformer) byIndex(index, value string) ([]client.Object, error) {
	return c.inf.Lister().ByIndex(index, value)
}

// addIndex adds the index named name.
func (c *coreInformer) addIndex(name string, fn func(obj client.Object) ([]string, error)) error {
	return c.inf.AddIndexers(map[string]informer.IndexFunc[client.Object]{name: fn})
}

// onOrInherit is an explicit "on" for true, and nil, which inherits the
// default, for false.
func onOrInherit(on bool) *bool {
	if on {
		return new(true)
	}
	return nil
}
