package informer

import "errors"

// writePrep is the part of storing or deleting an object that depends on the
// object alone: its name and the name's hash, its resource version, its
// labels and its index values. The informer computes it on the reflector's
// goroutine when an event is queued (see Indexer.prepareWrite), so that the
// goroutine applying events to the cache, the informer's bottleneck, calls
// no index function and does not read the object again: by the time it
// applies an event, the object has usually left the CPU caches.
type writePrep struct {
	name ObjectName
	hash uint64 // name's hash in the Indexer's name table
	rv   string // the object's resource version
	// labels is the object's label map.
	labels map[string]string
	// pairs holds the same labels as a slice, in no particular order, or is
	// nil when they were not copied: then they are read from labels.
	pairs []labelPair
	// values holds the values of the first indexCount indexes, in index
	// order; indexCount is -1 when they were not computed.
	values     [][]string
	indexCount int
	// err is the error of an index function, from refreshPrep.
	err error
}

// labelPair is one label of an object.
type labelPair struct {
	key, value string
}

// maxScannedPairs is the most labels hasLabel compares one by one; an
// object with more is checked with map lookups, so that verifying n labels
// costs O(n), not O(n²).
const maxScannedPairs = 8

// hasLabel reports whether the prepared object carries label key=value.
func (p *writePrep) hasLabel(key, value string) bool {
	if p.pairs != nil && len(p.pairs) <= maxScannedPairs {
		for i := range p.pairs {
			if p.pairs[i].key == key {
				return p.pairs[i].value == value
			}
		}
		return false
	}
	v, ok := p.labels[key]
	return ok && v == value
}

// labelCount returns the number of labels of the prepared object.
func (p *writePrep) labelCount() int {
	if p.pairs != nil {
		return len(p.pairs)
	}
	return len(p.labels)
}

// appendLabelPairs appends the labels of labels to dst.
func appendLabelPairs(dst []labelPair, labels map[string]string) []labelPair {
	for k, v := range labels {
		dst = append(dst, labelPair{key: k, value: v})
	}
	return dst
}

// prepareWrite fills p for a later putPrepared (store true) or
// deletePrepared (store false) of obj, which must not be the zero T. For a
// store it appends the object's index values to values and returns the
// extended slice; the caller points p.values at them (and may fill
// p.pairs). It takes no lock and may run concurrently with anything, as
// index functions may. An index function that fails leaves the values
// uncomputed: the write computes them again and reports the error.
func (s *Indexer[T]) prepareWrite(obj T, store bool, p *writePrep, values [][]string) [][]string {
	p.name = NameOf(obj)
	p.hash = hashObjectName(s.seed, p.name)
	p.rv = obj.GetResourceVersion()
	p.indexCount = -1
	if !store {
		return values
	}
	p.labels = obj.GetLabels()
	indexes := *s.published.Load()
	extended, err := indexValues(indexes, obj, p.name, values)
	if err != nil {
		// Drop what the failed call appended, so that the caller's buffer
		// keeps no references to it.
		clear(values[len(values):cap(values)])
		return values
	}
	p.indexCount = len(indexes)
	return extended
}

// beginWrites takes the Indexer's write lock for a run of putPrepared and
// deletePrepared calls, and endWrites releases it. One lock round trip per
// run instead of per write saves its cost and, since releasing a lock waits
// for every pending memory write, lets the CPU overlap the cache misses of
// consecutive writes. Runs must be short: readers wait for a whole run.
func (s *Indexer[T]) beginWrites() { s.mu.Lock() }

// endWrites releases the lock taken by beginWrites.
func (s *Indexer[T]) endWrites() { s.mu.Unlock() }

// refreshPrep computes again, without the lock, the index values of a
// prepared store whose values are missing or stale: an index function
// failed (then p.err keeps the error) or an index was added since.
func (s *Indexer[T]) refreshPrep(obj T, p *writePrep) {
	indexes := *s.published.Load()
	p.values, p.err = indexValues(indexes, obj, p.name, nil)
	p.indexCount = len(indexes)
}

// publishedCount returns the number of indexes, read without the lock.
func (s *Indexer[T]) publishedCount() int { return len(*s.published.Load()) }

// errStalePrep tells the caller of putPrepared that an index was added since
// the values were computed: it must refresh them without the lock.
var errStalePrep = errors.New("index values computed before an index was added")

// putPrepared stores obj like upsert, from p computed by prepareWrite and
// refreshPrep for obj. It also returns the replaced object's resource
// version. The caller holds the lock (beginWrites). On error nothing
// changes; errStalePrep means the values must be refreshed first.
func (s *Indexer[T]) putPrepared(obj T, p *writePrep) (old T, oldRV string, existed bool, err error) {
	if p.err != nil {
		return old, "", false, p.err
	}
	if p.indexCount != len(s.indexes) {
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
	if e := s.c.entries.find(p.hash, p.name); e != nil {
		s.c.removeEntry(e)
	}
	s.rv = p.rv
}
