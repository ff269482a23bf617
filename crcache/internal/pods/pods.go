// Package pods builds the pods of the benchmark workloads
// (shared/benchmarks.md, "The pods"), for the cache's tests and its
// benchmark command.
package pods

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Pod returns pod i of the benchmark workloads: namespace
// ns-<i%namespaces>, labels app (app-<i%100>), tier (tier-<i%3>) and
// pod-template-hash, two annotations, an owner reference, one container and
// a running status; about 5.5 KB on the heap. It is deterministic.
func Pod(i, namespaces int) *corev1.Pod {
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("pod-%d", i),
			Namespace:         fmt.Sprintf("ns-%d", i%namespaces),
			UID:               types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			ResourceVersion:   fmt.Sprint(i + 1),
			CreationTimestamp: created,
			Labels: map[string]string{
				"app":               fmt.Sprintf("app-%d", i%100),
				"tier":              fmt.Sprintf("tier-%d", i%3),
				"pod-template-hash": fmt.Sprintf("%08x", (i/10)*2654435761%(1<<32)),
			},
			Annotations: map[string]string{
				"kubernetes.io/psp":           "restricted",
				"example.com/last-restart-at": created.Format(time.RFC3339),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", i/10),
				UID: types.UID(fmt.Sprintf("10000000-0000-0000-0000-%012d", i/10)), Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%1000),
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/app:1.2.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "C", Value: "3"},
					{Name: "D", Value: "4"}, {Name: "E", Value: "5"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			HostIP:    fmt.Sprintf("10.0.%d.%d", i/256%256, i%256),
			PodIP:     fmt.Sprintf("10.1.%d.%d", i/256%256, i%256),
			StartTime: &created,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", Ready: true, Image: "registry.example.com/app:1.2.3",
				ImageID:     "registry.example.com/app@sha256:0123456789abcdef",
				ContainerID: fmt.Sprintf("containerd://%064d", i),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}},
			}},
		},
	}
}
