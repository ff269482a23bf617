package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ringDrain pops everything from r in batches of batch.
func ringDrain(r *ring[int], batch int) []int {
	var out []int
	for r.len() > 0 {
		out = r.popInto(out, batch)
	}
	return out
}

func TestRingKeepsOrderAcrossWrapAndGrowth(t *testing.T) {
	r := newRing[int](4)
	var want, got []int
	next := 0
	// Interleave pushes and pops so that the contents wrap around the end
	// of the buffer before it grows.
	for round := range 6 {
		for range 3 + round {
			r.push(next)
			want = append(want, next)
			next++
		}
		got = r.popInto(got, 2)
	}
	got = append(got, ringDrain(&r, 3)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

func TestRingAtAddressesPendingElements(t *testing.T) {
	r := newRing[int](4)
	for i := range 6 {
		r.push(i)
	}
	_ = r.popInto(nil, 3) // head moves; elements 3, 4, 5 remain
	*r.at(1) = 40
	if diff := cmp.Diff([]int{3, 40, 5}, ringDrain(&r, 10)); diff != "" {
		t.Fatalf("contents (-want +got):\n%s", diff)
	}
}

func TestRingZeroesVacatedSlots(t *testing.T) {
	r := newRing[*int](4)
	for i := range 4 {
		v := i
		r.push(&v)
	}
	_ = r.popInto(nil, 3)
	for i, p := range r.buf {
		if p != nil && i != r.head {
			t.Errorf("slot %d still references a popped element", i)
		}
	}
	r.reset()
	for i, p := range r.buf {
		if p != nil {
			t.Errorf("slot %d still references an element after reset", i)
		}
	}
}

func TestRingShrinksAfterABurst(t *testing.T) {
	r := newRing[int](8)
	if r.capacity() != 0 {
		t.Fatalf("capacity before first push = %d, want 0 (lazy)", r.capacity())
	}
	r.push(1)
	if r.capacity() != 8 {
		t.Fatalf("capacity after first push = %d, want 8", r.capacity())
	}
	_ = ringDrain(&r, 100)

	// A burst grows the ring to 128.
	for i := range 100 {
		r.push(i)
	}
	if r.capacity() != 128 {
		t.Fatalf("capacity after a burst of 100 = %d, want 128", r.capacity())
	}
	// Draining the burst keeps the memory: the period's peak used most of it.
	_ = ringDrain(&r, 7)
	if r.capacity() != 128 {
		t.Fatalf("capacity right after the burst drained = %d, want 128", r.capacity())
	}
	// A calm period (peak 20 <= 128/4) ends with a shrink.
	for i := range 20 {
		r.push(i)
	}
	_ = ringDrain(&r, 5)
	if r.capacity() != 8 {
		t.Fatalf("capacity after a calm period = %d, want 8", r.capacity())
	}
}

func TestRingSteadyTrafficDoesNotReallocate(t *testing.T) {
	r := newRing[int](16)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 12 {
			r.push(i)
		}
		var buf [16]int
		_ = r.popInto(buf[:0], 16)
	})
	if allocs != 0 {
		t.Fatalf("steady traffic allocated %v times per round, want 0", allocs)
	}
}

func TestRoundUpPowerOfTwo(t *testing.T) {
	got := []int{roundUpPowerOfTwo(-1), roundUpPowerOfTwo(0), roundUpPowerOfTwo(1), roundUpPowerOfTwo(3), roundUpPowerOfTwo(1024), roundUpPowerOfTwo(1025)}
	if diff := cmp.Diff([]int{1, 1, 1, 4, 1024, 2048}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestRingPushAllWrapsAndGrows(t *testing.T) {
	r := newRing[int](4)
	r.pushAll([]int{0, 1, 2})
	got := r.popInto(nil, 2) // head at 2: the next pushAll wraps
	r.pushAll([]int{3, 4, 5})
	r.pushAll([]int{6, 7, 8, 9, 10, 11, 12}) // grows from 4 past 8 to 16
	if r.capacity() != 16 {
		t.Fatalf("capacity = %d, want 16", r.capacity())
	}
	got = append(got, ringDrain(&r, 3)...)
	if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	r.pushAll(nil)
	if r.len() != 0 {
		t.Fatal("pushAll(nil) added elements")
	}
}
