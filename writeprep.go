package informer

import (
	"errors"
	"hash/maphash"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writePrep is the store's prepared write (see pipeline.go): the part of
// storing or deleting an object that depends on the object alone, its name
// and the name's hash, its resource version, its labels and its index
// values. The informer computes it on the reflector's goroutine when an
// event is queued, so that the goroutine applying events to the cache, the
// informer's bottleneck, calls no index function and does not read the
// object again: by the time it applies an event, the object has usually
// left the CPU caches.
type writePrep struct {
	name ObjectName
	hash uint64 // name's hash in the Indexer's name table
	rv   string // the object's resource version
	// labels is the object's label map.
	labels map[string]string
	// pairs holds the same labels as a slice, in no particular order, or is
	// nil when they were not copied: then they are read from labels.
	pairs []labelPair
	// copyPairs tells prepArena.keep to copy labels into pairs. The queue
	// sets it (writePreparer.prepare) only when the store indexes a label
	// key, since otherwise no write reads a label, and the object has at
	// most maxScannedPairs labels, since label reads more from the map.
	copyPairs bool
	// values holds the values of the function kinds (one slice per user
	// index not served by the namespace lists, in kind order), for the
	// first indexCount user indexes; indexCount is -1 when they were not
	// computed.
	values     [][]string
	indexCount int
	// err is the error of an index function, from refreshPrep.
	err error
}

// labelPair is one label of an object.
type labelPair struct {
	key, value string
}

// maxScannedPairs is the most labels the queue copies as pairs, which
// label compares one by one; an object with more is read with a map
// lookup, so that reading k labels of an object with n costs O(k), not
// O(k·n).
const maxScannedPairs = 8

// label returns the value of the prepared object's label key, if it has
// it: from the pairs if they were copied, else from the label map, which
// holds the same labels.
func (p *writePrep) label(key string) (string, bool) {
	if p.pairs != nil {
		for i := range p.pairs {
			if p.pairs[i].key == key {
				return p.pairs[i].value, true
			}
		}
		return "", false
	}
	v, ok := p.labels[key]
	return v, ok
}

// appendLabelPairs appends the labels of labels to dst.
func appendLabelPairs(dst []labelPair, labels map[string]string) []labelPair {
	for k, v := range labels {
		dst = append(dst, labelPair{key: k, value: v})
	}
	return dst
}

// prepValues holds the index values of one prepared write until they are
// filed: in the prepArena of a queue chunk, or, for a write the Indexer
// applies at once, in place. Returned by value, it lets prepare run
// without allocating for up to len(inline) function kinds.
type prepValues struct {
	n      int
	inline [2][]string
	more   [][]string // every value once inline is full
}

// add appends the values of the next function kind.
func (v *prepValues) add(values []string) {
	if v.more == nil && v.n < len(v.inline) {
		v.inline[v.n] = values
		v.n++
		return
	}
	if v.more == nil {
		v.more = append(make([][]string, 0, 2*len(v.inline)), v.inline[:v.n]...)
	}
	v.more = append(v.more, values)
	v.n++
}

// slice returns the values added, in order.
func (v *prepValues) slice() [][]string {
	if v.more != nil {
		return v.more
	}
	return v.inline[:v.n]
}

// prepareWrite prepares storing (store true) or deleting obj, which must not
// be the zero T, for an Indexer whose name table uses seed and whose
// indexes are plan: it is the one place a write is prepared, for the
// queue (writePreparer), Indexer.Add and Update, and Replace. It fills p
// and v, which must be zero, in place. It takes no lock and may run
// concurrently with anything, as index functions may. The queue points
// p.values at v's values once they have their final place (prepArena.keep);
// a write applied at once passes v's values to contents.put beside p. An
// index function's error is returned with p.indexCount -1 and v empty.
func prepareWrite[T Object](plan *indexPlan[T], seed maphash.Seed, obj T, store bool, p *writePrep, v *prepValues) error {
	p.name = NameOf(obj)
	p.hash = hashObjectName(seed, p.name)
	p.rv = obj.GetResourceVersion()
	p.indexCount = -1
	if !store {
		return nil
	}
	p.labels = obj.GetLabels()
	if err := plan.prepare(obj, p.name, v); err != nil {
		*v = prepValues{}
		return err
	}
	p.indexCount = len(plan.indexes)
	return nil
}

// writePreparer is what the queue prepares an Indexer's writes with
// (writeStore.preparer): the Indexer's current indexes and its name seed,
// by value, so that the queue's call is a direct one that fills the
// queued record in place. Through an interface the compiler could not see
// that prepare keeps no pointer to the record, and would move every record
// to the heap; returning the prepared write by value instead copied it
// four times between prepareWrite and the record (BenchmarkQueueAndStore).
// The zero writePreparer belongs to no store and must not be used.
type writePreparer[T Object] struct {
	plan *atomic.Pointer[indexPlan[T]]
	seed maphash.Seed
	// labelsIndexed is the Indexer's: whether it indexes a label key.
	labelsIndexed *atomic.Bool
}

// preparer implements writeStore.
func (s *Indexer[T]) preparer() writePreparer[T] {
	return writePreparer[T]{plan: &s.published, seed: s.seed, labelsIndexed: &s.labelsIndexed}
}

var _ writeStore[*metav1.PartialObjectMetadata] = (*Indexer[*metav1.PartialObjectMetadata])(nil)

// prepare is prepareWrite with the Indexer's current indexes, into p and v
// (both zero). An index function that fails leaves the values uncomputed:
// the write computes them again and reports the error (refreshPrep).
//
// It marks the labels for copying (copyPairs) only while the Indexer
// indexes a label key: for a store that files no label the copy is wasted
// work on the reflector's goroutine (BenchmarkQueueAndStore). A key
// indexed between preparing and applying the write needs nothing more:
// without pairs, the label kind reads the object's label map
// (writePrep.label), which holds the same labels.
func (w writePreparer[T]) prepare(obj T, store bool, p *writePrep, v *prepValues) {
	_ = prepareWrite(w.plan.Load(), w.seed, obj, store, p, v)
	p.copyPairs = len(p.labels) > 0 && len(p.labels) <= maxScannedPairs && w.labelsIndexed.Load()
}

// prepArena holds the labels and index values of the prepared writes of one
// queue chunk, so that preparing a record allocates nothing once the chunk
// has been used. The queue keeps one per chunk, sets records, and never
// looks inside.
type prepArena struct {
	pairs  []labelPair
	values [][]string
	// records is the number of records the arena serves (its chunk's
	// size), which sizes its first allocations (see arenaSize).
	records int
}

// keep copies the index values v and, if p.copyPairs, the labels of the
// prepared store p into the arena and points p at the copies. A delete
// keeps nothing.
func (a *prepArena) keep(p *writePrep, v *prepValues) {
	if p.indexCount >= 0 {
		values := v.slice()
		if a.values == nil {
			a.values = make([][]string, 0, a.arenaSize(len(values)))
		}
		start := len(a.values)
		a.values = append(a.values, values...)
		p.values = a.values[start:len(a.values):len(a.values)]
	}
	if p.copyPairs {
		if a.pairs == nil {
			a.pairs = make([]labelPair, 0, a.arenaSize(len(p.labels)))
		}
		start := len(a.pairs)
		a.pairs = appendLabelPairs(a.pairs, p.labels)
		p.pairs = a.pairs[start:len(a.pairs):len(a.pairs)]
	}
}

// reset empties the arena for reuse, dropping its references.
func (a *prepArena) reset() {
	clear(a.pairs)
	clear(a.values)
	a.pairs, a.values = a.pairs[:0], a.values[:0]
}

// arenaSize is the capacity an arena starts with when its first record
// needs perRecord elements: enough for all its records if they are like
// the first, since the objects of one informer tend to look alike. An
// arena that must grow beyond it still does.
func (a *prepArena) arenaSize(perRecord int) int {
	return a.records * perRecord
}

// beginWrites takes the Indexer's write lock for a run of putPrepared and
// deletePrepared calls, and endWrites releases it. One lock round trip per
// run instead of per write saves its cost and, since releasing a lock waits
// for every pending memory write, lets the CPU overlap the cache misses of
// consecutive writes. Runs must be short: readers wait for a whole run.
func (s *Indexer[T]) beginWrites() { s.mu.Lock() }

// endWrites releases the lock taken by beginWrites.
func (s *Indexer[T]) endWrites() { s.mu.Unlock() }

// warm reads what applying the prepared write p will read first: the name
// table slot of its name and the first byte of the strings the write hashes
// or compares (namespace, label values). Those lines are rarely in the CPU
// caches; reading them for a whole run of writes before applying any lets
// the CPU overlap the misses, where the writes themselves would wait for
// each in turn (BenchmarkDispatch, W1). It returns a value computed from
// the loads, which the caller must use so that they are not optimized away
// (see warmed). The caller holds the lock (beginWrites).
func (s *Indexer[T]) warm(p *writePrep) int {
	slots := s.c.names.slots
	sum := int(slots[slotHash(p.hash)&uint32(len(slots)-1)].hash)
	if p.name.Namespace != "" {
		sum += int(p.name.Namespace[0])
	}
	for i := range p.pairs {
		if v := p.pairs[i].value; v != "" {
			sum += int(v[0])
		}
	}
	return sum
}

// warmed keeps what a run of warm calls returned, so that their loads are
// used. The caller holds the lock (beginWrites).
func (s *Indexer[T]) warmed(sum int) { s.warmSum += sum }

// refreshPrep computes again, without the lock, the index values of a
// prepared store whose values are missing or stale: an index function
// failed (then p.err keeps the error) or an index was added since.
func (s *Indexer[T]) refreshPrep(obj T, p *writePrep) {
	plan := s.published.Load()
	var v prepValues
	p.err = plan.prepare(obj, p.name, &v)
	// p outlives this call: its values must not point into v.
	p.values = append([][]string(nil), v.slice()...)
	p.indexCount = len(plan.indexes)
}

// publishedCount returns the number of indexes, read without the lock.
func (s *Indexer[T]) publishedCount() int { return len(s.published.Load().indexes) }

// errStalePrep tells the caller of putPrepared that the values are missing
// (an index function failed when the write was prepared) or stale (an index
// was added since): it must refresh them without the lock.
var errStalePrep = errors.New("index values missing or computed before an index was added")

// putPrepared stores obj like upsert, from p computed by prepareWrite and
// refreshPrep for obj. It also returns the replaced object's resource
// version. The caller holds the lock (beginWrites). On error nothing
// changes; errStalePrep means the values must be refreshed first.
func (s *Indexer[T]) putPrepared(obj T, p *writePrep) (old T, oldRV string, existed bool, err error) {
	if p.err != nil {
		return old, "", false, p.err
	}
	if p.indexCount != len(s.plan.indexes) {
		// Index functions are never called under the lock.
		return old, "", false, errStalePrep
	}
	old, oldRV, existed = s.c.put(obj, p, p.values)
	s.rv = p.rv
	return old, oldRV, existed, nil
}

// deletePrepared removes the object p names, if stored, and sets the
// store's resource version to p's, like Delete. The caller holds the lock
// (beginWrites).
func (s *Indexer[T]) deletePrepared(p *writePrep) {
	if id := findName(&s.c.names, s.c.entryNames, p.hash, p.name); id >= 0 {
		s.c.removeEntry(id)
	}
	s.rv = p.rv
}
