package informer

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// heapString returns a string of n bytes of its own on the heap, starting
// with prefix.
func heapString(prefix string, n int) string {
	return strings.Clone(prefix + strings.Repeat("x", n-len(prefix)))
}

// costRowsOf walks objects and returns the rows of its report, without
// the objects' own structs and the store.
func costRowsOf[T any](t *testing.T, objects ...T) []CostRow {
	t.Helper()
	w := newCostWalker()
	if err := walkCost(context.Background(), w, objects, nil); err != nil {
		t.Fatal(err)
	}
	var rows []CostRow
	for _, row := range w.report(len(objects), nil).Rows {
		if row.Path != costObjectsRow {
			rows = append(rows, row)
		}
	}
	return rows
}

// TestCostSharedCountedOnce walks two pods sharing a label map (as
// Deduplicate makes them) and an image string (as strings interned on
// decode are): each is counted once, in the row where first found, and is
// shared; what each pod holds alone is counted in each.
func TestCostSharedCountedOnce(t *testing.T) {
	labels := map[string]string{heapString("app", 16): heapString("web", 32)}
	image := heapString("registry.example.com/web:v1", 48)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: heapString(name, 24), Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Image: image}}},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Image: image}}},
		}
	}
	containers := allocBytes(unsafe.Sizeof(corev1.Container{}), true)
	statuses := allocBytes(unsafe.Sizeof(corev1.ContainerStatus{}), true)
	want := []CostRow{
		{Path: "spec.containers", Bytes: 2*containers + 48, SharedBytes: 48, Objects: 2},
		{Path: "status.containerStatuses", Bytes: 2 * statuses, Objects: 2},
		{Path: "metadata.labels", Bytes: stringMapLayout.bytes(1) + 16 + 32, SharedBytes: stringMapLayout.bytes(1) + 16 + 32, Objects: 2},
		{Path: "metadata.name", Bytes: 2 * 24, Objects: 2},
	}
	got := costRowsOf(t, pod("first"), pod("second"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestCostAnnotationKeys walks pods with a large annotation and small
// ones: the large one, holding more than 1% of the report, has a row of
// its own, by its key; the small ones are their map's; and the
// suggestions put the last-applied configuration first, then the others
// by size.
func TestCostAnnotationKeys(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: heapString(fmt.Sprint("pod-", i), 16),
			Annotations: map[string]string{
				heapString("small", 16):            heapString("v", 16),
				corev1.LastAppliedConfigAnnotation: heapString("{", 2048),
				heapString("example.com/note", 32): heapString("note", 4096),
			},
		}})
	}
	const (
		lastApplied = "metadata.annotations[" + corev1.LastAppliedConfigAnnotation + "]"
		note        = "metadata.annotations[example.com/notexxxxxxxxxxxxxxxx]"
	)
	w := newCostWalker()
	if err := walkCost(context.Background(), w, pods, nil); err != nil {
		t.Fatal(err)
	}
	r := w.report(len(pods), nil)
	// The last-applied key is a constant: one string (48 bytes) for all.
	want := []CostRow{
		{Path: note, Bytes: 3 * (32 + 4096), Objects: 3},
		{Path: lastApplied, Bytes: 3*2048 + 48, SharedBytes: 48, Objects: 3},
		{Path: costObjectsRow, Bytes: 3 * allocBytes(unsafe.Sizeof(corev1.Pod{}), true), Objects: 3},
		{Path: "metadata.annotations", Bytes: 3 * (stringMapLayout.bytes(3) + 16 + 16), Objects: 3},
		{Path: "metadata.name", Bytes: 3 * 16, Objects: 3},
	}
	if diff := cmp.Diff(want, r.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	var suggested []string
	for _, row := range r.Suggestions {
		suggested = append(suggested, row.Path)
	}
	if diff := cmp.Diff([]string{lastApplied, note, "metadata.annotations"}, suggested); diff != "" {
		t.Errorf("suggestions (-want +got):\n%s", diff)
	}
}

// costTestObject is an object of a type of its own, for the walk of
// interfaces, arrays and weak pointers.
type costTestObject struct {
	Spec costTestSpec `json:"spec"`
}

type costTestSpec struct {
	Small    any               `json:"small"`    // an integer below 256: in the runtime's memory
	Boxed    any               `json:"boxed"`    // a 32-byte array: in a box of its own
	Pointer  any               `json:"pointer"`  // a pointer: the interface holds it
	Map      any               `json:"map"`      // a map: the interface holds it
	Stringer fmt.Stringer      `json:"stringer"` // a non-empty interface
	Array    [2]*[64]byte      `json:"array"`    // an array held inline
	Weak     weak.Pointer[int] `json:"weak"`     // its handle only
	Func     func()            `json:"-"`        // not followed
}

type costStringer struct{ s string }

func (c *costStringer) String() string { return c.s }

// TestCostInterfaces walks what interfaces, arrays and weak pointers
// hold: a box unless the value is pointer-shaped or in the runtime's own
// memory, the pointed-to value, a weak pointer's handle but not its target.
func TestCostInterfaces(t *testing.T) {
	target := new(int)
	obj := &costTestObject{Spec: costTestSpec{
		Small:    boxUint64(7), // as decoders box numbers, not as constants are
		Boxed:    [32]byte{1},
		Pointer:  &[100]byte{},
		Map:      map[string]string{heapString("k", 16): heapString("v", 16)},
		Stringer: &costStringer{s: heapString("s", 40)},
		Array:    [2]*[64]byte{new([64]byte), nil},
		Weak:     weak.Make(target),
		Func:     func() {},
	}}
	want := []CostRow{
		{Path: "spec.map", Bytes: stringMapLayout.bytes(1) + 32, Objects: 1},
		{Path: "spec.pointer", Bytes: allocBytes(100, false), Objects: 1},
		{Path: "spec.array", Bytes: allocBytes(64, false), Objects: 1},
		{Path: "spec.stringer", Bytes: allocBytes(16, true) + 48, Objects: 1},
		{Path: "spec.boxed", Bytes: allocBytes(32, false), Objects: 1},
		{Path: "spec.weak", Bytes: allocBytes(weakHandleSize, false), Objects: 1},
		{Path: "spec.small", Objects: 1},
	}
	got := costRowsOf(t, obj)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	runtime.KeepAlive(target)
}
