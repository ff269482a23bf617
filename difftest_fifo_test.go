package informer

// Differential test of DeltaFIFO[T] against client-go's DeltaFIFO
// (NewDeltaFIFOWithOptions): the same operations must give the same results,
// the same Pop sequence (delta types, keys, UIDs, resource versions,
// final-state-unknown flags, isInInitialList), the same HasSynced after every
// operation and the same final content of the consumer's store.
//
// Both queues are driven from the test goroutine, one operation at a time,
// so the comparison is exact. Inputs this library rejects on purpose are not
// generated, see diffGenFIFOScenario.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// diffFIFOOpKind is an operation on a DeltaFIFO.
type diffFIFOOpKind uint8

const (
	diffFIFOAdd diffFIFOOpKind = iota
	diffFIFOUpdate
	diffFIFODelete
	diffFIFOReplace
	diffFIFOResync
	diffFIFOPop
	diffFIFOClose
)

// diffFIFOOp is one generated operation.
type diffFIFOOp struct {
	Kind diffFIFOOpKind
	// Obj is the object of Add, Update and Delete.
	Obj diffObj
	// Nil replaces Obj with a nil object (an invalid input).
	Nil bool
	// List and RV are the arguments of Replace.
	List []diffObj
	RV   string
	// FailProcess makes the consumer's process function fail this Pop, so
	// that the consumer's store misses the popped deltas.
	FailProcess bool
}

func (op diffFIFOOp) String() string {
	obj := op.Obj.String()
	if op.Nil {
		obj = "nil"
	}
	switch op.Kind {
	case diffFIFOAdd:
		return "Add " + obj
	case diffFIFOUpdate:
		return "Update " + obj
	case diffFIFODelete:
		return "Delete " + obj
	case diffFIFOReplace:
		return fmt.Sprintf("Replace rv=%s %s", op.RV, diffJoin(op.List))
	case diffFIFOResync:
		return "Resync"
	case diffFIFOPop:
		if op.FailProcess {
			return "Pop (process fails)"
		}
		return "Pop"
	case diffFIFOClose:
		return "Close"
	}
	return "?"
}

// diffFIFOScenario is a generated DeltaFIFO scenario.
type diffFIFOScenario struct {
	KnownObjects bool // the queue has the consumer's store as KnownObjects
	EmitReplaced bool // EmitDeltaTypeReplaced
	Transform    bool // the queue has diffTransformPod as its transform
	Ops          []diffFIFOOp
}

func (s diffFIFOScenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "KnownObjects=%v EmitDeltaTypeReplaced=%v Transform=%v\n", s.KnownObjects, s.EmitReplaced, s.Transform)
	for i, op := range s.Ops {
		fmt.Fprintf(&b, "  %2d %s\n", i, op)
	}
	return b.String()
}

// diffGenFIFOScenario generates a scenario. It never generates the inputs
// this library handles differently on purpose (fifo.go's documentation):
//
//   - a nameless object: client-go queues it under the key "" (or "ns/"),
//     this library rejects it with an error;
//   - a Replace list with an item that fails the transform: client-go queues
//     the items before it and fails, this library's Replace is
//     all-or-nothing;
//   - an invalid object or a failing transform before the first successful
//     write: client-go marks itself populated (HasSynced) even though the
//     write fails, this library changes nothing on a failed write;
//   - a KnownObjects that lists a key it cannot return: client-go queues a
//     deletion record without an object, this library cannot type one and
//     skips the key. The consumer's store used here is always consistent,
//     as an informer's is.
func diffGenFIFOScenario(c diffChooser) diffFIFOScenario {
	s := diffFIFOScenario{
		KnownObjects: diffChance(c, 3, 4),
		EmitReplaced: diffChance(c, 1, 2),
		Transform:    diffChance(c, 1, 2),
	}
	g := newDiffObjGen(c)
	n := 5 + c.intn(40)
	if _, fuzzing := c.(*diffBytes); fuzzing {
		n = 200
	}
	populated, closed := false, false
	for len(s.Ops) < n && !c.exhausted() {
		var op diffFIFOOp
		switch k := c.intn(100); {
		case k < 20:
			op = diffFIFOOp{Kind: diffFIFOAdd, Obj: g.object()}
		case k < 38:
			op = diffFIFOOp{Kind: diffFIFOUpdate, Obj: g.object()}
		case k < 52:
			op = diffFIFOOp{Kind: diffFIFODelete, Obj: g.object()}
		case k < 60:
			op = diffFIFOOp{Kind: diffFIFOReplace, List: g.list(6), RV: g.nextRV()}
		case k < 67:
			op = diffFIFOOp{Kind: diffFIFOResync}
		case k < 95:
			op = diffFIFOOp{Kind: diffFIFOPop, FailProcess: diffChance(c, 1, 10)}
		case k < 97 && !closed:
			op = diffFIFOOp{Kind: diffFIFOClose}
			closed = true
		default:
			if !populated {
				continue
			}
			op = diffFIFOOp{Kind: diffFIFOOpKind(c.intn(3)), Obj: g.object()}
			if s.Transform && diffChance(c, 1, 2) {
				op.Obj.FailTransform = true
			} else {
				op.Nil = true
			}
		}
		if op.Kind <= diffFIFOReplace && !op.Nil && !op.Obj.FailTransform {
			populated = true
		}
		s.Ops = append(s.Ops, op)
	}
	return s
}

// diffDelta is one popped delta as the harness compares it.
type diffDelta struct {
	Type              string
	Key               string
	UID               string
	RV                string
	FinalStateUnknown bool
	// Transformed is the transform mark of the object ("t" per transform).
	Transformed string
}

func diffDeltaOf(key string, obj *corev1.Pod, deltaType string, fsu bool) diffDelta {
	d := diffDelta{Type: deltaType, Key: key, FinalStateUnknown: fsu}
	if obj == nil {
		d.UID = "<no object>"
		return d
	}
	d.UID, d.RV, d.Transformed = string(obj.UID), obj.ResourceVersion, obj.Annotations[diffTransformMark]
	return d
}

// diffPopResult is the outcome of one Pop.
type diffPopResult struct {
	// Skipped: this library's queue was empty and open, so neither queue
	// was popped (a Pop would block). A client-go queue that was not empty
	// shows in the final drain.
	Skipped bool
	// Closed: Pop reported the queue closed and empty.
	Closed          bool
	IsInInitialList bool
	Deltas          []diffDelta
	Err             bool
}

// diffFIFOStep is the outcome of one operation.
type diffFIFOStep struct {
	Op        string
	Err       bool
	Pop       *diffPopResult
	HasSynced bool
}

// diffStored is one object of the consumer's store.
type diffStored struct {
	Key, UID, RV, Transformed string
}

// diffFIFOTrace is everything compared for one side.
type diffFIFOTrace struct {
	Steps []diffFIFOStep
	// Drain is what Pop returned after the scenario, with the queue closed,
	// until it reported closed.
	Drain []diffPopResult
	// Store is the consumer's store at the end, sorted by key.
	Store []diffStored
}

// diffFIFOSide is one implementation under test, with its consumer.
type diffFIFOSide interface {
	add(op diffFIFOOp) error
	update(op diffFIFOOp) error
	delete(op diffFIFOOp) error
	replace(op diffFIFOOp) error
	resync() error
	pop(failProcess bool) diffPopResult
	hasSynced() bool
	close()
	stored() []diffStored
}

// diffRunFIFO runs s through side. skipPop(i) says whether the Pop of step i
// must be skipped because it would block.
func diffRunFIFO(s diffFIFOScenario, side diffFIFOSide, skipPop func(i int) bool) diffFIFOTrace {
	var tr diffFIFOTrace
	for i, op := range s.Ops {
		step := diffFIFOStep{Op: op.String()}
		var err error
		switch op.Kind {
		case diffFIFOAdd:
			err = side.add(op)
		case diffFIFOUpdate:
			err = side.update(op)
		case diffFIFODelete:
			err = side.delete(op)
		case diffFIFOReplace:
			err = side.replace(op)
		case diffFIFOResync:
			err = side.resync()
		case diffFIFOPop:
			if skipPop(i) {
				step.Pop = &diffPopResult{Skipped: true}
			} else {
				pop := side.pop(op.FailProcess)
				step.Pop = &pop
			}
		case diffFIFOClose:
			side.close()
		}
		step.Err = err != nil
		step.HasSynced = side.hasSynced()
		tr.Steps = append(tr.Steps, step)
	}
	side.close()
	for range 2*diffKeyCount + 2 {
		pop := side.pop(false)
		tr.Drain = append(tr.Drain, pop)
		if pop.Closed {
			break
		}
	}
	tr.Store = side.stored()
	return tr
}

// diffCompareFIFO runs s through both queues and returns cmp.Diff of the
// traces (client-go is "-", this library "+"); empty means identical.
func diffCompareFIFO(s diffFIFOScenario) string {
	// This library's queue tells when a Pop would block (client-go's has
	// no length); the client-go run then skips the same Pops.
	ours := newDiffOurFIFO(s)
	oursTrace := diffRunFIFO(s, ours, func(int) bool { return ours.wouldBlock() })
	theirs := newDiffClientGoFIFO(s)
	watchdog := time.AfterFunc(diffClientGoPopTimeout, theirs.fifo.Close)
	theirsTrace := diffRunFIFO(s, theirs, func(i int) bool {
		return oursTrace.Steps[i].Pop != nil && oursTrace.Steps[i].Pop.Skipped
	})
	watchdog.Stop()
	if reflect.DeepEqual(theirsTrace, oursTrace) {
		return "" // fast path: cmp.Diff costs more than the scenario
	}
	return cmp.Diff(theirsTrace, oursTrace)
}

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
	deltas, err := o.fifo.Pop(context.Background(), func(deltas Deltas[*corev1.Pod], isInInitialList bool) error {
		res.IsInInitialList = isInInitialList
		if failProcess {
			return errors.New("difftest: process fails")
		}
		for _, d := range deltas {
			if d.Type == Deleted {
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

// diffCheckFIFO runs one scenario and, on a difference, shrinks it and
// reports the seed (or fuzz input), the smallest failing scenario and its
// diff.
func diffCheckFIFO(t *testing.T, what string, s diffFIFOScenario) bool {
	t.Helper()
	diff := diffCompareFIFO(s)
	if diff == "" {
		return true
	}
	small := s
	small.Ops = diffShrink(s.Ops, func(ops []diffFIFOOp) bool {
		c := s
		c.Ops = ops
		return diffCompareFIFO(c) != ""
	})
	t.Errorf("DeltaFIFO differs from client-go for %s.\nSmallest failing scenario:\n%s(-client-go +ours):\n%s",
		what, small, diffCompareFIFO(small))
	return false
}

// TestDiffDeltaFIFO runs DIFFTEST_SCENARIOS (default 10,000) random
// scenarios through both DeltaFIFOs. Replay one with DIFFTEST_SEED=<seed>
// DIFFTEST_SCENARIOS=1.
func TestDiffDeltaFIFO(t *testing.T) {
	t.Parallel()
	first, n := diffFirstSeed(t), diffScenarioCount(t)
	failures := 0
	for seed := first; seed < first+uint64(n); seed++ {
		s := diffGenFIFOScenario(newDiffSeeded(seed))
		if !diffCheckFIFO(t, fmt.Sprintf("seed %d (DIFFTEST_SEED=%d DIFFTEST_SCENARIOS=1)", seed, seed), s) {
			if failures++; failures == 3 {
				t.Fatal("stopping after 3 failing scenarios")
			}
		}
	}
}

// FuzzDiffDeltaFIFO is TestDiffDeltaFIFO driven by fuzz input.
func FuzzDiffDeltaFIFO(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		diffCheckFIFO(t, fmt.Sprintf("fuzz input %q", data), diffGenFIFOScenario(&diffBytes{data: data}))
	})
}
