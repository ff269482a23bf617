package informer

import (
	"bytes"
	"maps"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The cache mutation detector, for tests and CI: like client-go's
// KUBE_CACHE_MUTATION_DETECTOR, it keeps a deep copy of every object the
// informer caches and compares the two periodically, but it also records
// where each object was handed out (the handlers it was delivered to, the
// callers of the Lister that returned it), and it logs and counts a
// mutation instead of panicking.

// mutationDetectorEnv is the environment variable that enables the detector
// in every informer, as it does in client-go.
const mutationDetectorEnv = "KUBE_CACHE_MUTATION_DETECTOR"

// mutationDetectorFromEnv reports whether the environment enables the
// detector in every informer that does not turn it off itself.
func mutationDetectorFromEnv() bool {
	enabled, _ := strconv.ParseBool(os.Getenv(mutationDetectorEnv))
	return enabled
}

const (
	// mutationCheckPeriod is how often the cached objects are compared with
	// their copies while the informer runs (as in client-go).
	mutationCheckPeriod = time.Second
	// mutationRetention is how long an object is still checked after it left
	// the cache: handlers may hold it for a while (as in client-go).
	mutationRetention = 2 * time.Minute
	// maxHandOuts is the number of distinct places remembered per object.
	maxHandOuts = 8
	// handOutStackDepth is the number of caller frames remembered per place.
	handOutStackDepth = 8
)

// mutationDetector keeps a deep copy of each cached object and reports the
// objects that no longer equal their copy. It is nil, and costs one nil
// check per batch of events, per handler batch and per Lister call, unless
// enabled.
type mutationDetector[T Object] struct {
	store *Indexer[T]
	clock clock.WithTicker

	mu      sync.Mutex
	tracked map[T]*trackedObject[T]
	// places interns hand-out places, so that recording one costs a map
	// lookup and no allocation once seen.
	places map[handOutKey]*handOutPlace
	// mutated counts the objects found modified, mutatedValues the
	// values found written into (one report each).
	mutated, mutatedValues atomic.Int64
	// The rate limit of the reports (logReport), guarded by mu: the start
	// of the current interval, the reports logged in it, and the reports
	// not logged since the last one logged.
	logWindow      time.Time
	loggedInWindow int
	unlogged       int
}

// trackedObject is the copy of a cached object and where it was handed out.
type trackedObject[T Object] struct {
	copy T
	// left is when a check first found the object no longer cached; zero
	// while it is.
	left time.Time
	// places are the first maxHandOuts distinct places the object was
	// handed out to; more counts the others.
	places   []*handOutPlace
	more     int
	reported bool
}

// handOutKey identifies a hand-out place: a handler method, or an API and
// its caller's stack.
type handOutKey struct {
	what  string
	stack [handOutStackDepth]uintptr
}

// handOutPlace is an interned handOutKey.
type handOutPlace struct{ key handOutKey }

// String describes the place: the handler method, or the API and the
// caller's frames.
func (p *handOutPlace) String() string {
	var b strings.Builder
	b.WriteString(p.key.what)
	n := 0
	for n < len(p.key.stack) && p.key.stack[n] != 0 {
		n++
	}
	if n == 0 {
		return b.String()
	}
	frames := runtime.CallersFrames(p.key.stack[:n])
	sep := " called from "
	for {
		f, more := frames.Next()
		b.WriteString(sep)
		b.WriteString(f.Function)
		b.WriteString(" (")
		b.WriteString(f.File)
		b.WriteString(":")
		b.WriteString(strconv.Itoa(f.Line))
		b.WriteString(")")
		sep = "; "
		if !more {
			return b.String()
		}
	}
}

// newMutationDetector returns a detector for the objects of store.
func newMutationDetector[T Object](store *Indexer[T], clk clock.WithTicker) *mutationDetector[T] {
	return &mutationDetector[T]{
		store:   store,
		clock:   clk,
		tracked: map[T]*trackedObject[T]{},
		places:  map[handOutKey]*handOutPlace{},
	}
}

// track copies objects that have just been cached.
func (d *mutationDetector[T]) track(objs ...T) {
	copies := make([]T, len(objs))
	for k, obj := range objs {
		// The assertion cannot fail: DeepCopyObject returns the same type.
		copies[k], _ = obj.DeepCopyObject().(T)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, obj := range objs {
		if _, ok := d.tracked[obj]; !ok {
			d.tracked[obj] = &trackedObject[T]{copy: copies[k]}
		}
	}
}

// trackWrites copies the objects stored by records, which the caller has
// just applied: every record but deletes and writes that failed.
func (d *mutationDetector[T]) trackWrites(records []queueRecord[T]) {
	objs := make([]T, 0, len(records))
	for k := range records {
		if rec := &records[k]; rec.op != opDelete && rec.prep.err == nil {
			objs = append(objs, rec.obj)
		}
	}
	d.track(objs...)
}

// handedOutToCaller records that objs were returned by the API what to its
// caller; skip is the number of frames between the API and this method.
func (d *mutationDetector[T]) handedOutToCaller(what string, skip int, objs ...T) {
	key := handOutKey{what: what}
	runtime.Callers(skip+2, key.stack[:])
	d.handedOut(key, objs...)
}

// handedOut records that objs were handed out at the place key.
func (d *mutationDetector[T]) handedOut(key handOutKey, objs ...T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	place := d.placeLocked(key)
	for _, obj := range objs {
		d.recordLocked(place, obj)
	}
}

// placeLocked returns the interned place for key. d.mu must be held.
func (d *mutationDetector[T]) placeLocked(key handOutKey) *handOutPlace {
	place := d.places[key]
	if place == nil {
		place = &handOutPlace{key: key}
		d.places[key] = place
	}
	return place
}

// recordLocked records that obj was handed out at place. d.mu must be held.
func (d *mutationDetector[T]) recordLocked(place *handOutPlace, obj T) {
	t := d.tracked[obj]
	if t == nil || slices.Contains(t.places, place) {
		return
	}
	if len(t.places) < maxHandOuts {
		t.places = append(t.places, place)
	} else {
		t.more++
	}
}

// handlerHandOuts returns the hand-out places of the handler called name,
// by notification kind.
func handlerHandOuts(name string) [notifyDelete + 1]handOutKey {
	var keys [notifyDelete + 1]handOutKey
	keys[notifyAdd].what = "handler " + name + " (OnAdd)"
	keys[notifyUpdate].what = "handler " + name + " (OnUpdate)"
	keys[notifyDelete].what = "handler " + name + " (OnDelete)"
	return keys
}

// handedOutToHandler records the objects of a batch of notifications about
// to be delivered to a handler whose places are keys.
func (d *mutationDetector[T]) handedOutToHandler(keys *[notifyDelete + 1]handOutKey, batch []notification[T]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range batch {
		n := &batch[k]
		if n.kind == notifyNone || n.kind == notifyBookmark {
			continue
		}
		place := d.placeLocked(keys[n.kind])
		d.recordLocked(place, n.obj)
		if n.kind == notifyUpdate {
			d.recordLocked(place, n.old)
		}
	}
}

// check compares every tracked object with its copy and reports the newly
// modified ones, and forgets the objects that left the cache more than
// mutationRetention ago. A report is about one written value: a map,
// list, byte slice or struct a write changed (writtenValues), with every
// object found changed through it and where each of those was handed
// out. Without deduplication that is one object; with it, one write into
// a value objects share changes them all, and the writer is among the
// places of one of them only, so the report names them all and the places
// of all. Reports are rate-limited (logReport).
func (d *mutationDetector[T]) check(logger klog.Logger) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	reports := map[writtenValue]*mutationReport[T]{}
	for obj, t := range d.tracked {
		if !t.reported && !reflect.DeepEqual(obj, t.copy) {
			t.reported = true
			d.mutated.Add(1)
			for _, w := range writtenValues(obj, t.copy) {
				r := reports[w]
				if r == nil {
					r = &mutationReport[T]{}
					reports[w] = r
				}
				r.objects = append(r.objects, obj)
				r.tracked = append(r.tracked, t)
			}
		}
		if cached, ok := d.store.getByName(NameOf(obj)); ok && cached == obj {
			continue
		}
		switch {
		case t.left.IsZero():
			t.left = now
		case now.Sub(t.left) > mutationRetention:
			delete(d.tracked, obj)
		}
	}
	sorted := slices.Collect(maps.Values(reports))
	for _, r := range sorted {
		r.sort()
	}
	slices.SortFunc(sorted, func(a, b *mutationReport[T]) int { return strings.Compare(KeyOf(a.objects[0]), KeyOf(b.objects[0])) })
	for _, r := range sorted {
		d.mutatedValues.Add(1)
		d.logReport(logger, now, r)
	}
}

// final is the check when Run ends; it also logs how many reports the
// rate limit kept from the log since the last one logged.
func (d *mutationDetector[T]) final(logger klog.Logger) {
	d.check(logger)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unlogged > 0 {
		logger.Error(nil, "More cached values were modified than were logged (at most "+strconv.Itoa(mutationLogBurst)+" reports per "+mutationLogInterval.String()+")",
			"reportsNotLogged", d.unlogged)
		d.unlogged = 0
	}
}

const (
	// mutationLogBurst reports are logged per mutationLogInterval at most:
	// a program writing into cached objects in a loop would otherwise log
	// a report, with its diff, per object per check. The others are
	// counted (InformerStats.MutatedValues), and their number is logged
	// with the next report logged and when Run ends.
	mutationLogBurst    = 5
	mutationLogInterval = 10 * time.Second
	// maxReportedObjects and maxReportedPlaces bound the objects and
	// places a report names; it says how many more there are.
	maxReportedObjects = 20
	maxReportedPlaces  = 32
)

// mutationReport is the objects found changed through one written value.
type mutationReport[T Object] struct {
	objects []T
	tracked []*trackedObject[T]
}

// sort orders the objects by key.
func (r *mutationReport[T]) sort() {
	order := make([]int, len(r.objects))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(KeyOf(r.objects[a]), KeyOf(r.objects[b])) })
	objects, tracked := make([]T, len(order)), make([]*trackedObject[T], len(order))
	for i, k := range order {
		objects[i], tracked[i] = r.objects[k], r.tracked[k]
	}
	r.objects, r.tracked = objects, tracked
}

// logReport logs r, unless mutationLogBurst reports were logged in the
// current mutationLogInterval: then it only counts it. d.mu must be held.
func (d *mutationDetector[T]) logReport(logger klog.Logger, now time.Time, r *mutationReport[T]) {
	if now.Sub(d.logWindow) >= mutationLogInterval {
		d.logWindow, d.loggedInWindow = now, 0
	}
	if d.loggedInWindow >= mutationLogBurst {
		d.unlogged++
		return
	}
	d.loggedInWindow++
	objects := make([]string, 0, min(len(r.objects), maxReportedObjects)+1)
	for _, obj := range r.objects[:min(len(r.objects), maxReportedObjects)] {
		objects = append(objects, KeyOf(obj))
	}
	if n := len(r.objects) - maxReportedObjects; n > 0 {
		objects = append(objects, strconv.Itoa(n)+" more")
	}
	var places []string
	seen := map[*handOutPlace]bool{}
	more := 0
	for _, t := range r.tracked {
		more += t.more
		for _, p := range t.places {
			switch {
			case seen[p]:
			case len(places) < maxReportedPlaces:
				seen[p] = true
				places = append(places, p.String())
			default:
				seen[p] = true
				more++
			}
		}
	}
	if more > 0 {
		places = append(places, strconv.Itoa(more)+" more")
	}
	kv := []any{"objects", objects, "objectCount", len(r.objects), "handedOutTo", places,
		"diff", diff.Diff(r.tracked[0].copy, r.objects[0])}
	if d.unlogged > 0 {
		kv = append(kv, "reportsNotLoggedBefore", d.unlogged)
		d.unlogged = 0
	}
	logger.Error(nil, "A cached value was modified: objects from the cache are shared and must be copied (DeepCopy) before they are changed", kv...)
}

// writtenValue identifies a value written into: its address and type.
type writtenValue struct {
	addr uintptr
	typ  reflect.Type
}

// writtenValues returns the values obj was changed through, where it
// differs from its copy cp: for each difference, the innermost map, slice
// or pointed-to value of obj holding it (what was written into, and what
// the objects sharing it share), else obj itself.
func writtenValues[T Object](obj, cp T) []writtenValue {
	v := reflect.ValueOf(obj)
	self := writtenValue{addr: v.Pointer(), typ: v.Type()}
	var out []writtenValue
	diffValues(v.Elem(), reflect.ValueOf(cp).Elem(), self, &out, 0)
	if len(out) == 0 {
		// A difference reflect.DeepEqual sees and the walk does not (a
		// NaN, or nesting past maxDiffDepth).
		out = append(out, self)
	}
	return out
}

// maxDiffDepth bounds diffValues's recursion: a difference deeper is
// attributed to the value holding that depth.
const maxDiffDepth = 1000

// diffValues adds to out the values holding the differences between a,
// held by owner, and b, its copy (see writtenValues).
func diffValues(a, b reflect.Value, owner writtenValue, out *[]writtenValue, depth int) {
	add := func(w writtenValue) {
		if !slices.Contains(*out, w) {
			*out = append(*out, w)
		}
	}
	if depth > maxDiffDepth {
		add(owner)
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				add(owner)
			}
			return
		}
		diffValues(a.Elem(), b.Elem(), writtenValue{addr: a.Pointer(), typ: a.Type()}, out, depth+1)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() || a.Elem().Type() != b.Elem().Type() {
			if a.IsNil() != b.IsNil() || !a.IsNil() && a.Elem().Type() != b.Elem().Type() {
				add(owner)
			}
			return
		}
		diffValues(a.Elem(), b.Elem(), owner, out, depth+1)
	case reflect.Struct:
		for i := range a.NumField() {
			diffValues(a.Field(i), b.Field(i), owner, out, depth+1)
		}
	case reflect.Array:
		for i := range a.Len() {
			diffValues(a.Index(i), b.Index(i), owner, out, depth+1)
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			add(owner)
			return
		}
		if a.Len() == 0 {
			return
		}
		elems := writtenValue{addr: a.Pointer(), typ: a.Type()}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				add(elems)
			}
			return
		}
		for i := range a.Len() {
			diffValues(a.Index(i), b.Index(i), elems, out, depth+1)
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			add(owner)
			return
		}
		m := writtenValue{addr: a.Pointer(), typ: a.Type()}
		if a.Len() != b.Len() {
			add(m)
			return
		}
		for iter := a.MapRange(); iter.Next(); {
			bv := b.MapIndex(iter.Key())
			if !bv.IsValid() {
				add(m)
				return
			}
			diffValues(iter.Value(), bv, m, out, depth+1)
		}
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		if !a.Equal(b) {
			add(owner)
		}
	}
}

// run checks every mutationCheckPeriod until ctx is done.
func (d *mutationDetector[T]) run(done <-chan struct{}, logger klog.Logger) {
	ticker := d.clock.NewTicker(mutationCheckPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			return
		case <-ticker.C():
			d.check(logger)
		}
	}
}
