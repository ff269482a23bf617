package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestNewPodIsDeterministicAndShareNothing(t *testing.T) {
	a, b := newPod(7007), newPod(7007)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two generations of pod 7007 differ (-first +second):\n%s", diff)
	}
	if &a.Labels == &b.Labels || &a.Spec.Containers[0] == &b.Spec.Containers[0] {
		t.Fatal("two generations share memory")
	}
}

func TestNewPodFollowsTheSpec(t *testing.T) {
	pod := newPod(7007)
	type shape struct {
		Name, Namespace, Node, App, Tier string
		Annotations, Owners, Containers  int
		Env, Conditions, Statuses        int
		Phase                            corev1.PodPhase
	}
	got := shape{
		Name: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName,
		App: pod.Labels["app"], Tier: pod.Labels["tier"],
		Annotations: len(pod.Annotations), Owners: len(pod.OwnerReferences), Containers: len(pod.Spec.Containers),
		Env: len(pod.Spec.Containers[0].Env), Conditions: len(pod.Status.Conditions), Statuses: len(pod.Status.ContainerStatuses),
		Phase: pod.Status.Phase,
	}
	want := shape{
		Name: "pod-7007", Namespace: "ns-7", Node: "node-7", App: "app-7", Tier: "tier-2",
		Annotations: 2, Owners: 1, Containers: 1, Env: 5, Conditions: 4, Statuses: 1,
		Phase: corev1.PodRunning,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pod 7007 (-want +got):\n%s", diff)
	}
	if pod.Labels["pod-template-hash"] != newPod(7000).Labels["pod-template-hash"] {
		t.Fatal("pods of the same ten share a pod-template-hash")
	}
	if pod.Labels["pod-template-hash"] == newPod(7010).Labels["pod-template-hash"] {
		t.Fatal("pods of different tens share a pod-template-hash")
	}
}

func TestNewPodListHoldsTheSamePods(t *testing.T) {
	list := newPodList(3, "42")
	if list.ResourceVersion != "42" {
		t.Fatalf("list resource version %q, want 42", list.ResourceVersion)
	}
	want := []corev1.Pod{*newPod(0), *newPod(1), *newPod(2)}
	if diff := cmp.Diff(want, list.Items); diff != "" {
		t.Fatalf("list items (-want +got):\n%s", diff)
	}
}

func TestPodSizesMatchTheSpec(t *testing.T) {
	jsonBytes, heapBytes, err := podSizes(200)
	if err != nil {
		t.Fatal(err)
	}
	// The spec asks for about 2.3 KB as JSON and 5.5 KB on the heap.
	if jsonBytes < 2100 || jsonBytes > 2500 {
		t.Errorf("pod is %.0f B as JSON, want about 2,300", jsonBytes)
	}
	if heapBytes < 5000 || heapBytes > 6000 {
		t.Errorf("pod is %.0f B on the heap, want about 5,500", heapBytes)
	}
}
