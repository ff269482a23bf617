package wire

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informer/internal/prodpods"
)

// anyObject is an interface type naming every API object, as
// controller-runtime's client.Object does.
type anyObject interface {
	metav1.Object
	runtime.Object
}

// TestInternFuncForInterface checks that the intern function of an
// interface type interns each object as the function of its own type does:
// a pod's images, not only its metadata.
func TestInternFuncForInterface(t *testing.T) {
	table := newBareInternTable()
	intern := InternFuncFor[anyObject]()
	pods := make([]*corev1.Pod, 3)
	for i := range pods {
		pods[i] = &prodpods.New(1)[0]
		// Equal images in distinct copies, as decoded pods have them.
		pods[i].Spec.Containers[0].Image = strings.Clone(pods[i].Spec.Containers[0].Image)
		want := pods[i].DeepCopy()
		InternObject(table, intern, anyObject(pods[i]))
		if diff := cmp.Diff(want, pods[i]); diff != "" {
			t.Fatalf("interning changed a value (-before +after):\n%s", diff)
		}
	}
	// A string is shared from its second sighting on.
	if x, y := pods[1].Spec.Containers[0].Image, pods[2].Spec.Containers[0].Image; unsafe.StringData(x) != unsafe.StringData(y) {
		t.Error("two pods' equal images interned through an interface type are not one string")
	}
}
