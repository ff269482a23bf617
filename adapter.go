package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// AsSharedIndexInformer presents inf as client-go's cache.SharedIndexInformer,
// for code written against client-go: controller-runtime's source.Informer,
// cache.WaitForCacheSync, generated listers over GetIndexer, and so on. It
// adds no goroutine, buffer or copy to the informer's event path; several
// adapters of one informer share everything, and a registration made
// through one can be removed through another. inf must not be nil.
//
// A handler added through the adapter receives the informer's T values as
// `any`, the very objects held in the cache (they must not be modified):
// OnAdd and OnUpdate as the informer delivers them; OnDelete with the
// deleted object, or, when the deletion was inferred from a relist, with a
// cache.DeletedFinalStateUnknown{Key: "namespace/name", Obj: last known
// object}, exactly as client-go delivers it. Calls to one handler are
// sequential; different handlers run concurrently.
//
// What cannot be mapped exactly:
//   - A panicking handler is recovered, logged and counted, as for every
//     handler of this package, instead of crashing the process (see
//     docs/semantics.md).
//   - Watch error handlers receive a stand-in *cache.Reflector that carries
//     the informer's name and type description but never runs: this
//     package's reflector is not a cache.Reflector.
//   - The transform given to SetTransform runs on T values, and every object
//     it returns must be a T (see SetTransform); a failing transform drops
//     the object, as a TransformFunc's failure does (docs/semantics.md).
//
// All methods are safe for concurrent use.
func AsSharedIndexInformer[T Object](inf *Informer[T]) cache.SharedIndexInformer {
	return &sharedInformerAdapter[T]{inf: inf}
}

// sharedInformerAdapter implements cache.SharedIndexInformer over an
// Informer[T].
type sharedInformerAdapter[T Object] struct {
	inf *Informer[T]

	standInOnce sync.Once
	standIn     *cache.Reflector
}

var _ cache.SharedIndexInformer = (*sharedInformerAdapter[*metav1.PartialObjectMetadata])(nil)

// AddEventHandler adds handler with the informer's default resync period.
func (a *sharedInformerAdapter[T]) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return a.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds handler with its own resync period,
// adjusted as client-go adjusts it.
func (a *sharedInformerAdapter[T]) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return a.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds handler with options' logger and resync
// period (see Informer.AddEventHandlerWithOptions for the initial adds).
func (a *sharedInformerAdapter[T]) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, errors.New("cannot add a nil event handler")
	}
	reg, err := a.inf.AddEventHandlerWithOptions(untypedHandler[T]{handler}, HandlerOptions{
		// client-go names a handler after its type too; the informer's
		// default name would be the wrapper's type.
		Name:         fmt.Sprintf("%T", handler),
		ResyncPeriod: options.ResyncPeriod,
		Logger:       options.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &registrationAdapter{reg: reg}, nil
}

// RemoveEventHandler removes a handler added through an adapter of the same
// informer; removing it again, or removing one of another informer, does
// nothing. A handle that no adapter of this package issued is an error.
func (a *sharedInformerAdapter[T]) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registrationAdapter)
	if !ok {
		return fmt.Errorf("cannot remove event handler: handle of type %T was not issued by this informer", handle)
	}
	return a.inf.RemoveEventHandler(r.reg)
}

// GetStore returns the informer's cache, as GetIndexer does.
func (a *sharedInformerAdapter[T]) GetStore() cache.Store { return AsIndexer(a.inf.indexer) }

// GetIndexer returns the informer's cache through AsIndexer. As with
// client-go, writing to it changes the cache without notifying handlers,
// which only suits tests that fill a cache without running the informer.
func (a *sharedInformerAdapter[T]) GetIndexer() cache.Indexer { return AsIndexer(a.inf.indexer) }

// AddIndexers adds client-go index functions, before or after Run. Each is
// called with the T objects of the cache.
func (a *sharedInformerAdapter[T]) AddIndexers(indexers cache.Indexers) error {
	return a.inf.AddIndexers(typedIndexers[T](indexers))
}

// GetController returns a view of the informer as a cache.Controller. Like
// client-go's, its Run and RunWithContext do nothing: the informer runs
// through the adapter's Run.
func (a *sharedInformerAdapter[T]) GetController() cache.Controller { return controllerView[T]{a} }

// Run runs the informer until stopCh is closed (see Informer.Run).
func (a *sharedInformerAdapter[T]) Run(stopCh <-chan struct{}) {
	a.inf.Run(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx is done (see Informer.Run).
func (a *sharedInformerAdapter[T]) RunWithContext(ctx context.Context) { a.inf.Run(ctx) }

// HasSynced reports whether the informer's first list is in its cache.
func (a *sharedInformerAdapter[T]) HasSynced() bool { return a.inf.HasSynced() }

// HasSyncedChecker returns a checker whose channel is closed once
// HasSynced is true.
func (a *sharedInformerAdapter[T]) HasSyncedChecker() cache.DoneChecker {
	return a.inf.HasSyncedChecker()
}

// LastSyncResourceVersion returns the resource version the reflector last
// saw.
func (a *sharedInformerAdapter[T]) LastSyncResourceVersion() string {
	return a.inf.LastSyncResourceVersion()
}

// SetWatchErrorHandler sets the handler called when a list or watch fails;
// it receives the adapter's stand-in reflector. It fails once Run was
// called.
func (a *sharedInformerAdapter[T]) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	if handler == nil {
		return a.inf.setWatchErrorHandler(nil)
	}
	r := a.reflectorStandIn()
	return a.inf.setWatchErrorHandler(func(_ context.Context, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler for a handler that
// takes the reflector's context, which carries its logger.
func (a *sharedInformerAdapter[T]) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	if handler == nil {
		return a.inf.setWatchErrorHandler(nil)
	}
	r := a.reflectorStandIn()
	return a.inf.setWatchErrorHandler(func(ctx context.Context, err error) { handler(ctx, r, err) })
}

// SetTransform sets a client-go transform, which replaces any transform the
// informer has; nil removes it. It is called with T objects, and must
// return a T: anything else is a transform error, so the object is logged,
// counted and dropped. It fails once Run was called.
func (a *sharedInformerAdapter[T]) SetTransform(handler cache.TransformFunc) error {
	if handler == nil {
		return a.inf.setTransform(nil)
	}
	return a.inf.setTransform(func(obj T) (T, error) {
		out, err := handler(obj)
		if err != nil {
			var zero T
			return zero, err
		}
		t, ok := out.(T)
		if !ok {
			var zero T
			return zero, fmt.Errorf("transform returned a %T, not a %T", out, zero)
		}
		return t, nil
	})
}

// IsStopped reports whether the informer has stopped.
func (a *sharedInformerAdapter[T]) IsStopped() bool { return a.inf.IsStopped() }

// reflectorStandIn returns the *cache.Reflector handed to watch error
// handlers. It is built once, never run, and carries only the informer's
// name and type description, which is what client-go's
// DefaultWatchErrorHandler and typical handlers read.
func (a *sharedInformerAdapter[T]) reflectorStandIn() *cache.Reflector {
	a.standInOnce.Do(func() {
		var zero T
		typeName := fmt.Sprintf("%T", zero)
		name := a.inf.cfg.Name
		if name == "" {
			name = typeName
		}
		// No expected type: client-go would read a nil *Unstructured's
		// kind. Nothing is listed, so no ListerWatcher or store is needed.
		a.standIn = cache.NewReflectorWithOptions(nil, nil, nil, cache.ReflectorOptions{
			Name:            name,
			TypeDescription: typeName,
		})
	})
	return a.standIn
}

// controllerView is the cache.Controller of an adapter.
type controllerView[T Object] struct{ a *sharedInformerAdapter[T] }

// Run does nothing, as client-go's controller of a shared informer.
func (controllerView[T]) Run(<-chan struct{}) {}

// RunWithContext does nothing, as client-go's controller of a shared
// informer.
func (controllerView[T]) RunWithContext(context.Context) {}

// HasSynced reports whether the informer has synced.
func (c controllerView[T]) HasSynced() bool { return c.a.HasSynced() }

// HasSyncedChecker returns the informer's DoneChecker.
func (c controllerView[T]) HasSyncedChecker() cache.DoneChecker { return c.a.HasSyncedChecker() }

// LastSyncResourceVersion returns the informer's resource version when
// client-go's InformerResourceVersion feature is enabled (the default) and
// "" otherwise, as client-go does.
func (c controllerView[T]) LastSyncResourceVersion() string {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.InformerResourceVersion) {
		return ""
	}
	return c.a.LastSyncResourceVersion()
}

// untypedHandler delivers an informer's typed notifications to a client-go
// handler.
type untypedHandler[T Object] struct{ h cache.ResourceEventHandler }

// OnAdd passes obj on as it is.
func (u untypedHandler[T]) OnAdd(obj T, isInInitialList bool) { u.h.OnAdd(obj, isInInitialList) }

// OnUpdate passes both objects on as they are.
func (u untypedHandler[T]) OnUpdate(oldObj, newObj T) { u.h.OnUpdate(oldObj, newObj) }

// OnDelete passes the deleted object on, in a tombstone if its final state
// is unknown, as client-go does.
func (u untypedHandler[T]) OnDelete(d DeletedObject[T]) {
	if d.FinalStateUnknown {
		u.h.OnDelete(cache.DeletedFinalStateUnknown{Key: d.Name.String(), Obj: d.Object})
		return
	}
	u.h.OnDelete(d.Object)
}
