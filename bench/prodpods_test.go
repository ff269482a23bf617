package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestProdPodSizesMatchTheSpec(t *testing.T) {
	protoBytes, heapBytes, err := prodPodSizes(1000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("production-like pod: %.0f B as protobuf, %.0f B on the heap once decoded", protoBytes, heapBytes)
	// The spec asks for about 9 KB as protobuf.
	if protoBytes < 8000 || protoBytes > 10500 {
		t.Errorf("pod is %.0f B as protobuf, want about 9,000", protoBytes)
	}
	if heapBytes < protoBytes {
		t.Errorf("a decoded pod takes %.0f B on the heap, less than its %.0f B of protobuf", heapBytes, protoBytes)
	}
}

func TestProdPodListIsDeterministicAndRoundTrips(t *testing.T) {
	first, err := encodeProdPodList(newProdPods(300), "77")
	if err != nil {
		t.Fatal(err)
	}
	second, err := encodeProdPodList(newProdPods(300), "77")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("two encodings of the same fixtures differ")
	}
	list, err := decodeProdPodList(first)
	if err != nil {
		t.Fatal(err)
	}
	if list.ResourceVersion != "77" {
		t.Errorf("list resource version %q, want 77", list.ResourceVersion)
	}
	if diff := cmp.Diff(newProdPods(300), list.Items); diff != "" {
		t.Fatalf("decoded list (-generated +decoded):\n%s", diff)
	}
	again, err := decodeProdPodList(first)
	if err != nil {
		t.Fatal(err)
	}
	if &again.Items[0] == &list.Items[0] || &again.Items[0].Labels == &list.Items[0].Labels {
		t.Fatal("two decodings share memory")
	}
}

func TestProdWatchDecodesEveryEvent(t *testing.T) {
	pods := newProdPods(60)
	body, err := encodeProdWatch(pods, watch.Modified)
	if err != nil {
		t.Fatal(err)
	}
	w, err := newProdWatch(body)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []corev1.Pod
	for e := range w.ResultChan() { // closed at the end of the body
		pod, ok := e.Object.(*corev1.Pod)
		if e.Type != watch.Modified || !ok {
			t.Fatalf("event %d: %s of a %T, want Modified of a *v1.Pod", len(got), e.Type, e.Object)
		}
		got = append(got, *pod)
	}
	if diff := cmp.Diff(pods, got); diff != "" {
		t.Fatalf("watched pods (-generated +decoded):\n%s", diff)
	}
}
