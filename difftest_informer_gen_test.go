package informer

// The generator of informer scenarios: it keeps a model of what the
// informers' stores hold, so that updates and deletes mostly hit known
// objects and relists keep, change and drop them.

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// diffInformerGen generates informer scenarios.
type diffInformerGen struct {
	c     diffChooser
	g     *diffObjGen
	sc    diffInformerScenario
	watch diffWatchModel
	// store is the content the informers' stores should have, by key
	// index: it makes updates and deletes hit known objects.
	store map[int]diffObj
	// active handlers, and which of them have an armed gate.
	active, gated map[int]bool
	nextID        int
}

func diffGenInformerScenario(c diffChooser) diffInformerScenario {
	gen := &diffInformerGen{c: c, g: newDiffObjGen(c), store: map[int]diffObj{},
		active: map[int]bool{}, gated: map[int]bool{}, watch: diffWatchModel{fresh: true}}
	return gen.generate()
}

// resyncPeriod picks a handler's requested resync period. 500ms is raised
// to the one-second minimum (and, before Run, lowers the check period). An
// informer without resync gets no handler period: client-go ignores it,
// where this one uses it or rejects it (a deliberate difference, see
// TestHandlerResyncWorksOnAnInformerWithoutResync).
func (gen *diffInformerGen) resyncPeriod() *time.Duration {
	var d time.Duration
	switch k := gen.c.intn(20); {
	case k < 6:
		return nil
	case k < 9:
		d = 0
	case k < 10:
		d = 500 * time.Millisecond
	default:
		d = time.Duration(1+gen.c.intn(3)) * diffResyncUnit
	}
	if gen.sc.Config.ResyncPeriod == 0 {
		d = 0
	}
	return &d
}

func (gen *diffInformerGen) generate() diffInformerScenario {
	c := gen.c
	sc := &gen.sc
	sc.ResyncMode = diffChance(c, 1, 3)
	sc.Config.Transform = diffChance(c, 1, 3)
	sc.Config.Streaming = diffChance(c, 1, 3)
	if sc.ResyncMode {
		sc.Config.ResyncPeriod = time.Duration(c.intn(3)) * diffResyncUnit
	}
	sc.InitialList = gen.g.list(5)
	sc.InitialRV = gen.g.nextRV()
	if !sc.ResyncMode && diffChance(c, 1, 5) {
		for range 1 + c.intn(2) {
			sc.InitialFailures = append(sc.InitialFailures, diffErrorCodes[c.intn(len(diffErrorCodes))])
		}
		gen.watch.fresh = false // the harness may have waited for a retry
	}
	gen.setStore(sc.InitialList)
	for range 1 + c.intn(3) {
		spec := diffHandlerSpec{ID: gen.nextID, Resync: gen.resyncPeriod(), Blocked: diffChance(c, 1, 8)}
		sc.Handlers = append(sc.Handlers, spec)
		gen.active[spec.ID] = true
		if spec.Blocked {
			gen.gated[spec.ID] = true
		}
		gen.nextID++
	}
	n := 5 + c.intn(20)
	if _, fuzzing := c.(*diffBytes); fuzzing {
		n = 60
	}
	for len(sc.Steps) < n && !c.exhausted() {
		st, ok := gen.step()
		if !ok || !gen.watch.allowed(st, sc.ResyncMode) {
			continue
		}
		gen.apply(st)
		sc.Steps = append(sc.Steps, st)
	}
	return *sc
}

// setStore sets the model store to a list.
func (gen *diffInformerGen) setStore(list []diffObj) {
	clear(gen.store)
	for _, o := range list {
		gen.store[diffKeyIndex(o)] = o
	}
}

// diffKeyIndex returns the key number of o.
func diffKeyIndex(o diffObj) int {
	return slices.Index(diffNamespaces, o.Namespace)*len(diffNames) + slices.Index(diffNames, o.Name)
}

// apply updates the generator's model after st.
func (gen *diffInformerGen) apply(st diffStep) {
	switch st.Kind {
	case diffStepEvent:
		if !st.Obj.FailTransform {
			if st.EventType == watch.Deleted {
				delete(gen.store, diffKeyIndex(st.Obj))
			} else {
				gen.store[diffKeyIndex(st.Obj)] = st.Obj
			}
		}
	case diffStepAddHandler:
		gen.active[st.ID] = true
		if st.Blocked {
			gen.gated[st.ID] = true
		}
	case diffStepRemoveHandler:
		delete(gen.active, st.ID) // a gate stays armed until released
	case diffStepArmGate:
		gen.gated[st.ID] = true
	case diffStepReleaseGate:
		delete(gen.gated, st.ID)
	}
	if gen.watch.apply(st) {
		gen.setStore(st.List)
	}
}

// pickHandler returns a handler ID from ids (sorted), or false if empty.
func (gen *diffInformerGen) pickHandler(ids map[int]bool) (int, bool) {
	if len(ids) == 0 {
		return 0, false
	}
	sorted := make([]int, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	return sorted[gen.c.intn(len(sorted))], true
}

// storedKey returns a key index present in the model store, or a random
// one when the store is empty or (1 in 4) anyway.
func (gen *diffInformerGen) storedKey() (int, bool) {
	if len(gen.store) == 0 || diffChance(gen.c, 1, 4) {
		i := gen.c.intn(diffKeyCount)
		_, ok := gen.store[i]
		return i, ok
	}
	keys := make([]int, 0, len(gen.store))
	for k := range gen.store {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[gen.c.intn(len(keys))], true
}

// event generates a watch event.
func (gen *diffInformerGen) event() diffStep {
	c, g := gen.c, gen.g
	i, known := gen.storedKey()
	ns, name := diffKey(i)
	obj := diffObj{Namespace: ns, Name: name, UID: g.uid(i, false), RV: g.nextRV()}
	var t watch.EventType
	switch k := c.intn(100); {
	case k < 35:
		t = watch.Added
		if known && diffChance(c, 2, 3) {
			obj.UID = g.uid(i, true) // re-created under the same name
		}
	case k < 75:
		t = watch.Modified
		if known && diffChance(c, 1, 5) {
			obj.RV = gen.store[i].RV // the resource version repeats
		}
	default:
		t = watch.Deleted
	}
	// No object the transform rejects: TestDiffInformerTransformFailures
	// covers those, in real time (see there why not in a bubble).
	return diffStep{Kind: diffStepEvent, EventType: t, Obj: obj}
}

// relist generates the list a relist finds: each stored object kept,
// changed (sometimes re-created) or gone, and some new ones, in random order.
func (gen *diffInformerGen) relist() []diffObj {
	c, g := gen.c, gen.g
	var list []diffObj
	for i := range diffKeyCount {
		old, known := gen.store[i]
		switch {
		case known && diffChance(c, 1, 3):
			list = append(list, old)
		case known && diffChance(c, 1, 2):
			list = append(list, diffObj{Namespace: old.Namespace, Name: old.Name, UID: g.uid(i, diffChance(c, 1, 5)), RV: g.nextRV()})
		case !known && diffChance(c, 1, 6):
			ns, name := diffKey(i)
			list = append(list, diffObj{Namespace: ns, Name: name, UID: g.uid(i, true), RV: g.nextRV()})
		}
	}
	for k := len(list) - 1; k > 0; k-- {
		j := c.intn(k + 1)
		list[k], list[j] = list[j], list[k]
	}
	return list
}

// step generates one step; false means "nothing fits, draw again".
func (gen *diffInformerGen) step() (diffStep, bool) {
	c := gen.c
	switch k := c.intn(100); {
	case k < 45:
		return gen.event(), true
	case k < 50:
		return diffStep{Kind: diffStepBookmark, RV: gen.g.nextRV()}, true
	case k < 58:
		st := diffStep{Kind: diffStepClose, List: gen.relist(), RV: gen.g.nextRV()}
		if diffChance(c, 1, 4) {
			st.WatchErr = diffErrorCodes[c.intn(len(diffErrorCodes))]
		}
		return st, true
	case k < 66:
		code := []int{410, 410, 500, 429}[c.intn(4)]
		return diffStep{Kind: diffStepFail, Code: code, List: gen.relist(), RV: gen.g.nextRV()}, true
	case k < 73:
		return diffStep{Kind: diffStepAdvance, D: time.Duration(1+c.intn(3)) * diffResyncUnit}, true
	case k < 79:
		if len(gen.active) >= 4 {
			return diffStep{}, false
		}
		gen.nextID++
		return diffStep{Kind: diffStepAddHandler, ID: gen.nextID - 1, Resync: gen.resyncPeriod(), Blocked: diffChance(c, 1, 6)}, true
	case k < 85:
		id, ok := gen.pickHandler(gen.active)
		// Shutting down waits for the handler: not while it may be blocked.
		return diffStep{Kind: diffStepRemoveHandler, ID: id, Shutdown: !gen.gated[id] && diffChance(c, 1, 2)}, ok
	case k < 92:
		ungated := map[int]bool{}
		for id := range gen.active {
			if !gen.gated[id] {
				ungated[id] = true
			}
		}
		id, ok := gen.pickHandler(ungated)
		return diffStep{Kind: diffStepArmGate, ID: id}, ok
	default:
		id, ok := gen.pickHandler(gen.gated)
		return diffStep{Kind: diffStepReleaseGate, ID: id}, ok
	}
}
