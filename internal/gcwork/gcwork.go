// Package gcwork runs work after garbage collections, for the packages of
// the informer that let memory go when values die: the intern tables of
// internal/wire and the informer's queue.
package gcwork

import (
	"runtime"
	"weak"
)

// Work after garbage collections: the intern tables sweep what died
// (wire.InternTable.sweepAfterGC) and an idle queue lets its spare chunks
// go (the root package's eventQueue.releaseIdleChunks), both at the moment
// values die, without a goroutine or a timer of their own.

// gcSentinel is the object whose collection tells that a garbage
// collection ran. It holds a pointer so that it is not a tiny allocation
// (which may share a block with a live object and never be collected).
type gcSentinel struct{ _ *byte }

// gcCall is what AfterEachGC's cleanups hold: a weak pointer to the value,
// so that they do not keep it alive, and the function to call with it.
type gcCall[T any] struct {
	w weak.Pointer[T]
	f func(*T)
}

// AfterEachGC calls f(p) after every garbage collection, from the next one
// on, for as long as p is reachable: once p is collected, the calls stop.
// f runs on the runtime's cleanup goroutine, one call at a time, so it must
// not block (take locks with TryLock) and must return soon; it must not
// make p reachable from anything that outlives the call (pass a method
// expression, not a closure over p). It starts no goroutine: each call
// arms the next through runtime.AddCleanup on a new sentinel, which is
// unreachable from the start, so that the next collection frees it.
func AfterEachGC[T any](p *T, f func(*T)) {
	armGCCall(gcCall[T]{w: weak.Make(p), f: f})
}

// armGCCall makes the next garbage collection run c (runGCCall).
func armGCCall[T any](c gcCall[T]) {
	runtime.AddCleanup(new(gcSentinel), runGCCall[T], c)
}

// runGCCall is the cleanup of a sentinel of AfterEachGC.
func runGCCall[T any](c gcCall[T]) {
	p := c.w.Value()
	if p == nil {
		return // p is gone: stop
	}
	c.f(p)
	armGCCall(c)
}
