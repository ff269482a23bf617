package crdtypes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informer/internal/prodpods"
)

// epoch is the creation time of the first workload: fixed, so that runs
// are reproducible.
var epoch = time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

// templateCount is how many different jobs the workloads are replicas of:
// a few, as a batch system runs many copies of few job shapes.
const templateCount = 8

// template is one job shape: the spec, admission and managed fields its
// replicas share.
type template struct {
	index    int
	name     string
	ns       string
	labels   map[string]string
	spec     WorkloadSpec
	admitted Admission
	requests []PodSetRequest
	owner    metav1.OwnerReference
	fields   [3][]byte // FieldsV1 of the three managers
}

// New returns n Workloads by value, the way a decoded WorkloadList holds
// them: replicas of templateCount job shapes whose pod sets hold the pod
// templates of W6's production-like pods (internal/prodpods). Names, UIDs,
// resource versions, timestamps and condition messages differ between
// replicas; specs and admissions are equal within a template. Each has the
// managed fields of three managers and is about 10 KB as JSON. They are
// deterministic: the same n gives the same objects. Replicas share the
// slices, maps and pointers of their template (the objects are meant to be
// encoded or compared, not written to).
func New(n int) []Workload {
	templates := newTemplates()
	out := make([]Workload, n)
	for i := range out {
		out[i] = templates[i%len(templates)].replica(i)
	}
	return out
}

// newTemplates builds the job shapes from the first pod of as many of
// prodpods' Deployments.
func newTemplates() []template {
	pods := prodpods.New(400) // 10 to 50 replicas per Deployment: at least templateCount of them
	var firsts []corev1.Pod
	seen := map[string]bool{}
	for _, p := range pods {
		if owner := string(p.OwnerReferences[0].UID); !seen[owner] {
			seen[owner] = true
			firsts = append(firsts, p)
		}
	}
	if len(firsts) < templateCount {
		panic(fmt.Sprintf("crdtypes: prodpods gave %d pod templates, want %d", len(firsts), templateCount))
	}
	templates := make([]template, templateCount)
	for t := range templates {
		templates[t] = newTemplate(t, firsts[t], firsts[(t+3)%len(firsts)])
	}
	return templates
}

// podTemplate returns the pod template a job controller would have
// written for pod's spec: its labels and annotations, its spec without
// what the scheduler and kubelet set.
func podTemplate(pod corev1.Pod) corev1.PodTemplateSpec {
	spec := pod.Spec
	spec.NodeName = ""
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
		Spec:       spec,
	}
}

// newTemplate builds job shape t: a launcher pod set from first and, for
// one template in four, a worker pod set from second.
func newTemplate(t int, first, second corev1.Pod) template {
	name := "training-job-" + strconv.Itoa(t)
	ns := "research-" + strconv.Itoa(t%3)
	priority := int32(100 * (t%4 + 1))
	active := true
	count := int32(1)
	sets := []PodSet{{Name: "launcher", Template: podTemplate(first), Count: 1}}
	if t%4 == 0 {
		workers := int32(4 + t)
		sets = append(sets, PodSet{Name: "workers", Template: podTemplate(second), Count: workers, MinCount: &workers})
		count = workers
	}
	cpu, mem := resource.MustParse(strconv.Itoa(int(count)+1)+"500m"), resource.MustParse(strconv.Itoa(int(count)*2+1)+"Gi")
	tmpl := template{
		index:  t,
		name:   name,
		ns:     ns,
		labels: map[string]string{"kueue.x-k8s.io/queue-name": "team-queue-" + strconv.Itoa(t%3), "kueue.x-k8s.io/job-uid": fmt.Sprintf("0f1e2d3c-%04x-4000-8000-000000000000", t)},
		spec: WorkloadSpec{
			PodSets:             sets,
			QueueName:           "team-queue-" + strconv.Itoa(t%3),
			PriorityClassName:   "batch-priority-" + strconv.Itoa(t%4),
			Priority:            &priority,
			PriorityClassSource: "kueue.x-k8s.io/workloadpriorityclass",
			Active:              &active,
		},
		owner: metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, Controller: &active, BlockOwnerDeletion: &active},
	}
	for _, s := range sets {
		c := s.Count
		tmpl.admitted.PodSetAssignments = append(tmpl.admitted.PodSetAssignments, PodSetAssignment{
			Name:          s.Name,
			Flavors:       map[corev1.ResourceName]string{corev1.ResourceCPU: "on-demand-" + strconv.Itoa(t%2), corev1.ResourceMemory: "on-demand-" + strconv.Itoa(t%2)},
			ResourceUsage: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
			Count:         &c,
		})
		tmpl.requests = append(tmpl.requests, PodSetRequest{Name: s.Name, Resources: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}})
	}
	tmpl.admitted.ClusterQueue = "cluster-queue-" + strconv.Itoa(t%2)
	tmpl.fields = fieldSets(tmpl)
	return tmpl
}

// replica returns workload i, a replica of t.
func (t template) replica(i int) Workload {
	created := epoch.Add(time.Duration(i) * 7 * time.Second)
	reserved := metav1.NewTime(created.Add(2 * time.Second))
	admitted := metav1.NewTime(created.Add(3 * time.Second))
	ready := metav1.NewTime(created.Add(40 * time.Second))
	uid := types.UID(fmt.Sprintf("7a6b5c4d-%04x-4e3f-9a1b-%012x", i%65536, i))
	owner := t.owner
	owner.Name = t.name + "-" + strconv.Itoa(i)
	owner.UID = types.UID(fmt.Sprintf("1b2c3d4e-%04x-4f5a-8b6c-%012x", i%65536, i))
	labels := map[string]string{}
	for k, v := range t.labels {
		labels[k] = v
	}
	labels["kueue.x-k8s.io/job-uid"] = string(owner.UID)
	admission := t.admitted
	return Workload{
		TypeMeta: metav1.TypeMeta{},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "job-" + owner.Name + "-" + fmt.Sprintf("%05x", i*2654435761%(1<<20)),
			Namespace:         t.ns,
			UID:               uid,
			ResourceVersion:   strconv.Itoa(20_000_000 + i),
			Generation:        1,
			CreationTimestamp: metav1.NewTime(created),
			Labels:            labels,
			OwnerReferences:   []metav1.OwnerReference{owner},
			Finalizers:        []string{"kueue.x-k8s.io/resource-in-use"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				managedEntry("kueue-job-controller", "", metav1.NewTime(created), t.fields[0]),
				managedEntry("kueue-admission", "status", admitted, t.fields[1]),
				managedEntry("kueue-pods-ready", "status", ready, t.fields[2]),
			},
		},
		Spec: t.spec,
		Status: WorkloadStatus{
			Admission: &admission,
			Conditions: []metav1.Condition{
				{Type: "QuotaReserved", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: reserved, Reason: "QuotaReserved", Message: "Quota reserved in ClusterQueue " + t.admitted.ClusterQueue},
				{Type: "Admitted", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: admitted, Reason: "Admitted", Message: "The workload is admitted"},
				{Type: "PodsReady", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: ready, Reason: "PodsReady", Message: "All pods reached readiness and the workload is running"},
			},
			AdmissionChecks:  []AdmissionCheckState{{Name: "provisioning", State: "Ready", LastTransitionTime: admitted, Message: "Provisioned " + strconv.Itoa(i%97) + " nodes"}},
			ResourceRequests: t.requests,
		},
	}
}

// managedEntry is one manager's entry in the managed fields.
func managedEntry(manager, subresource string, at metav1.Time, raw []byte) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: GroupVersion.String(), Time: &at,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}, Subresource: subresource,
	}
}

// fieldSets returns the FieldsV1 JSON of t's three managers: the job
// controller owns the metadata and spec it wrote, the admission controller
// the admission, quota and check status, the pods-ready controller its
// condition.
func fieldSets(t template) [3][]byte {
	spec := fieldsOf(t.spec)
	meta := map[string]any{"f:labels": keysOf(t.labels), "f:ownerReferences": map[string]any{".": map[string]any{}, `k:{"uid":"@uid@"}`: map[string]any{}}}
	condition := func(typ string) map[string]any {
		return map[string]any{`k:{"type":"` + typ + `"}`: map[string]any{".": map[string]any{}, "f:lastTransitionTime": map[string]any{}, "f:message": map[string]any{}, "f:observedGeneration": map[string]any{}, "f:reason": map[string]any{}, "f:status": map[string]any{}, "f:type": map[string]any{}}}
	}
	admission := map[string]any{"f:status": map[string]any{
		"f:admission": fieldsOf(t.admitted), "f:conditions": condition("QuotaReserved"),
		"f:admissionChecks":  map[string]any{".": map[string]any{}, `k:{"name":"provisioning"}`: map[string]any{".": map[string]any{}, "f:lastTransitionTime": map[string]any{}, "f:message": map[string]any{}, "f:name": map[string]any{}, "f:state": map[string]any{}}},
		"f:resourceRequests": map[string]any{".": map[string]any{}},
	}}
	ready := map[string]any{"f:status": map[string]any{"f:conditions": condition("PodsReady")}}
	var out [3][]byte
	for i, set := range []map[string]any{{"f:metadata": meta, "f:spec": spec}, admission, ready} {
		raw, err := json.Marshal(set)
		if err != nil {
			panic(fmt.Sprintf("crdtypes: encoding managed fields: %v", err))
		}
		out[i] = raw
	}
	return out
}

// keysOf is the field set of a map's keys.
func keysOf(m map[string]string) map[string]any {
	s := map[string]any{".": map[string]any{}}
	for k := range m {
		s["f:"+k] = map[string]any{}
	}
	return s
}

// fieldsOf is the field set of every member of v's JSON: objects by
// member, lists as a whole (the element keys of a real set do not change
// the size much).
func fieldsOf(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("crdtypes: encoding a template: %v", err))
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		panic(fmt.Sprintf("crdtypes: decoding a template: %v", err))
	}
	return fieldsOfValue(tree, 6)
}

// fieldsOfValue is fieldsOf for a decoded value, down to depth levels (a
// manager's set lists a pod template's fields in full; these stop at the
// containers, for an object about the size of a real Workload).
func fieldsOfValue(v any, depth int) map[string]any {
	out := map[string]any{}
	if depth == 0 {
		return out
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out["."] = map[string]any{}
		for _, k := range keys {
			out["f:"+k] = fieldsOfValue(v[k], depth-1)
		}
	case []any:
		out["."] = map[string]any{}
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					out[`k:{"name":"`+name+`"}`] = fieldsOfValue(m, depth-1)
				}
			}
		}
	}
	return out
}
