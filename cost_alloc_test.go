package informer

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// liveBytesOf returns the heap bytes that one of build's results keeps
// alive: the live heap after a collection with count results held, less
// the live heap before, divided by count; the median of three runs, so that
// what the test framework allocates or frees meanwhile does not count.
func liveBytesOf(count int, build func() any) float64 {
	var runs []float64
	for range 3 {
		keep := make([]any, count)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = build()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		runs = append(runs, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(count))
	}
	slices.Sort(runs)
	return runs[1]
}

// checkLiveBytes fails t unless one of build's results keeps want bytes
// alive, to within measuring noise (0.5%, at least 2 bytes); less is the
// bytes of build's result that the model leaves out (a slice's header
// boxed in any).
func checkLiveBytes(t *testing.T, what string, want int64, less float64, build func() any) {
	t.Helper()
	count := int(max(16, min(4000, (8<<20)/want)))
	got := liveBytesOf(count, build) - less
	if math.Abs(got-float64(want)) > max(2, float64(want)*0.005) {
		t.Errorf("%s: the heap grew by %.1f bytes each, the model says %d", what, got, want)
	}
}

// TestAllocBytes checks the allocator model against the runtime: what one
// allocation of each size, with and without pointers, adds to the live
// heap.
func TestAllocBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred megabytes")
	}
	ptr := reflect.TypeFor[*byte]()
	sizes := []int{16, 17, 24, 100, 500, 504, 505, 512, 513, 520, 1000, 1024, 1025, 4000, 8192, 9000,
		20000, 32760, 32761, 32768, 32769, 40000, 100000}
	for n := 16; n <= 32768; n += 8 * 37 {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		// A slice boxed in any costs its header too (24 bytes); a pointer
		// nothing.
		checkLiveBytes(t, fmt.Sprintf("%d bytes without pointers", n), allocBytes(uintptr(n), false), 24,
			func() any { return make([]byte, n) })
		if n%8 == 0 {
			typ := reflect.ArrayOf(n/8, ptr)
			checkLiveBytes(t, fmt.Sprintf("%d bytes with pointers", n), allocBytes(uintptr(n), true), 0,
				func() any { return reflect.New(typ).Interface() })
		}
	}
}

// TestMapBytes checks the model of maps against the runtime: maps built
// by insertion and made with a hint (as decoders make them), of the key
// and element types cached objects hold, and of elements stored behind
// pointers.
func TestMapBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred megabytes")
	}
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	quantity := resource.MustParse("100m")
	for _, n := range []int{1, 2, 7, 8, 9, 14, 15, 28, 29, 100, 112, 113, 896, 897, 2000} {
		for _, c := range []struct {
			name  string
			typ   reflect.Type
			build func(hint int) any
		}{
			{"map[string]string", reflect.TypeFor[map[string]string](), func(hint int) any {
				m := make(map[string]string, hint)
				for _, k := range keys[:n] {
					m[k] = k
				}
				return m
			}},
			{"map[string]any", reflect.TypeFor[map[string]any](), func(hint int) any {
				m := make(map[string]any, hint)
				for _, k := range keys[:n] {
					m[k] = nil
				}
				return m
			}},
			{"map[string]resource.Quantity", reflect.TypeFor[map[string]resource.Quantity](), func(hint int) any {
				m := make(map[string]resource.Quantity, hint)
				for _, k := range keys[:n] {
					m[k] = quantity
				}
				return m
			}},
			{"map[string][20]int64", reflect.TypeFor[map[string][20]int64](), func(hint int) any {
				m := make(map[string][20]int64, hint)
				for _, k := range keys[:n] {
					m[k] = [20]int64{}
				}
				return m
			}},
		} {
			layout := newMapLayout(c.typ)
			hints := []int{0, n}
			if n > mapTableMax*7/8 {
				// A hint beyond one table makes tables of the hint's
				// share of the capacity, where insertions split full ones:
				// the model is insertions', as nothing tells them apart.
				hints = hints[:1]
			}
			for _, hint := range hints {
				// A map in an interface is its pointer: nothing boxed.
				checkLiveBytes(t, fmt.Sprintf("%s of %d built with hint %d", c.name, n, hint), layout.bytes(n), 0,
					func() any { return c.build(hint) })
			}
		}
	}
}
