package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// ErrFIFOClosed is returned by [DeltaFIFO.Pop] once the queue is closed and
// empty.
var ErrFIFOClosed = errors.New("DeltaFIFO: queue is closed")

var (
	errFIFONilObject     = errors.New("nil object")
	errFIFOUnnamedObject = errors.New("object has no name")
	errFIFOEmptyDeltas   = errors.New("empty Deltas")
)

// DeltaFIFO is client-go's classic informer queue, typed: a producer (a
// [Reflector], through [ReflectorStore]) records changes and a consumer
// pops, per object key, every change that happened since the key was last
// popped.
//
// Keys are popped in the order they were first queued; more changes to a
// queued key are appended to its deltas without moving it in line. Two
// trailing deletions of a key are merged into one.
//
// All methods are safe for concurrent use. Objects are shared between the
// producer, the queue and the consumer: none of them may modify an object
// once it is queued. Popping from several goroutines at once lets different
// versions of one object be processed in parallel.
type DeltaFIFO[T Object] struct {
	logger       klog.Logger
	name         string
	knownObjects KeyListerGetter[T]
	transform    TransformFunc[T]
	emitReplaced bool

	lock sync.RWMutex
	// cond is broadcast, with lock held, when a key is queued, when the
	// queue is closed and when the context of a waiting Pop ends.
	cond sync.Cond
	// items holds the pending Deltas of every queued key; queue holds
	// those keys, without duplicates, in the order they are popped.
	items map[string][]Delta[T]
	queue []string

	// populated is set by the first Add, Update, Delete, AddIfNotPresent or
	// Replace. initialPopulationCount counts the keys of the first Replace
	// not popped yet. synced latches once both say the first list is done.
	populated              bool
	initialPopulationCount int
	synced                 bool
	closed                 bool
}

// NewDeltaFIFO returns an empty, open queue configured by opts.
func NewDeltaFIFO[T Object](opts DeltaFIFOOptions[T]) *DeltaFIFO[T] {
	f := &DeltaFIFO[T]{
		logger:       klog.Background(),
		name:         "DeltaFIFO",
		knownObjects: opts.KnownObjects,
		transform:    opts.Transform,
		emitReplaced: opts.EmitDeltaTypeReplaced,
		items:        map[string][]Delta[T]{},
	}
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	if opts.Name != "" {
		f.name = opts.Name
	}
	f.logger = klog.LoggerWithName(f.logger, f.name)
	f.cond.L = &f.lock
	return f
}

// Add records an DeltaAdded delta for obj. It fails, queuing nothing, if obj is
// nil or has no name, or if the transform fails.
func (f *DeltaFIFO[T]) Add(obj T) error {
	return f.record(DeltaAdded, obj)
}

// Update records an DeltaUpdated delta for obj. It fails like Add.
func (f *DeltaFIFO[T]) Update(obj T) error {
	return f.record(DeltaUpdated, obj)
}

// Delete records a DeltaDeleted delta for obj, unless obj's key is neither queued
// nor known (it was presumably reported deleted by a relist already). It
// fails like Add.
func (f *DeltaFIFO[T]) Delete(obj T) error {
	key, err := fifoKeyOf(obj)
	if err != nil {
		return fmt.Errorf("%s: %s delta: %w", f.name, DeltaDeleted, err)
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	if _, queued := f.items[key]; !queued {
		if f.knownObjects == nil {
			f.markPopulatedLocked()
			return nil
		}
		_, known, err := f.knownObjects.GetByKey(key)
		if err == nil && !known {
			f.markPopulatedLocked()
			return nil
		}
		if err != nil {
			// A duplicate deletion is harmless; a lost one is not.
			f.logger.Error(err, "Looking up a known object failed; queuing its deletion anyway", "key", key)
		}
	}
	return f.transformAndAppendLocked(key, DeltaDeleted, obj)
}

// Bookmark does nothing: like client-go's DeltaFIFO, the classic queue
// carries no resource versions. It always returns nil.
func (f *DeltaFIFO[T]) Bookmark(string) error {
	return nil
}

// record validates, transforms and queues one watch event.
func (f *DeltaFIFO[T]) record(t DeltaType, obj T) error {
	key, err := fifoKeyOf(obj)
	if err != nil {
		return fmt.Errorf("%s: %s delta: %w", f.name, t, err)
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.transformAndAppendLocked(key, t, obj)
}

// transformAndAppendLocked queues one watch event. A write that fails
// changes nothing, not even HasSynced.
func (f *DeltaFIFO[T]) transformAndAppendLocked(key string, t DeltaType, obj T) error {
	obj, err := f.transformLocked(key, obj)
	if err != nil {
		return fmt.Errorf("%s: %s delta: %w", f.name, t, err)
	}
	f.markPopulatedLocked()
	f.appendLocked(key, Delta[T]{Type: t, Object: obj})
	return nil
}

// transformLocked runs the transform under the lock, as client-go does, so
// that deltas are queued in the order their objects arrived.
func (f *DeltaFIFO[T]) transformLocked(key string, obj T) (T, error) {
	var zero T
	if f.transform == nil {
		return obj, nil
	}
	out, err := f.transform(obj)
	if err != nil {
		return zero, fmt.Errorf("transforming %s: %w", key, err)
	}
	if out == zero {
		return zero, fmt.Errorf("transforming %s: %w returned by the transform", key, errFIFONilObject)
	}
	return out, nil
}

// appendLocked appends d to key's Deltas, queuing key if it was not, and
// merges two trailing deletions: the older one is kept unless it is a
// final-state-unknown record, which says less than a watched deletion.
func (f *DeltaFIFO[T]) appendLocked(key string, d Delta[T]) {
	old, queued := f.items[key]
	deltas := append(old, d)
	if n := len(deltas); n >= 2 && deltas[n-1].Type == DeltaDeleted && deltas[n-2].Type == DeltaDeleted {
		if deltas[n-2].FinalStateUnknown {
			deltas[n-2] = deltas[n-1]
		}
		deltas = deltas[:n-1]
	}
	if !queued {
		f.queue = append(f.queue, key)
	}
	f.items[key] = deltas
	f.cond.Broadcast()
}

func (f *DeltaFIFO[T]) markPopulatedLocked() {
	f.populated = true
	f.checkSyncedLocked()
}

func (f *DeltaFIFO[T]) checkSyncedLocked() {
	if f.populated && f.initialPopulationCount == 0 {
		f.synced = true
	}
}

// fifoKeyOf returns obj's key, or an error if obj cannot have one.
func fifoKeyOf[T Object](obj T) (string, error) {
	var zero T
	if obj == zero {
		return "", errFIFONilObject
	}
	if obj.GetName() == "" {
		return "", fmt.Errorf("%w (namespace %q)", errFIFOUnnamedObject, obj.GetNamespace())
	}
	return KeyOf(obj), nil
}

// Pop waits until a key is queued, removes it with its deltas, calls
// process (if not nil) with them and returns them with process's error.
// process runs with the queue locked, so it can update KnownObjects
// atomically with the pop; it must be quick and must not call the queue.
//
// If process fails, the deltas are not requeued: pass them to
// AddIfNotPresent to retry them. Pop returns ctx.Err() once ctx is done,
// and ErrFIFOClosed once the queue is closed and empty.
func (f *DeltaFIFO[T]) Pop(ctx context.Context, process PopProcessFunc[T]) ([]Delta[T], error) {
	f.lock.Lock()
	defer f.lock.Unlock()
	if len(f.queue) == 0 && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, f.wakeWaiters)
		defer stop()
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(f.queue) > 0 {
			break
		}
		if f.closed {
			return nil, ErrFIFOClosed
		}
		f.cond.Wait()
	}

	key := f.queue[0]
	f.queue[0] = ""
	f.queue = f.queue[1:]
	deltas := f.items[key]
	delete(f.items, key)
	isInInitialList := !f.synced
	if f.initialPopulationCount > 0 {
		f.initialPopulationCount--
		f.checkSyncedLocked()
	}
	if process == nil {
		return deltas, nil
	}
	depth, start := len(f.queue), time.Now()
	err := process(deltas, isInInitialList)
	// Producers wait while process runs: report a slow one when it holds up
	// a long queue.
	if elapsed := time.Since(start); depth > 10 && elapsed > 100*time.Millisecond {
		f.logger.Info("Slow DeltaFIFO processing is blocking the queue", "key", key, "depth", depth, "duration", elapsed)
	}
	return deltas, err
}

func (f *DeltaFIFO[T]) wakeWaiters() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.cond.Broadcast()
}

// AddIfNotPresent queues deltas, usually ones Pop returned, under the key of
// their newest object, unless that key is queued already: the queued deltas
// are newer, and deltas is dropped. It takes ownership of deltas. It fails
// if deltas is empty or its newest object cannot have a key.
func (f *DeltaFIFO[T]) AddIfNotPresent(deltas []Delta[T]) error {
	newest := newestDelta(deltas)
	if newest == nil {
		return fmt.Errorf("%s: add if not present: %w", f.name, errFIFOEmptyDeltas)
	}
	key, err := fifoKeyOf(newest.Object)
	if err != nil {
		return fmt.Errorf("%s: add if not present: %w", f.name, err)
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	f.markPopulatedLocked()
	if _, queued := f.items[key]; queued {
		return nil
	}
	f.queue = append(f.queue, key)
	f.items[key] = deltas
	f.cond.Broadcast()
	return nil
}

// Get returns a copy of the deltas queued for obj's key. It fails if obj
// cannot have a key.
func (f *DeltaFIFO[T]) Get(obj T) ([]Delta[T], bool, error) {
	key, err := fifoKeyOf(obj)
	if err != nil {
		return nil, false, fmt.Errorf("%s: get: %w", f.name, err)
	}
	deltas, ok := f.GetByKey(key)
	return deltas, ok, nil
}

// GetByKey returns a copy of the deltas queued for key.
func (f *DeltaFIFO[T]) GetByKey(key string) ([]Delta[T], bool) {
	f.lock.RLock()
	defer f.lock.RUnlock()
	deltas, ok := f.items[key]
	if !ok {
		return nil, false
	}
	return append([]Delta[T](nil), deltas...), true
}

// List returns the newest object of every queued key, in pop order.
func (f *DeltaFIFO[T]) List() []T {
	f.lock.RLock()
	defer f.lock.RUnlock()
	list := make([]T, len(f.queue))
	for i, key := range f.queue {
		list[i] = newestDelta(f.items[key]).Object
	}
	return list
}

// ListKeys returns the queued keys in pop order.
func (f *DeltaFIFO[T]) ListKeys() []string {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return append([]string(nil), f.queue...)
}

// HasSynced reports whether the first Replace's keys, deletions included,
// have all been popped; or, if Add, Update, Delete or AddIfNotPresent came
// before any Replace, returns true from then on. Once true it stays true.
func (f *DeltaFIFO[T]) HasSynced() bool {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return f.synced
}

// Close closes the queue: waiting Pops return ErrFIFOClosed, and later ones
// do so once the queue is empty. Writes are still accepted, as in client-go.
func (f *DeltaFIFO[T]) Close() {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.closed = true
	f.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (f *DeltaFIFO[T]) IsClosed() bool {
	f.lock.RLock()
	defer f.lock.RUnlock()
	return f.closed
}
