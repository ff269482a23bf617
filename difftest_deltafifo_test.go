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
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
// this library handles differently on purpose (docs/semantics.md, section
// DeltaFIFO, and deltafifo.go's documentation):
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
// cov (may be nil) counts what the scenario exercised.
func diffCompareFIFO(s diffFIFOScenario, cov *diffCoverage) string {
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
	diffCoverFIFO(cov, s, theirsTrace)
	if reflect.DeepEqual(theirsTrace, oursTrace) {
		return "" // fast path: cmp.Diff costs more than the scenario
	}
	return cmp.Diff(theirsTrace, oursTrace)
}

// diffCheckFIFO runs one scenario and, on a difference, shrinks it and
// reports the seed (or fuzz input), the smallest failing scenario and its
// diff.
func diffCheckFIFO(t *testing.T, what string, s diffFIFOScenario, cov *diffCoverage) bool {
	t.Helper()
	diff := diffCompareFIFO(s, cov)
	if diff == "" {
		return true
	}
	small := s
	small.Ops = diffShrink(s.Ops, func(ops []diffFIFOOp) bool {
		c := s
		c.Ops = ops
		return diffCompareFIFO(c, nil) != ""
	})
	t.Errorf("DeltaFIFO differs from client-go for %s.\nSmallest failing scenario:\n%s(-client-go +ours):\n%s",
		what, small, diffCompareFIFO(small, nil))
	return false
}

// TestDiffDeltaFIFO runs DIFFTEST_SCENARIOS (default 10,000) random
// scenarios through both DeltaFIFOs. Replay one with DIFFTEST_SEED=<seed>
// DIFFTEST_SCENARIOS=1.
func TestDiffDeltaFIFO(t *testing.T) {
	t.Parallel()
	first, n := diffFirstSeed(t), diffScenarioCount(t)
	cov := &diffCoverage{}
	t.Cleanup(func() { t.Logf("What the scenarios exercised (client-go's side):\n%s", cov.report()) })
	failures := 0
	for seed := first; seed < first+uint64(n); seed++ {
		s := diffGenFIFOScenario(newDiffSeeded(seed))
		if !diffCheckFIFO(t, fmt.Sprintf("seed %d (DIFFTEST_SEED=%d DIFFTEST_SCENARIOS=1)", seed, seed), s, cov) {
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
		diffCheckFIFO(t, fmt.Sprintf("fuzz input %q", data), diffGenFIFOScenario(&diffBytes{data: data}), nil)
	})
}

// diffCoverFIFO counts what a scenario exercised, from client-go's trace.
func diffCoverFIFO(cov *diffCoverage, s diffFIFOScenario, tr diffFIFOTrace) {
	if cov == nil {
		return
	}
	cov.add("scenarios", 1)
	if s.KnownObjects {
		cov.add("scenarios with KnownObjects", 1)
	}
	if s.EmitReplaced {
		cov.add("scenarios with EmitDeltaTypeReplaced", 1)
	}
	for i, step := range tr.Steps {
		op := s.Ops[i]
		name := "op: " + strings.Fields(op.String())[0]
		if op.Nil {
			name += " (nil object)"
		} else if op.Obj.FailTransform {
			name += " (transform fails)"
		}
		cov.add(name, 1)
		if step.Err {
			cov.add("op returned an error", 1)
		}
		if step.Pop != nil && step.Pop.Skipped {
			cov.add("Pop skipped (queue empty)", 1)
		}
	}
	if len(tr.Steps) > 0 && tr.Steps[len(tr.Steps)-1].HasSynced {
		cov.add("scenarios ending synced", 1)
	}
	pops := slices.Clone(tr.Drain)
	for _, step := range tr.Steps {
		if step.Pop != nil {
			pops = append(pops, *step.Pop)
		}
	}
	for _, pop := range pops {
		if pop.IsInInitialList {
			cov.add("pop: in initial list", 1)
		}
		if len(pop.Deltas) > 1 {
			cov.add("pop: several deltas", 1)
		}
		for _, d := range pop.Deltas {
			name := "delta: " + d.Type
			if d.FinalStateUnknown {
				name += " (final state unknown)"
			}
			cov.add(name, 1)
		}
	}
}
