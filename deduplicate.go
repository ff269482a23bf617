package informer

import (
	"fmt"

	"github.com/kubetyped/informer/internal/wire"
)

// Deduplication (InformerOptions.Deduplicate; docs/semantics.md,
// "Deduplication"): where an informer's objects are deduplicated, by the
// decoder as it decodes or by the queue's pass after the transform. The
// tables themselves are internal/wire's.

// deduplicate turns deduplication on (see InformerOptions.Deduplicate) and
// returns the ListerWatcher to list and watch through. Objects decoded by
// a REST or dynamic ListerWatcher that interns on decode are deduplicated
// by its decoder, as they are decoded, when there is no transform (which
// might write into what the decoder shares): the informer then lists and
// watches through a copy of the ListerWatcher that shares sub-objects too.
// Otherwise the queue's pass deduplicates every object after the
// transform, with the decoder's table if there is one, so that the strings
// it interned are the ones the pass finds.
func (i *Informer[T]) deduplicate(lw ListerWatcher[T]) (ListerWatcher[T], error) {
	interns := wire.NewInternTable()
	transform := i.cfg.transform()
	if dyn, ok := any(lw).(*dynamicListerWatcher); ok {
		if transform == nil {
			shared, err := dyn.sharingSubObjects()
			if err != nil {
				return nil, fmt.Errorf("deduplicating on decode: %w", err)
			}
			return any(shared).(ListerWatcher[T]), nil
		}
		interns = dyn.interns
	}
	if rest, ok := lw.(*restListerWatcher[T]); ok && rest.interns != nil {
		if transform == nil && rest.sharesOnDecode {
			shared, err := rest.sharingSubObjects()
			if err != nil {
				return nil, fmt.Errorf("deduplicating on decode: %w", err)
			}
			return shared, nil
		}
		interns = rest.interns
	}
	i.queue.interns, i.queue.intern = interns, wire.InternFuncFor[T]()
	return lw, nil
}
