package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podEpoch is the fixed creation time of every generated pod, so that runs
// are reproducible.
var podEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newPod returns pod i as described in shared/benchmarks.md: about 2.3 KB as
// JSON and 5.5 KB on the heap. Every call builds a fresh object that shares
// nothing with other pods, so that heap measurements count each pod fully.
func newPod(i int) *corev1.Pod {
	pod := &corev1.Pod{}
	fillPod(pod, i)
	return pod
}

// fillPod writes pod i into *pod; it lets a PodList's Items be generated in
// place, the way a decoder fills them.
func fillPod(pod *corev1.Pod, i int) {
	n := strconv.Itoa(i)
	hash := fmt.Sprintf("%08x", uint32(i/10)*2654435761)
	rsName := "rs-" + strconv.Itoa(i/10) + "-" + hash
	node := "node-" + strconv.Itoa(i%1000)
	created := metav1.NewTime(podEpoch.Add(time.Duration(i) * time.Second))
	started := metav1.NewTime(created.Add(2 * time.Second))
	controller := true
	*pod = corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "pod-" + n,
			Namespace:         "ns-" + strconv.Itoa(i%1000),
			UID:               types.UID(fmt.Sprintf("6f1c2a3e-%04x-4b5c-8d9e-%012x", i%65536, i)),
			ResourceVersion:   strconv.Itoa(1000 + i),
			CreationTimestamp: created,
			Labels: map[string]string{
				"app":               "app-" + strconv.Itoa(i%100),
				"tier":              "tier-" + strconv.Itoa(i%3),
				"pod-template-hash": hash,
			},
			Annotations: map[string]string{
				"kubernetes.io/config.seen":   created.UTC().Format(time.RFC3339Nano),
				"example.com/build-reference": "git-" + hash + "-" + n,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1",
				Kind:       "ReplicaSet",
				Name:       rsName,
				UID:        types.UID(fmt.Sprintf("0a9b8c7d-%04x-4e5f-9a0b-%012x", (i/10)%65536, i/10)),
				Controller: &controller,
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/team/app-" + strconv.Itoa(i%100) + ":v1." + strconv.Itoa(i%7),
				Args:  []string{"--listen=:8080", "--upstream-timeout=30s"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "POD_INDEX", Value: n},
					{Name: "APP_NAME", Value: "app-" + strconv.Itoa(i%100)},
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "CACHE_SIZE_MB", Value: "256"},
					{Name: "UPSTREAM_URL", Value: "http://upstream.ns-" + strconv.Itoa(i%1000) + ".svc:8080"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					},
					Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("500m"),
						corev1.ResourceMemory: resource.MustParse("512Mi"),
					},
				},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy:     corev1.DNSClusterFirst,
			SchedulerName: "default-scheduler",
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			HostIP:    "10.0." + strconv.Itoa(i%1000/250) + "." + strconv.Itoa(i%250+1),
			PodIP:     "10.244." + strconv.Itoa(i/250%250) + "." + strconv.Itoa(i%250+1),
			StartTime: &started,
			QOSClass:  corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:         "main",
				Ready:        true,
				RestartCount: 0,
				Image:        "registry.example.com/team/app-" + strconv.Itoa(i%100) + ":v1." + strconv.Itoa(i%7),
				ImageID:      "registry.example.com/team/app@sha256:" + fmt.Sprintf("%064x", i%100),
				ContainerID:  "containerd://" + fmt.Sprintf("%064x", i),
				State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			}},
		},
	}
}

// newPods returns pods 0..n-1.
func newPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = newPod(i)
	}
	return pods
}

// newPodList returns a PodList holding pods 0..n-1 by value, the shape a
// client-go lister-watcher returns from a list call.
func newPodList(n int, resourceVersion string) *corev1.PodList {
	list := &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: resourceVersion},
		Items:    make([]corev1.Pod, n),
	}
	for i := range list.Items {
		fillPod(&list.Items[i], i)
	}
	return list
}

// podSizes reports the average JSON size and heap size of a generated pod,
// measured over sample pods.
func podSizes(sample int) (jsonBytes, heapBytes float64, err error) {
	total := 0
	for i := range sample {
		data, err := json.Marshal(newPod(i))
		if err != nil {
			return 0, 0, fmt.Errorf("encoding pod %d: %w", i, err)
		}
		total += len(data)
	}
	before := liveHeap()
	pods := newPods(sample)
	after := liveHeap()
	runtime.KeepAlive(pods)
	slice := float64(sample) * 8 // the []*Pod holding them
	return float64(total) / float64(sample), (float64(after-before) - slice) / float64(sample), nil
}

// liveHeap returns the bytes of live heap objects once garbage
// collections have freed what nothing uses: three, so that what is freed
// only once weak pointers to it are cleared, and what sync.Pools keep for a
// cycle, are gone too, then a last one to read the heap after. It pauses
// after each of the first three for the cleanups the collection queued to
// run (runtime.AddCleanup, on the runtime's own goroutine): ours sweep the
// intern tables and let an idle queue's free chunks go after collections,
// and a collection that starts before they ran counts what they let go
// (TestMemoryWorkload read a negative retained heap per pod at 300 pods,
// the previous configuration's tables and chunks freed after its
// "before").
func liveHeap() uint64 {
	for range 3 {
		runtime.GC()
		time.Sleep(settleCleanups)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
