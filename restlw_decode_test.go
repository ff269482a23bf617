package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// TestDeduplicateOnDecode checks where an informer deduplicating the
// objects of a REST ListerWatcher does it, for pods and for the other
// types with an interning decoder: without a transform, in the decoder of
// a copy of the ListerWatcher sharing sub-objects (the queue's pass off,
// so never run on what the decoder shared; the ListerWatcher given left
// as it was); with one, in the queue's pass, after the transform, with the
// decoder's table.
func TestDeduplicateOnDecode(t *testing.T) {
	t.Run("Pod", checkDeduplicateOnDecode[*corev1.Pod])
	t.Run("Node", checkDeduplicateOnDecode[*corev1.Node])
	t.Run("Deployment", checkDeduplicateOnDecode[*appsv1.Deployment])
	t.Run("Job", checkDeduplicateOnDecode[*batchv1.Job])
}

func checkDeduplicateOnDecode[T Object](t *testing.T) {
	for _, withTransform := range []bool{false, true} {
		lw, err := newRESTListerWatcher[T](&rest.Config{Host: "http://server"}, RESTOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lw.interns == nil || lw.interns.SharesSubObjects() {
			t.Fatalf("the table of a REST ListerWatcher of %T over protobuf is %+v, want one sharing strings only", *new(T), lw.interns)
		}
		opts := InformerOptions[T]{Deduplicate: new(true)}
		if withTransform {
			opts.Transform = StripManagedFields[T]
		}
		inf, err := NewInformer(ListerWatcher[T](lw), opts)
		if err != nil {
			t.Fatal(err)
		}
		type where struct{ OwnLW, DecoderShares, Pass, PassWithDecodersTable bool }
		got := where{OwnLW: inf.source.listerWatcher() != ListerWatcher[T](lw), Pass: inf.queue.intern != nil, PassWithDecodersTable: inf.queue.interns == lw.interns}
		if own, ok := inf.source.listerWatcher().(*restListerWatcher[T]); ok {
			got.DecoderShares = own.interns.SharesSubObjects()
		}
		want := where{OwnLW: true, DecoderShares: true}
		if withTransform {
			want = where{Pass: true, PassWithDecodersTable: true}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("with a transform: %v (-want +got):\n%s", withTransform, diff)
		}
		if lw.interns.SharesSubObjects() {
			t.Error("the ListerWatcher given now shares sub-objects")
		}
	}
}
