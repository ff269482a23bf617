package informer

import (
	"context"

	"k8s.io/klog/v2"
)

// observers are the hooks of the optional observers: the mutation
// detector, installed when the informer is made, and the metrics
// provider's InformerMetrics, installed when it starts. Each hook does
// nothing, at the cost of one nil check per batch (never per event), when
// its observer is off. The stages call the hooks, never the observers.
type observers[T Object] struct {
	// detector is the cache mutation detector; nil unless enabled.
	detector *mutationDetector[T]
	// provider receives the informer's metrics, if set; metrics is what it
	// returned for this run (set at Run, read after).
	provider MetricsProvider
	metrics  InformerMetrics
}

// writesApplied tells the detector of the records the store applied.
func (o *observers[T]) writesApplied(records []queueRecord[T]) {
	if o.detector != nil {
		o.detector.trackWrites(records)
	}
}

// listApplied tells the detector of a list the store applied.
func (o *observers[T]) listApplied(list []T) {
	if o.detector != nil {
		o.detector.track(list...)
	}
}

// handlerHooks returns the hooks of the handler named name: with the
// places at which the detector records what it is handed.
func (o *observers[T]) handlerHooks(name string) handlerHooks[T] {
	h := handlerHooks[T]{observers: o}
	if o.detector != nil {
		h.handOuts = handlerHandOuts(name)
	}
	return h
}

// handlerHooks are one handler's hooks: the places at which the mutation
// detector records what the handler is handed, and the handler's metrics.
// They are set before the handler's goroutine starts, which alone uses
// them then.
type handlerHooks[T Object] struct {
	// observers are the informer's; nil for a listener no informer added.
	observers *observers[T]
	handOuts  [notifyDelete + 1]handOutKey
	// metrics, if set, times the handler's batches.
	metrics HandlerMetrics
}

// handedOut records the objects of batch, handed to the handler.
func (h *handlerHooks[T]) handedOut(batch []notification[T]) {
	if o := h.observers; o != nil && o.detector != nil {
		o.detector.handedOutToHandler(&h.handOuts, batch)
	}
}

// registerMetrics registers a starting handler named name, whose counters
// read returns, with its informer's metrics im, if any.
func (h *handlerHooks[T]) registerMetrics(im InformerMetrics, name string, read func() HandlerStats) {
	if im != nil {
		h.metrics = im.AddHandler(name, read)
	}
}

// removeMetrics unregisters the handler from its informer's metrics, once
// its goroutine has exited.
func (h *handlerHooks[T]) removeMetrics() {
	if h.metrics != nil {
		h.metrics.Remove()
	}
}

// handedOut records that a Lister's method what returned objs to its
// caller, skip frames above the method's caller. o may be nil (a Lister
// made by NewLister).
func (o *observers[T]) handedOut(what string, skip int, objs []T) {
	if o != nil && o.detector != nil {
		o.detector.handedOutToCaller(what, skip+1, objs...)
	}
}

// handedOutOne is handedOut for one object: no slice is made unless the
// detector runs.
func (o *observers[T]) handedOutOne(what string, skip int, obj T) {
	if o != nil && o.detector != nil {
		o.detector.handedOutToCaller(what, skip+1, obj)
	}
}

// mutated is the number of modified objects the detector found, and of
// values written into.
func (o *observers[T]) mutated() (objects, values int64) {
	if o.detector == nil {
		return 0, 0
	}
	return o.detector.mutated.Load(), o.detector.mutatedValues.Load()
}

// runDetector compares the cached objects with their copies until ctx is
// done.
func (o *observers[T]) runDetector(ctx context.Context, logger klog.Logger) {
	if o.detector != nil {
		o.detector.run(ctx.Done(), logger)
	}
}

// finalCheck compares once more, after the handlers have returned: what
// they changed is seen now.
func (o *observers[T]) finalCheck(logger klog.Logger) {
	if o.detector != nil {
		o.detector.final(logger)
	}
}

// started registers a starting informer with the metrics provider, if
// any. The informer's mu must be held.
func (o *observers[T]) started(id InformerID, read func() InformerSnapshot) {
	if o.provider != nil {
		o.metrics = o.provider.AddInformer(id, read)
	}
}

// stopped unregisters a stopped informer, once its handlers' goroutines
// have exited.
func (o *observers[T]) stopped() {
	if o.metrics != nil {
		o.metrics.Remove()
	}
}
