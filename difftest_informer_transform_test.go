package informer

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
)

// diffTransformScenarios is the number of scenarios of
// TestDiffInformerTransformFailures.
const diffTransformScenarios = 40

// diffMarkerNamespace holds the marker objects of
// TestDiffInformerTransformFailures, apart from the generated keys.
const diffMarkerNamespace = "marker"

// TestDiffInformerTransformFailures compares both informers on watch events
// whose object the transform rejects: the event is dropped, the resource
// version still advances, the events around it are unaffected. (A listed
// object the transform rejects is a documented difference, see
// docs/semantics.md: not generated.)
//
// It runs in real time, not in a synctest bubble like TestDiffInformer:
// client-go reports the failure through utilruntime.HandleError, whose rate
// limiter sleeps for 1 ms minus the time since a process-wide timestamp. In
// bubbles, whose clocks all start in 2000, that timestamp comes from another
// clock, and the reflector sleeps for an arbitrary time. Quiescence comes
// from a marker instead: after each batch of events an object in
// diffMarkerNamespace is added, and the harness waits until every handler
// on both sides got it and both reflectors report its resource version.
func TestDiffInformerTransformFailures(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= diffTransformScenarios; seed++ {
		c := newDiffSeeded(seed)
		gen := &diffInformerGen{c: c, g: newDiffObjGen(c), store: map[int]diffObj{}, active: map[int]bool{}, gated: map[int]bool{}}
		gen.sc.Config.Transform = true
		initial := gen.g.list(5)
		gen.setStore(initial)
		var batches [][]diffStep
		for range 1 + c.intn(4) {
			var batch []diffStep
			for range 1 + c.intn(5) {
				st := gen.event()
				st.Obj.FailTransform = diffChance(c, 1, 3)
				gen.apply(st)
				batch = append(batch, st)
			}
			batches = append(batches, batch)
		}
		traces, err := diffRunTransformScenario(t, initial, gen.g, 1+c.intn(2), batches)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(traces[0], traces[1]) {
			t.Errorf("seed %d: initial list %s, batches %v: (-client-go +ours):\n%s", seed, diffJoin(initial), batches, cmp.Diff(traces[0], traces[1]))
		}
	}
}

// diffRunTransformScenario runs the batches through both informers (with
// the harness's transform and handlers handlers) and returns their traces.
func diffRunTransformScenario(t *testing.T, initial []diffObj, g *diffObjGen, handlers int, batches [][]diffStep) ([2]diffInformerTrace, error) {
	var traces [2]diffInformerTrace
	ctx, cancel := context.WithCancel(diffQuietContext(t.Context()))
	cfg := diffInformerConfig{Transform: true}
	sides := [2]diffInformerSide{newDiffClientGoSide(cfg), newDiffOurSide(t, cfg)}
	recs := make([][2]*diffRecorder, handlers)
	listRV := g.nextRV()
	for i, side := range sides {
		side.fake().SetWatchBuffer(256)
		side.fake().SetList(listRV, diffPods(initial)...)
		for h := range recs {
			recs[h][i] = &diffRecorder{}
			if _, err := side.addHandler(recs[h][i], nil); err != nil {
				cancel()
				return traces, err
			}
		}
	}
	done := make(chan struct{}, 2)
	for _, side := range sides {
		go func() {
			side.run(ctx)
			done <- struct{}{}
		}()
	}
	defer func() {
		cancel()
		<-done
		<-done
	}()
	for b, batch := range batches {
		marker := diffObj{Namespace: diffMarkerNamespace, Name: "m" + strconv.Itoa(b), UID: "marker", RV: g.nextRV()}
		for i, side := range sides {
			if _, err := side.fake().WaitForCalls(ctx, 2); err != nil { // list, then watch
				return traces, err
			}
			for _, st := range batch {
				if err := side.fake().Send(ctx, watch.Event{Type: st.EventType, Object: st.Obj.pod()}); err != nil {
					return traces, err
				}
			}
			if err := side.fake().Add(ctx, marker.pod()); err != nil {
				return traces, err
			}
			if err := diffWaitForMarker(side, recs, i, marker); err != nil {
				return traces, fmt.Errorf("%T: %w", side, err)
			}
			traces[i].States = append(traces[i].States, diffInformerState{
				Step:       fmt.Sprintf("batch %d", b),
				HasSynced:  side.hasSynced(),
				LastSyncRV: side.lastSyncResourceVersion(),
				StoreRV:    side.storeResourceVersion(),
				Store:      side.stored(),
			})
		}
	}
	for i := range sides {
		traces[i].Notes = map[int][]diffNote{}
		for h := range recs {
			traces[i].Notes[h] = recs[h][i].recorded()
		}
	}
	return traces, nil
}

// diffWaitForMarker waits until every handler of side i got marker and the
// side's reflector reports its resource version.
func diffWaitForMarker(side diffInformerSide, recs [][2]*diffRecorder, i int, marker diffObj) error {
	arrived := waitUntil(func() bool {
		arrived := side.lastSyncResourceVersion() == marker.RV
		for _, rec := range recs {
			notes := rec[i].recorded()
			arrived = arrived && len(notes) > 0 && notes[len(notes)-1].RV == marker.RV
		}
		return arrived
	})
	if !arrived {
		return fmt.Errorf("marker %s did not arrive within %v", marker, plTimeout)
	}
	return nil
}
