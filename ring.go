package informer

// ring is a first-in first-out buffer of values that grows when it is full
// and gives memory back once a burst is over. It holds the notifications a
// handler has not received yet.
//
// Elements are stored by value, so pushing and popping allocate nothing
// while the ring has room. Vacated slots are zeroed so that the ring does
// not keep delivered objects alive.
//
// Shrinking uses hysteresis so that a ring that is busy at a steady rate does
// not reallocate over and over: each time it drains completely it looks at
// the largest length it reached since the previous drain, and shrinks back to
// its normal capacity only when that peak used at most a quarter of the
// current capacity.
//
// A ring is not safe for concurrent use.
type ring[E any] struct {
	buf    []E // len(buf) is the capacity; a power of two, or zero
	head   int // index of the oldest element
	n      int // number of elements
	normal int // capacity allocated at first use and kept after a burst
	peak   int // largest n since the ring last drained
}

// newRing returns an empty ring whose normal capacity is normal rounded up to
// a power of two (at least 1). Nothing is allocated until the first push.
func newRing[E any](normal int) ring[E] {
	return ring[E]{normal: roundUpPowerOfTwo(normal)}
}

// roundUpPowerOfTwo returns the smallest power of two >= n, and 1 for n <= 1.
func roundUpPowerOfTwo(n int) int {
	size := 1
	for size < n {
		size <<= 1
	}
	return size
}

// len returns the number of elements.
func (r *ring[E]) len() int { return r.n }

// push appends e, growing the ring if it is full.
func (r *ring[E]) push(e E) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
	if r.n > r.peak {
		r.peak = r.n
	}
}

// pushAll appends es in order, growing the ring once if needed.
func (r *ring[E]) pushAll(es []E) {
	if len(es) == 0 {
		return
	}
	if need := r.n + len(es); need > len(r.buf) {
		size := max(r.normal, len(r.buf))
		for size < need {
			size *= 2
		}
		r.resize(size)
	}
	tail := (r.head + r.n) & (len(r.buf) - 1)
	copied := copy(r.buf[tail:], es)
	copy(r.buf, es[copied:])
	r.n += len(es)
	if r.n > r.peak {
		r.peak = r.n
	}
}

// grow doubles the capacity (or allocates the normal capacity), moving the
// elements to the front of the new buffer.
func (r *ring[E]) grow() {
	size := r.normal
	if len(r.buf) > 0 {
		size = 2 * len(r.buf)
	}
	r.resize(size)
}

// resize moves the elements into a new buffer of the given capacity, which
// must be a power of two and at least r.n.
func (r *ring[E]) resize(size int) {
	buf := make([]E, size)
	if r.n > 0 {
		first := copy(buf, r.buf[r.head:min(r.head+r.n, len(r.buf))])
		copy(buf[first:r.n], r.buf[:r.n-first])
	}
	r.buf = buf
	r.head = 0
}

// at returns a pointer to the i-th oldest element, for updating a pending
// element in place. i must be in [0, len()). The pointer is valid until the
// next push or pop.
func (r *ring[E]) at(i int) *E {
	return &r.buf[(r.head+i)&(len(r.buf)-1)]
}

// popInto moves up to max of the oldest elements to the end of dst and
// returns the extended slice. When the ring drains it may shrink (see ring).
func (r *ring[E]) popInto(dst []E, max int) []E {
	count := min(r.n, max)
	if count == 0 {
		return dst
	}
	end := r.head + count
	if end <= len(r.buf) {
		dst = append(dst, r.buf[r.head:end]...)
		clear(r.buf[r.head:end])
	} else {
		wrapped := end - len(r.buf)
		dst = append(dst, r.buf[r.head:]...)
		dst = append(dst, r.buf[:wrapped]...)
		clear(r.buf[r.head:])
		clear(r.buf[:wrapped])
	}
	r.head = end & (len(r.buf) - 1)
	r.n -= count
	if r.n == 0 {
		r.drained()
	}
	return dst
}

// reset drops every element, then behaves as a drain.
func (r *ring[E]) reset() {
	clear(r.buf)
	r.head, r.n = 0, 0
	r.drained()
}

// drained applies the shrink policy once the ring is empty and starts a new
// observation period for the peak length.
func (r *ring[E]) drained() {
	r.head = 0
	if len(r.buf) > r.normal && 4*r.peak <= len(r.buf) {
		r.buf = make([]E, r.normal)
	}
	r.peak = 0
}
