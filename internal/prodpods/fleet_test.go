package prodpods

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFleetPods checks the replayed pods: each decodes, has the identity
// its cluster and index give it, and the clusters' names repeat where they
// share Deployments while UIDs, IPs and timestamps never do.
func TestFleetPods(t *testing.T) {
	f, err := NewFleet(FleetOptions{Pods: 300, Common: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	type seenKey struct{ kind, value string }
	seen := map[seenKey]string{}
	names := map[string]int{}
	for c := range 3 {
		cl, err := f.Cluster(c)
		if err != nil {
			t.Fatal(err)
		}
		if cl.Len() != 300 {
			t.Fatalf("cluster %d has %d pods, want 300", c, cl.Len())
		}
		for i := range cl.Len() {
			pod, err := cl.Pod(i, 0, MinResourceVersion+uint64(i))
			if err != nil {
				t.Fatalf("cluster %d pod %d: %v", c, i, err)
			}
			if pod.Name != cl.Name(i) || pod.Namespace != cl.Namespace(i) {
				t.Fatalf("cluster %d pod %d is %s/%s, Name and Namespace say %s/%s", c, i, pod.Namespace, pod.Name, cl.Namespace(i), cl.Name(i))
			}
			if len(pod.ManagedFields) != 3 || len(pod.Status.Conditions) != 5 || pod.Spec.NodeName == "" {
				t.Fatalf("cluster %d pod %d lacks its shape: %d managers, %d conditions, node %q", c, i, len(pod.ManagedFields), len(pod.Status.Conditions), pod.Spec.NodeName)
			}
			names[pod.Namespace+"/"+pod.Name]++
			where := pod.Name
			for _, k := range []seenKey{
				{"uid", string(pod.UID)}, {"pod IP", pod.Status.PodIP},
				{"creation time", pod.CreationTimestamp.UTC().String()}, {"container ID", pod.Status.ContainerStatuses[0].ContainerID},
			} {
				if k.kind == "creation time" {
					// Replicas of different Deployments of one cluster
					// may be created in the same second; clusters never.
					k.value += "@" + string(rune('0'+c))
					for other := range 3 {
						if other != c {
							if _, dup := seen[seenKey{k.kind, pod.CreationTimestamp.UTC().String() + "@" + string(rune('0'+other))}]; dup {
								t.Fatalf("cluster %d pod %s has a creation time of cluster %d", c, where, other)
							}
						}
					}
					seen[k] = where
					continue
				}
				if prev, dup := seen[k]; dup {
					t.Fatalf("%s %s of cluster %d pod %s repeats that of %s", k.kind, k.value, c, where, prev)
				}
				seen[k] = where
			}
		}
	}
	shared := 0
	for _, n := range names {
		if n == 3 {
			shared++
		}
	}
	if shared != 150 {
		t.Errorf("%d pod names appear in all 3 clusters, want the 150 of common Deployments", shared)
	}
}

// TestFleetPodVersion checks that a later version changes the pod's
// resource version and readiness time, and nothing else.
func TestFleetPodVersion(t *testing.T) {
	f, err := NewFleet(FleetOptions{Pods: 50})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := f.Cluster(7)
	if err != nil {
		t.Fatal(err)
	}
	a, err := cl.Pod(3, 0, MinResourceVersion+5)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cl.Pod(3, 2, MinResourceVersion+9)
	if err != nil {
		t.Fatal(err)
	}
	if b.ResourceVersion != "1000000009" {
		t.Errorf("resource version %s, want 1000000009", b.ResourceVersion)
	}
	if got := b.Status.Conditions[2].LastTransitionTime.Sub(a.Status.Conditions[2].LastTransitionTime.Time); got.Minutes() != 2 {
		t.Errorf("version 2's readiness is %v after version 0's, want 2m", got)
	}
	a.ResourceVersion, a.Status.Conditions, a.ManagedFields = b.ResourceVersion, b.Status.Conditions, b.ManagedFields
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("versions differ beyond resource version, conditions and managed fields (-0 +2):\n%s", diff)
	}
}

// BenchmarkAppendPod measures what a replay server spends per pod served.
func BenchmarkAppendPod(b *testing.B) {
	f, err := NewFleet(FleetOptions{Pods: 1000})
	if err != nil {
		b.Fatal(err)
	}
	cl, err := f.Cluster(0)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = cl.AppendPod(buf[:0], i%1000, 0, MinResourceVersion)
	}
	b.SetBytes(int64(len(buf)))
}
