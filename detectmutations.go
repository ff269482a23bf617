package informer

import (
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
	// mutated counts the objects found modified.
	mutated atomic.Int64
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

// check compares every tracked object with its copy, logs each newly
// modified one with where it was handed out, and forgets the objects that
// left the cache more than mutationRetention ago.
func (d *mutationDetector[T]) check(logger klog.Logger) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for obj, t := range d.tracked {
		if !t.reported && !reflect.DeepEqual(obj, t.copy) {
			t.reported = true
			d.mutated.Add(1)
			places := make([]string, 0, len(t.places)+1)
			for _, p := range t.places {
				places = append(places, p.String())
			}
			if t.more > 0 {
				places = append(places, strconv.Itoa(t.more)+" more")
			}
			logger.Error(nil, "A cached object was modified: objects from the cache are shared and must be copied (DeepCopy) before they are changed",
				"object", klog.KObj(obj), "handedOutTo", places, "diff", diff.Diff(t.copy, obj))
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
