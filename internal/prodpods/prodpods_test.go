package prodpods

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProdPodsFollowTheSpec(t *testing.T) {
	pods := New(2000)
	if len(pods) != 2000 {
		t.Fatalf("%d pods, want 2000", len(pods))
	}
	keys := map[string]bool{}
	uids := map[string]bool{}
	replicas := map[string]int{}
	for i := range pods {
		p := &pods[i]
		keys[p.Namespace+"/"+p.Name] = true
		uids[string(p.UID)] = true
		replicas[p.OwnerReferences[0].Name]++
		env := len(p.Spec.Containers[0].Env) + len(p.Spec.Containers[1].Env)
		var managers []string
		for _, m := range p.ManagedFields {
			managers = append(managers, m.Manager)
		}
		type shape struct {
			Containers, Conditions, Statuses, Owners, Tolerations int
			EnvInRange, Projected, Probes, Security               bool
			Managers                                              []string
		}
		got := shape{
			Containers: len(p.Spec.Containers), Conditions: len(p.Status.Conditions), Statuses: len(p.Status.ContainerStatuses),
			Owners: len(p.OwnerReferences), Tolerations: len(p.Spec.Tolerations),
			EnvInRange: env >= 10 && env <= 20,
			Projected:  p.Spec.Volumes[2].Projected != nil && p.Spec.Volumes[2].Projected.Sources[0].ServiceAccountToken != nil,
			Probes:     p.Spec.Containers[0].LivenessProbe != nil && p.Spec.Containers[0].ReadinessProbe != nil,
			Security:   p.Spec.SecurityContext != nil && p.Spec.Containers[0].SecurityContext != nil,
			Managers:   managers,
		}
		want := shape{
			Containers: 2, Conditions: 5, Statuses: 2, Owners: 1, Tolerations: 2,
			EnvInRange: true, Projected: true, Probes: true, Security: true,
			Managers: []string{"kube-controller-manager", "kube-scheduler", "kubelet"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pod %d (-want +got):\n%s", i, diff)
		}
	}
	if len(keys) != len(pods) || len(uids) != len(pods) {
		t.Errorf("%d distinct names and %d distinct UIDs among %d pods", len(keys), len(uids), len(pods))
	}
	for rs, n := range replicas {
		// The last Deployment may be cut short to make 2,000.
		if (n < 10 || n > 50) && rs != pods[len(pods)-1].OwnerReferences[0].Name {
			t.Errorf("ReplicaSet %s has %d replicas, want 10 to 50", rs, n)
		}
	}
	// Replicas share their template but not their identity.
	a, b := pods[0], pods[1]
	if a.OwnerReferences[0].UID != b.OwnerReferences[0].UID {
		t.Fatal("pods 0 and 1 belong to different Deployments")
	}
	if diff := cmp.Diff(a.Spec.Containers[0].Env, b.Spec.Containers[0].Env); diff != "" {
		t.Errorf("replicas' env differ:\n%s", diff)
	}
	if a.Name == b.Name || a.Status.PodIP == b.Status.PodIP || a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		t.Errorf("replicas share a name, an IP or a creation time: %s %s %s", a.Name, a.Status.PodIP, a.CreationTimestamp)
	}
	// Managed fields name each replica's own volume and IP.
	if volume := a.Spec.Volumes[2].Name; !bytes.Contains(a.ManagedFields[0].FieldsV1.Raw, []byte(`\"`+volume+`\"`)) {
		t.Errorf("kube-controller-manager's fields do not name volume %s: %s", volume, a.ManagedFields[0].FieldsV1.Raw)
	}
	if !bytes.Contains(a.ManagedFields[2].FieldsV1.Raw, []byte(`\"`+a.Status.PodIP+`\"`)) {
		t.Errorf("kubelet's fields do not name IP %s: %s", a.Status.PodIP, a.ManagedFields[2].FieldsV1.Raw)
	}
	if _, ok := pods[0].Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Error("Deployment 0 has no last-applied configuration")
	}
}
