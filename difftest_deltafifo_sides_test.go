package informer

// The two DeltaFIFOs the DeltaFIFO harness compares, each with a consumer
// that keeps a store, as an informer does.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// diffOurFIFO is this library's DeltaFIFO with an Indexer as consumer.
type diffOurFIFO struct {
	fifo  *DeltaFIFO[*corev1.Pod]
	store *Indexer[*corev1.Pod]
}

// diffSortedKnown lists the consumer's keys sorted: both queues append the
// deletions a Replace finds in KnownObjects in ListKeys order, which is map
// order in both stores. Sorting it makes the Pop order comparable.
type diffSortedKnown struct{ *Indexer[*corev1.Pod] }

func (k diffSortedKnown) ListKeys() []string {
	keys := k.Indexer.ListKeys()
	slices.Sort(keys)
	return keys
}

func newDiffOurFIFO(s diffFIFOScenario) *diffOurFIFO {
	store := NewIndexer[*corev1.Pod](nil)
	opts := DeltaFIFOOptions[*corev1.Pod]{EmitDeltaTypeReplaced: s.EmitReplaced, Logger: diffQuietLogger()}
	if s.KnownObjects {
		opts.KnownObjects = diffSortedKnown{store}
	}
	if s.Transform {
		opts.Transform = diffTransformPod
	}
	return &diffOurFIFO{fifo: NewDeltaFIFO(opts), store: store}
}

func diffOurObj(op diffFIFOOp) *corev1.Pod {
	if op.Nil {
		return nil
	}
	return op.Obj.pod()
}

func (o *diffOurFIFO) add(op diffFIFOOp) error    { return o.fifo.Add(diffOurObj(op)) }
func (o *diffOurFIFO) update(op diffFIFOOp) error { return o.fifo.Update(diffOurObj(op)) }
func (o *diffOurFIFO) delete(op diffFIFOOp) error { return o.fifo.Delete(diffOurObj(op)) }
func (o *diffOurFIFO) resync() error              { return o.fifo.Resync() }
func (o *diffOurFIFO) hasSynced() bool            { return o.fifo.HasSynced() }
func (o *diffOurFIFO) close()                     { o.fifo.Close() }

// wouldBlock reports that Pop would block: the queue is empty and open.
func (o *diffOurFIFO) wouldBlock() bool { return len(o.fifo.ListKeys()) == 0 && !o.fifo.IsClosed() }

func (o *diffOurFIFO) replace(op diffFIFOOp) error {
	list := make([]*corev1.Pod, len(op.List))
	for i, obj := range op.List {
		list[i] = obj.pod()
	}
	return o.fifo.Replace(list, op.RV)
}

func (o *diffOurFIFO) pop(failProcess bool) diffPopResult {
	var res diffPopResult
	deltas, err := o.fifo.Pop(context.Background(), func(deltas []Delta[*corev1.Pod], isInInitialList bool) error {
		res.IsInInitialList = isInInitialList
		if failProcess {
			return errors.New("difftest: process fails")
		}
		for _, d := range deltas {
			if d.Type == DeltaDeleted {
				_ = o.store.Delete(d.Object)
			} else {
				_ = o.store.Add(d.Object)
			}
		}
		return nil
	})
	if errors.Is(err, ErrFIFOClosed) {
		return diffPopResult{Closed: true}
	}
	res.Err = err != nil
	for _, d := range deltas {
		res.Deltas = append(res.Deltas, diffDeltaOf(KeyOf(d.Object), d.Object, string(d.Type), d.FinalStateUnknown))
	}
	return res
}

func (o *diffOurFIFO) stored() []diffStored {
	var out []diffStored
	for _, p := range o.store.List() {
		out = append(out, diffStored{Key: KeyOf(p), UID: string(p.UID), RV: p.ResourceVersion, Transformed: p.Annotations[diffTransformMark]})
	}
	slices.SortFunc(out, func(a, b diffStored) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// diffClientGoFIFO is client-go's DeltaFIFO with a cache.Store as consumer.
type diffClientGoFIFO struct {
	fifo  *cache.DeltaFIFO
	store cache.Store
}

// diffClientGoSortedKnown is diffSortedKnown for client-go's store.
type diffClientGoSortedKnown struct{ cache.Store }

func (k diffClientGoSortedKnown) ListKeys() []string {
	keys := k.Store.ListKeys()
	slices.Sort(keys)
	return keys
}

func newDiffClientGoFIFO(s diffFIFOScenario) *diffClientGoFIFO {
	store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	logger := diffQuietLogger()
	opts := cache.DeltaFIFOOptions{EmitDeltaTypeReplaced: s.EmitReplaced, Logger: logger}
	if s.KnownObjects {
		opts.KnownObjects = diffClientGoSortedKnown{store}
	}
	if s.Transform {
		opts.Transformer = func(obj any) (any, error) { return diffTransformPod(obj.(*corev1.Pod)) }
	}
	return &diffClientGoFIFO{fifo: cache.NewDeltaFIFOWithOptions(opts), store: store}
}

// diffClientGoObj returns the object for client-go: an untyped nil for an
// invalid input, the nil client-go's key function rejects.
func diffClientGoObj(op diffFIFOOp) any {
	if op.Nil {
		return nil
	}
	return op.Obj.pod()
}

func (c *diffClientGoFIFO) add(op diffFIFOOp) error    { return c.fifo.Add(diffClientGoObj(op)) }
func (c *diffClientGoFIFO) update(op diffFIFOOp) error { return c.fifo.Update(diffClientGoObj(op)) }
func (c *diffClientGoFIFO) delete(op diffFIFOOp) error { return c.fifo.Delete(diffClientGoObj(op)) }
func (c *diffClientGoFIFO) resync() error              { return c.fifo.Resync() }
func (c *diffClientGoFIFO) hasSynced() bool            { return c.fifo.HasSynced() }
func (c *diffClientGoFIFO) close()                     { c.fifo.Close() }

func (c *diffClientGoFIFO) replace(op diffFIFOOp) error {
	list := make([]any, len(op.List))
	for i, obj := range op.List {
		list[i] = obj.pod()
	}
	return c.fifo.Replace(list, op.RV)
}

// diffClientGoPopTimeout bounds a scenario on client-go's side. A Pop is
// only issued when this library's queue holds something; if client-go's is
// empty instead, its Pop blocks, and the watchdog closes the queue to get it
// back, which shows as a difference. It is never reached when the two sides
// agree.
const diffClientGoPopTimeout = 10 * time.Second

func (c *diffClientGoFIFO) pop(failProcess bool) diffPopResult {
	var res diffPopResult
	item, err := c.fifo.Pop(func(obj any, isInInitialList bool) error {
		res.IsInInitialList = isInInitialList
		if failProcess {
			return errors.New("difftest: process fails")
		}
		for _, d := range obj.(cache.Deltas) {
			if d.Type == cache.Deleted {
				_ = c.store.Delete(d.Object)
			} else {
				_ = c.store.Add(d.Object)
			}
		}
		return nil
	})
	if errors.Is(err, cache.ErrFIFOClosed) {
		return diffPopResult{Closed: true}
	}
	res.Err = err != nil
	deltas, _ := item.(cache.Deltas)
	for _, d := range deltas {
		switch obj := d.Object.(type) {
		case cache.DeletedFinalStateUnknown:
			pod, _ := obj.Obj.(*corev1.Pod)
			res.Deltas = append(res.Deltas, diffDeltaOf(obj.Key, pod, string(d.Type), true))
		case *corev1.Pod:
			res.Deltas = append(res.Deltas, diffDeltaOf(KeyOf(obj), obj, string(d.Type), false))
		default:
			res.Deltas = append(res.Deltas, diffDelta{Type: string(d.Type), Key: fmt.Sprintf("<unexpected %T>", d.Object)})
		}
	}
	return res
}

func (c *diffClientGoFIFO) stored() []diffStored {
	var out []diffStored
	for _, obj := range c.store.List() {
		p := obj.(*corev1.Pod)
		out = append(out, diffStored{Key: KeyOf(p), UID: string(p.UID), RV: p.ResourceVersion, Transformed: p.Annotations[diffTransformMark]})
	}
	slices.SortFunc(out, func(a, b diffStored) int { return strings.Compare(a.Key, b.Key) })
	return out
}
