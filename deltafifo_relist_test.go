package informer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestDeltaFIFOReplaceDeletesKeysOnlyInTheQueue(t *testing.T) {
	obj, objV2 := NewPod("ns", "foo", "2"), NewPod("ns", "foo", "3")
	tests := []struct {
		name         string
		emitReplaced bool
		ops          fifoOp
		want         []Delta[*corev1.Pod]
	}{{
		name: "added object",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace(nil, "0"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoFSU(obj)},
	}, {
		name:         "replaced object gets a single deletion",
		emitReplaced: true,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace(nil, "0"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoDelta(DeltaReplaced, obj), fifoFSU(obj)},
	}, {
		name: "deleted object gets no second deletion",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Delete(obj), f.Replace(nil, "0"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoDelta(DeltaDeleted, obj)},
	}, {
		name: "synced object gets a single deletion",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace(nil, "0"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoDelta(DeltaSync, obj), fifoDelta(DeltaSync, obj), fifoFSU(obj)},
	}, {
		name: "several relists delete once",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace(nil, "0"), f.Replace(nil, "1"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoFSU(obj)},
	}, {
		name: "recreated object is deleted with its newest state",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Delete(obj), f.Add(objV2), f.Replace(nil, "0"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, obj), fifoDelta(DeltaDeleted, obj), fifoDelta(DeltaAdded, objV2), fifoFSU(objV2)},
	}}
	for _, tt := range tests {
		for _, known := range []KeyListerGetter[*corev1.Pod]{nil, fifoKnown{}} {
			t.Run(fmt.Sprintf("%s/known objects %v", tt.name, known != nil), func(t *testing.T) {
				f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: known, EmitDeltaTypeReplaced: tt.emitReplaced})
				fifoMust(t, tt.ops(f))
				if diff := cmp.Diff([][]Delta[*corev1.Pod]{tt.want}, fifoDrainDeltas(t, f)); diff != "" {
					t.Errorf("popped (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDeltaFIFOReplaceDeletesKnownObjects(t *testing.T) {
	known := fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5"), NewPod("ns", "bar", "6"), NewPod("ns", "baz", "7")}}
	tests := []struct {
		name         string
		known        KeyListerGetter[*corev1.Pod]
		emitReplaced bool
		ops          fifoOp
		want         [][]Delta[*corev1.Pod]
		wantLog      string
	}{{
		name:  "a watched deletion is not repeated",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Delete(NewPod("ns", "baz", "10")), f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaDeleted, NewPod("ns", "baz", "10"))},
			{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))},
			{fifoFSU(NewPod("ns", "bar", "6"))},
		},
	}, {
		name:         "Replaced is emitted when asked for",
		known:        known,
		emitReplaced: true,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Delete(NewPod("ns", "baz", "10")), f.Replace([]*corev1.Pod{NewPod("ns", "foo", "6")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaDeleted, NewPod("ns", "baz", "10"))},
			{fifoDelta(DeltaReplaced, NewPod("ns", "foo", "6"))},
			{fifoFSU(NewPod("ns", "bar", "6"))},
		},
	}, {
		name:  "a queued object is deleted with its queued state",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(NewPod("ns", "baz", "10")), f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaAdded, NewPod("ns", "baz", "10")), fifoFSU(NewPod("ns", "baz", "10"))},
			{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))},
			{fifoFSU(NewPod("ns", "bar", "6"))},
		},
	}, {
		name:  "a recreated object is deleted with its newest state",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Delete(NewPod("ns", "bar", "6")), f.Add(NewPod("ns", "bar", "100")), f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaDeleted, NewPod("ns", "bar", "6")), fifoDelta(DeltaAdded, NewPod("ns", "bar", "100")), fifoFSU(NewPod("ns", "bar", "100"))},
			{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))},
			{fifoFSU(NewPod("ns", "baz", "7"))},
		},
	}, {
		name:  "a relisted object is deleted with its relisted state",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(
				f.Replace([]*corev1.Pod{NewPod("ns", "bar", "100"), NewPod("ns", "foo", "5")}, "0"),
				f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaSync, NewPod("ns", "bar", "100")), fifoFSU(NewPod("ns", "bar", "100"))},
			{fifoDelta(DeltaSync, NewPod("ns", "foo", "5")), fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))},
			{fifoFSU(NewPod("ns", "baz", "7"))},
		},
	}, {
		name: "without known objects only queued keys are deleted",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(NewPod("ns", "baz", "10")), f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
		},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaAdded, NewPod("ns", "baz", "10")), fifoFSU(NewPod("ns", "baz", "10"))},
			{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))},
		},
	}, {
		name:  "a key known objects cannot return is skipped",
		known: fifoKnown{pods: []*corev1.Pod{NewPod("ns", "bar", "6")}, listedOnly: []string{"ns/gone"}},
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return f.Replace(nil, "0")
		},
		want:    [][]Delta[*corev1.Pod]{{fifoFSU(NewPod("ns", "bar", "6"))}},
		wantLog: `Key listed by the known objects has no object; skipping it key="ns/gone"`,
	}, {
		name:  "failing known objects are skipped",
		known: fifoKnown{pods: []*corev1.Pod{NewPod("ns", "bar", "6")}, err: errors.New("store unavailable")},
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(NewPod("ns", "baz", "1")), f.Replace(nil, "0"))
		},
		want:    [][]Delta[*corev1.Pod]{{fifoDelta(DeltaAdded, NewPod("ns", "baz", "1")), fifoFSU(NewPod("ns", "baz", "1"))}},
		wantLog: `Looking up a known object failed; skipping it err="store unavailable" key="ns/bar"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, log := fifoLogger(t)
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: tt.known, EmitDeltaTypeReplaced: tt.emitReplaced, Logger: logger})
			fifoMust(t, tt.ops(f))
			if diff := cmp.Diff(tt.want, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
			fifoCheckLog(t, log(), tt.wantLog)
		})
	}
}

// A relisted object must be delivered even when its key's last queued
// delta is a deletion (kubernetes issue 83810).
func TestDeltaFIFOReplaceAfterAQueuedDeletion(t *testing.T) {
	oldObj, newObj := NewPod("ns", "foo", "1"), NewPod("ns", "foo", "2")
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: fifoKnown{pods: []*corev1.Pod{oldObj}}})
	fifoMust(t, f.Delete(oldObj))
	fifoMust(t, f.Replace([]*corev1.Pod{newObj}, ""))
	want := [][]Delta[*corev1.Pod]{{fifoDelta(DeltaDeleted, oldObj), fifoDelta(DeltaSync, newObj)}}
	if diff := cmp.Diff(want, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOResync(t *testing.T) {
	known := fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5"), NewPod("ns", "bar", "6")}}
	tests := []struct {
		name    string
		known   KeyListerGetter[*corev1.Pod]
		ops     fifoOp
		want    [][]Delta[*corev1.Pod]
		wantLog string
	}{{
		name:  "every known object is synced",
		known: known,
		ops:   func(f *DeltaFIFO[*corev1.Pod]) error { return f.Resync() },
		want:  [][]Delta[*corev1.Pod]{{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))}, {fifoDelta(DeltaSync, NewPod("ns", "bar", "6"))}},
	}, {
		name:    "a key known objects cannot return is skipped",
		known:   fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5")}, listedOnly: []string{"ns/gone"}},
		ops:     func(f *DeltaFIFO[*corev1.Pod]) error { return f.Resync() },
		want:    [][]Delta[*corev1.Pod]{{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))}},
		wantLog: `Key listed by the known objects has no object; skipping it key="ns/gone"`,
	}, {
		name:  "a queued update is not followed by an older sync",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Update(NewPod("ns", "foo", "7")), f.Resync())
		},
		want: [][]Delta[*corev1.Pod]{{fifoDelta(DeltaUpdated, NewPod("ns", "foo", "7"))}, {fifoDelta(DeltaSync, NewPod("ns", "bar", "6"))}},
	}, {
		name:  "a queued deletion is not followed by a sync",
		known: known,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Delete(NewPod("ns", "foo", "10")), f.Resync())
		},
		want: [][]Delta[*corev1.Pod]{{fifoDelta(DeltaDeleted, NewPod("ns", "foo", "10"))}, {fifoDelta(DeltaSync, NewPod("ns", "bar", "6"))}},
	}, {
		name: "without known objects nothing happens",
		ops:  func(f *DeltaFIFO[*corev1.Pod]) error { return f.Resync() },
	}, {
		name:    "failing known objects are skipped",
		known:   fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5")}, err: errors.New("store unavailable")},
		ops:     func(f *DeltaFIFO[*corev1.Pod]) error { return f.Resync() },
		wantLog: `Looking up a known object failed; skipping it err="store unavailable" key="ns/foo"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, log := fifoLogger(t)
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: tt.known, Logger: logger})
			fifoMust(t, tt.ops(f))
			if diff := cmp.Diff(tt.want, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
			fifoCheckLog(t, log(), tt.wantLog)
		})
	}
}

func TestDeltaFIFOHasSynced(t *testing.T) {
	a, b := NewPod("ns", "a", "1"), NewPod("ns", "b", "2")
	add := func(p *corev1.Pod) fifoOp { return func(f *DeltaFIFO[*corev1.Pod]) error { return f.Add(p) } }
	replace := func(list ...*corev1.Pod) fifoOp {
		return func(f *DeltaFIFO[*corev1.Pod]) error { return f.Replace(list, "0") }
	}
	pop := func(f *DeltaFIFO[*corev1.Pod]) error { _, err := f.Pop(context.Background(), nil); return err }
	deleteA := func(f *DeltaFIFO[*corev1.Pod]) error { return f.Delete(a) }
	requeueA := func(f *DeltaFIFO[*corev1.Pod]) error {
		return f.AddIfNotPresent([]Delta[*corev1.Pod]{fifoDelta(DeltaAdded, a)})
	}
	invalidAdd := func(f *DeltaFIFO[*corev1.Pod]) error {
		if err := f.Add(NewPod("ns", "", "1")); err == nil {
			return errors.New("an unnamed object was accepted")
		}
		return nil
	}
	tests := []struct {
		name string
		ops  []fifoOp
		want bool
	}{
		{name: "nothing happened", want: false},
		{name: "add first", ops: []fifoOp{add(a)}, want: true},
		{name: "delete of an unknown key first", ops: []fifoOp{deleteA}, want: true},
		{name: "add if not present first", ops: []fifoOp{requeueA}, want: true},
		{name: "invalid add first", ops: []fifoOp{invalidAdd}, want: false},
		{name: "empty replace", ops: []fifoOp{replace()}, want: true},
		{name: "replace not popped", ops: []fifoOp{replace(a, b)}, want: false},
		{name: "replace half popped", ops: []fifoOp{replace(a, b), pop}, want: false},
		{name: "replace popped", ops: []fifoOp{replace(a, b), pop, pop}, want: true},
		{name: "replace with a duplicate key popped", ops: []fifoOp{replace(a, NewPod("ns", "a", "2")), pop}, want: true},
		{name: "add after a replace", ops: []fifoOp{replace(a), add(b)}, want: false},
		{name: "second replace after the first is popped", ops: []fifoOp{replace(a), pop, replace(a, b)}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
			for _, op := range tt.ops {
				fifoMust(t, op(f))
			}
			if got := f.HasSynced(); got != tt.want {
				t.Errorf("HasSynced() = %v, want %v", got, tt.want)
			}
		})
	}
}
func TestDeltaFIFOHasSyncedCountsRelistDeletions(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{
		KnownObjects: fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5"), NewPod("ns", "bar", "6"), NewPod("ns", "baz", "7")}},
	})
	fifoMust(t, f.Replace([]*corev1.Pod{NewPod("ns", "foo", "5")}, "0"))
	want := []fifoPopped{
		{Deltas: []Delta[*corev1.Pod]{fifoDelta(DeltaSync, NewPod("ns", "foo", "5"))}, Initial: true},
		{Deltas: []Delta[*corev1.Pod]{fifoFSU(NewPod("ns", "bar", "6"))}, Initial: true},
		{Deltas: []Delta[*corev1.Pod]{fifoFSU(NewPod("ns", "baz", "7"))}, Initial: true},
		{Deltas: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, NewPod("ns", "qux", "8"))}, Initial: false},
	}
	var got []fifoPopped
	var synced []bool
	for range 3 {
		synced = append(synced, f.HasSynced())
		got = append(got, fifoPop(t, f))
	}
	synced = append(synced, f.HasSynced())
	fifoMust(t, f.Add(NewPod("ns", "qux", "8")))
	got = append(got, fifoPop(t, f))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, false, true}, synced); diff != "" {
		t.Errorf("HasSynced before each pop and at the end (-want +got):\n%s", diff)
	}
}
