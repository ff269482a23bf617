package crcache

// Every use of the core package's API is in this file, so that a change of
// that API touches nothing else.

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		ResyncPeriod: s.resync,
		Transform:    transform,
		Name:         s.name,
		Resource:     s.resource,
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
