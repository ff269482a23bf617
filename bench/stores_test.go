package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestCheckSameKeys(t *testing.T) {
	a, b, c := newPod(1), newPod(2), newPod(3)
	for _, tc := range []struct {
		name      string
		want      int
		cg, ours  []*corev1.Pod
		wantError string
	}{
		{"same pods in another order", 2, []*corev1.Pod{a, b}, []*corev1.Pod{b, a}, ""},
		{"client-go short", 3, []*corev1.Pod{a, b}, []*corev1.Pod{a, b, c}, "client-go returned 2 pods, want 3"},
		{"ours short", 2, []*corev1.Pod{a, b}, []*corev1.Pod{a}, "ours returned 1 pods, want 2"},
		{"different pods", 2, []*corev1.Pod{a, b}, []*corev1.Pod{a, c}, "results differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSameKeys("q", tc.want, tc.cg, tc.ours)
			if tc.wantError == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantError)
			}
		})
	}
}

func TestRetainedHeapPerPodCountsThePods(t *testing.T) {
	perPod, err := retainedHeapPerPod(2000, func(pods []*corev1.Pod) (any, error) { return pods, nil })
	if err != nil {
		t.Fatal(err)
	}
	// A pod is about 5.5 KB on the heap; the slice adds 8 B per pod.
	if perPod < 5000 || perPod > 6000 {
		t.Fatalf("%.0f B per pod, want about 5,500", perPod)
	}
}

func TestBothIndexersIndexByNode(t *testing.T) {
	pod := newPod(7)
	cgValues, err := clientGoNodeIndexFunc(pod)
	if err != nil {
		t.Fatal(err)
	}
	ourValues, err := ourNodeIndexFunc(pod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"node-7"}, cgValues); diff != "" {
		t.Errorf("client-go (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"node-7"}, ourValues); diff != "" {
		t.Errorf("ours (-want +got):\n%s", diff)
	}
	if _, err := clientGoNodeIndexFunc("not a pod"); err == nil {
		t.Error("client-go index function accepted a string")
	}
}

func TestNodeMovesAlternate(t *testing.T) {
	pod := newPod(7)
	var nodes []string
	update := alternate(nodeMoves(pod, "node-8"), func(p *corev1.Pod) error {
		nodes = append(nodes, p.Spec.NodeName)
		return nil
	})
	for range 4 {
		if err := update(); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"node-8", "node-7", "node-8", "node-7"}, nodes); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if pod.Spec.NodeName != "node-7" {
		t.Fatal("nodeMoves changed the original pod")
	}
}
