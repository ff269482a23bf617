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

// listenerAdded installs the hooks in l, with the places at which the
// detector records what l hands out.
func (o *observers[T]) listenerAdded(l *listener[T]) {
	l.hooks = o
	if o.detector != nil {
		l.handOuts = handlerHandOuts(l.name)
	}
}

// handedOutToHandler records the objects of batch, handed to a handler at
// the places keys.
func (o *observers[T]) handedOutToHandler(keys *[notifyDelete + 1]handOutKey, batch []notification[T]) {
	if o != nil && o.detector != nil {
		o.detector.handedOutToHandler(keys, batch)
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
