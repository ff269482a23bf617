package informer

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// anyObject is an interface type naming every API object, as
// controller-runtime's client.Object does.
type anyObject interface {
	metav1.Object
	runtime.Object
}

// TestRESTListerWatcherOf checks that a REST ListerWatcher of a type
// chosen at run time, handing objects out through an interface type,
// lists what the one of the static type lists, interns on decode, and
// that an informer deduplicating over it shares sub-objects on decode.
func TestRESTListerWatcherOf(t *testing.T) {
	pods := prodpods.New(20)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for _, p := range pods {
		list.Items = append(list.Items, p)
	}
	body := testkit.EncodeProtobuf(t, list)
	const contentType = string(ContentTypeProtobuf)
	opts := RESTOptions{HTTPClient: servingClient(http.StatusOK, contentType, body)}
	config := &rest.Config{Host: "http://server"}

	typed, err := NewRESTListerWatcher[*corev1.Pod](config, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := typed.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := NewRESTListerWatcherOf[anyObject](config, opts, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lw.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotPods := make([]*corev1.Pod, 0, len(got.Items))
	for _, obj := range got.Items {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			t.Fatalf("listed a %T, want *corev1.Pod", obj)
		}
		gotPods = append(gotPods, pod)
	}
	if diff := cmp.Diff(want.Items, gotPods); diff != "" {
		t.Errorf("items (-NewRESTListerWatcher +NewRESTListerWatcherOf):\n%s", diff)
	}
	if got.ResourceVersion != "42" {
		t.Errorf("resource version %q, want 42", got.ResourceVersion)
	}

	rlw := lw.(*restListerWatcher[anyObject])
	if rlw.interns == nil {
		t.Fatal("NewRESTListerWatcherOf of pods over protobuf does not intern on decode")
	}
	inf, err := NewInformer(lw, InformerOptions[anyObject]{Deduplicate: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	own, ok := inf.source.listerWatcher().(*restListerWatcher[anyObject])
	if !ok || own == rlw || !own.interns.SharesSubObjects() || inf.queue.intern != nil {
		t.Errorf("an informer deduplicating over NewRESTListerWatcherOf does not share on decode: own ListerWatcher %v, queue pass %v", ok && own != rlw, inf.queue.intern != nil)
	}
}

// TestRESTListerWatcherOfErrors checks the errors of bad example objects.
func TestRESTListerWatcherOfErrors(t *testing.T) {
	config := &rest.Config{Host: "http://server"}
	for name, example := range map[string]anyObject{
		"nil":           nil,
		"nil interface": (*corev1.Pod)(nil),
	} {
		_, err := NewRESTListerWatcherOf[anyObject](config, RESTOptions{}, example)
		if name == "nil" && err == nil {
			t.Errorf("%s: no error", name)
		}
		if name == "nil interface" && err != nil {
			// A typed nil names its type: accepted.
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewRESTListerWatcherOf[anyObject](config, RESTOptions{}, anyObject(&metav1.PartialObjectMetadata{})); err == nil {
		t.Error("no error for PartialObjectMetadata")
	}
}
