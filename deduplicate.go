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
// a ListerWatcher whose decoder can share sub-objects as it decodes are
// deduplicated by that decoder when there is no transform (which might
// write into what the decoder shares): the informer then lists and
// watches through a copy of the ListerWatcher decoding with a sharing
// table of its own, so that the ListerWatcher itself, which others may
// use, keeps decoding objects that share only strings (or through lw
// itself if it already decodes with one). Otherwise the queue's pass
// deduplicates every object after the transform, with the decoder's table
// if there is one, so that the strings it interned are the ones the pass
// finds. A fleet's informer (cfg.interns set) uses the fleet's table
// instead of tables of its own.
func (i *Informer[T]) deduplicate(lw ListerWatcher[T]) (ListerWatcher[T], error) {
	interns := i.cfg.interns
	if interns == nil {
		interns = wire.NewInternTable()
	}
	if d, ok := lw.(describedListerWatcher[T]); ok && d.description().interns != nil {
		desc := d.description()
		if i.cfg.transform() == nil && desc.sharesOnDecode {
			if desc.interns.SharesSubObjects() {
				return lw, nil
			}
			table := i.cfg.interns
			if table == nil || !table.SharesSubObjects() {
				table = wire.NewSubObjectSharingTable()
			}
			shared, err := d.decodingWith(table)
			if err != nil {
				return nil, fmt.Errorf("deduplicating on decode: %w", err)
			}
			return shared, nil
		}
		interns = desc.interns
	}
	i.queue.interns, i.queue.intern = interns, wire.InternFuncFor[T]()
	return lw, nil
}
