package informer_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubetyped/informer"
)

func podWithBookkeeping() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "a", Name: "web-1",
		Annotations:   map[string]string{"keep": "1", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}}
}

func unstructuredWithBookkeeping() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name":          "small",
			"annotations":   map[string]any{"keep": "1", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
	}}
}

func TestStripManagedFields(t *testing.T) {
	pod := podWithBookkeeping()
	got, err := informer.StripManagedFields[*corev1.Pod](pod)
	if err != nil {
		t.Fatal(err)
	}
	want := podWithBookkeeping()
	want.ManagedFields = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	if got != pod {
		t.Error("the transform returned a new pod instead of changing its argument")
	}

	u, err := informer.StripManagedFields[*unstructured.Unstructured](unstructuredWithBookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	wantU := unstructuredWithBookkeeping()
	delete(wantU.Object["metadata"].(map[string]any), "managedFields")
	if diff := cmp.Diff(wantU, u); diff != "" {
		t.Errorf("unstructured (-want +got):\n%s", diff)
	}
}

func TestDropAnnotations(t *testing.T) {
	const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	got, err := informer.DropAnnotations[*corev1.Pod](lastApplied, "absent")(podWithBookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	want := podWithBookkeeping()
	want.Annotations = map[string]string{"keep": "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}

	u, err := informer.DropAnnotations[*unstructured.Unstructured](lastApplied)(unstructuredWithBookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	wantU := unstructuredWithBookkeeping()
	wantU.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"keep": "1"}
	if diff := cmp.Diff(wantU, u); diff != "" {
		t.Errorf("unstructured (-want +got):\n%s", diff)
	}
}

// addLabel returns a transform that appends value to the "trace" label.
func addLabel(value string) informer.TransformFunc[*corev1.Pod] {
	return func(pod *corev1.Pod) (*corev1.Pod, error) {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels["trace"] += value
		return pod, nil
	}
}

func TestChainAppliesInOrderAndSkipsNil(t *testing.T) {
	chain := informer.Chain(addLabel("a"), nil, informer.StripManagedFields[*corev1.Pod], addLabel("b"))
	got, err := chain(podWithBookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	want := podWithBookkeeping()
	want.ManagedFields = nil
	want.Labels = map[string]string{"trace": "ab"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
}

func TestChainOfNothingIsIdentity(t *testing.T) {
	pod := podWithBookkeeping()
	got, err := informer.Chain[*corev1.Pod]()(pod)
	if err != nil || got != pod {
		t.Errorf("Chain()(pod) = %p, %v; want %p, nil", got, err, pod)
	}
}

func TestChainStopsAtTheFirstError(t *testing.T) {
	errBad := errors.New("bad pod")
	for _, tc := range []struct {
		name    string
		failing informer.TransformFunc[*corev1.Pod]
		want    string
	}{{
		name:    "error",
		failing: func(*corev1.Pod) (*corev1.Pod, error) { return nil, errBad },
		want:    "transform 2 of 3: bad pod",
	}, {
		name:    "no object",
		failing: func(*corev1.Pod) (*corev1.Pod, error) { return nil, nil },
		want:    "transform 2 of 3 returned no object",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ranAfter := false
			after := func(pod *corev1.Pod) (*corev1.Pod, error) { ranAfter = true; return pod, nil }
			got, err := informer.Chain(addLabel("a"), tc.failing, after)(podWithBookkeeping())
			if got != nil || err == nil {
				t.Fatalf("got %v, %v; want nil and an error", got, err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if errors.Is(err, errBad) != (tc.name == "error") {
				t.Errorf("errors.Is(err, errBad) = %v", errors.Is(err, errBad))
			}
			if ranAfter {
				t.Error("a transform after the failing one ran")
			}
		})
	}
}
