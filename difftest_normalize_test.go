package informer

import (
	"cmp"
	"slices"
	"strings"
)

// diffNormalize removes from one side's informer trace the differences
// that are not divergences. It is the only place where the informer harness
// tolerates a difference; each rule says why. side is 0 for client-go, 1 for
// this library.
//
// Orders that client-go leaves to Go's map iteration (and this library to
// its index layout) are removed by sorting by key:
//
//   - the deletions a relist infers: client-go emits them in the order its
//     indexer lists keys; each run of consecutive final-state-unknown
//     deletions is sorted;
//   - a periodic resync's updates: client-go re-delivers its indexer's List()
//     in map order; each run of consecutive updates whose old and new object
//     are one object is sorted;
//   - a handler added to a running informer first gets the cached objects in
//     List() order: its leading run of initial-list adds is sorted (for a
//     handler added before Run, those adds follow the list's order, which is
//     compared as is);
//   - with streaming lists, client-go collects the streamed objects in a
//     temporary cache.Store and replaces with its List(), in map order: the
//     calls a list produced are sorted, deletions first.
//
// A handler removed while blocked in a call gets the calls up to that one:
// if it was blocked inside one of the runs above, it got an arbitrary part
// of it. So for a removed handler, the identity of the objects in a
// trailing run is not compared, only how many calls of which kind it got.
//
// A divergence of client-go, not of this library: with streaming lists,
// client-go v0.37.2 transforms each listed object twice (its reflector's
// temporary store applies the informer's transform, then RealFIFO.Replace
// applies it again), where this library guarantees one transform per
// object (docs/semantics.md). client-go's double mark "tt" on listed objects
// is counted as one.
func diffNormalize(side int, tr *diffInformerTrace, cfg diffInformerConfig, handlers []*diffHandlerRun) {
	if side == 0 && cfg.Streaming && cfg.Transform {
		for i := range tr.States {
			for j := range tr.States[i].Store {
				tr.States[i].Store[j].Transformed = strings.Replace(tr.States[i].Store[j].Transformed, "tt", "t", 1)
			}
		}
		for _, notes := range tr.Notes {
			for j := range notes {
				notes[j].Transformed = strings.Replace(notes[j].Transformed, "tt", "t", 1)
			}
		}
	}
	for _, h := range handlers {
		var lists [][2]int
		if cfg.Streaming {
			lists = h.lists[side]
		}
		tr.Notes[h.id] = diffNormalizeNotes(tr.Notes[h.id], h.late, h.removed, lists)
	}
}

// diffNormalizeNotes applies diffNormalize's rules to one handler's calls;
// lists are the ranges of calls produced by streamed lists.
func diffNormalizeNotes(notes []diffNote, late, removed bool, lists [][2]int) []diffNote {
	byKey := func(a, b diffNote) int { return strings.Compare(a.Key, b.Key) }
	isFSUDelete := func(n diffNote) bool { return n.Callback == "delete" && n.FinalStateUnknown }
	// unordered are the ranges whose order is arbitrary; in a list's range
	// the kind of call is arbitrary too (adds and updates mix).
	type span struct {
		from, to int
		list     bool
	}
	var unordered []span
	if late {
		end := 0
		for end < len(notes) && notes[end].Callback == "add" && notes[end].IsInInitialList {
			end++
		}
		unordered = append(unordered, span{0, end, false})
	}
	runs := []func(diffNote) bool{
		isFSUDelete,
		func(n diffNote) bool { return n.Callback == "update" && n.SameObject },
	}
	for _, inRun := range runs {
		for start := 0; start < len(notes); {
			end := start
			for end < len(notes) && inRun(notes[end]) {
				end++
			}
			unordered = append(unordered, span{start, end, false})
			start = max(end, start+1)
		}
	}
	for _, r := range unordered {
		slices.SortStableFunc(notes[r.from:r.to], byKey)
	}
	for _, r := range lists {
		to := min(r[1], len(notes))
		from := min(r[0], to)
		slices.SortStableFunc(notes[from:to], func(a, b diffNote) int {
			// Deletions come first in a relist, then the listed objects.
			if c := cmp.Compare(diffBoolRank(!isFSUDelete(a)), diffBoolRank(!isFSUDelete(b))); c != 0 {
				return c
			}
			return byKey(a, b)
		})
		unordered = append(unordered, span{from, to, true})
	}
	if removed {
		for _, r := range unordered {
			if r.to != len(notes) || r.to == r.from {
				continue
			}
			for i := r.from; i < r.to; i++ {
				n := notes[i]
				notes[i] = diffNote{Callback: n.Callback, Key: "<any>", FinalStateUnknown: n.FinalStateUnknown, SameObject: n.SameObject}
				if r.list {
					notes[i] = diffNote{Callback: "<any>", Key: "<any>"}
				}
			}
		}
	}
	return notes
}

func diffBoolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The runner finds the ranges of calls a list produced (the input of the
// streamed-list rule above) by counting calls and list requests.

// counts returns, per handler and side, how many calls it got so far.
func (r *diffRunner) counts() map[*diffHandlerRun][2]int {
	counts := map[*diffHandlerRun][2]int{}
	for _, h := range r.handlers {
		counts[h] = [2]int{h.rec[0].count(), h.rec[1].count()}
	}
	return counts
}

// diffCalls counts the requests a fake received: lists (list requests and
// streaming watch requests) and watch requests (streaming or not).
type diffCalls struct{ lists, watches int }

func (r *diffRunner) callCounts() [2]diffCalls {
	var counts [2]diffCalls
	for i, side := range r.sides {
		for _, call := range side.fake().Calls() {
			streaming := call.Options.SendInitialEvents != nil && *call.Options.SendInitialEvents
			if call.Verb == "list" || streaming {
				counts[i].lists++
			}
			if call.Verb == "watch" {
				counts[i].watches++
			}
		}
	}
	return counts
}

// noteLists records, if a list was requested during the step, that the
// calls each handler got since before came from a list being applied. A
// blocked handler has not got them all yet: its range is closed by
// closeLists when it is released.
func (r *diffRunner) noteLists(before map[*diffHandlerRun][2]int, relisted bool) {
	if !relisted {
		return
	}
	for _, h := range r.handlers {
		if len(h.gates) > 0 {
			if !h.listOpen {
				h.listOpen, h.openList = true, before[h]
			}
			continue
		}
		for i := range r.sides {
			if from, to := before[h][i], h.rec[i].count(); to > from {
				h.lists[i] = append(h.lists[i], [2]int{from, to})
			}
		}
	}
}

// closeLists closes h's open list range, once h has been released and is
// idle.
func (r *diffRunner) closeLists(h *diffHandlerRun) {
	if !h.listOpen {
		return
	}
	h.listOpen = false
	for i := range r.sides {
		h.lists[i] = append(h.lists[i], [2]int{h.openList[i], h.rec[i].count()})
	}
}
