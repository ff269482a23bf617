package crdtypes

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload is a unit of admission: the pods of one job, as a queueing
// controller admits them together.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpec   `json:"spec,omitempty"`
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}

// WorkloadSpec is what a Workload asks for.
type WorkloadSpec struct {
	// PodSets are the groups of identical pods of the workload.
	PodSets []PodSet `json:"podSets"`
	// QueueName is the name of the LocalQueue the workload is submitted to.
	QueueName string `json:"queueName,omitempty"`
	// PriorityClassName and Priority are the workload's priority.
	PriorityClassName   string `json:"priorityClassName,omitempty"`
	Priority            *int32 `json:"priority,omitempty"`
	PriorityClassSource string `json:"priorityClassSource,omitempty"`
	// Active is false for a workload deactivated by a user or a controller.
	Active *bool `json:"active,omitempty"`
	// MaximumExecutionTimeSeconds bounds the time the workload runs.
	MaximumExecutionTimeSeconds *int32 `json:"maximumExecutionTimeSeconds,omitempty"`
}

// PodSet is a group of Count pods made from one template.
type PodSet struct {
	Name     string                 `json:"name"`
	Template corev1.PodTemplateSpec `json:"template"`
	Count    int32                  `json:"count"`
	MinCount *int32                 `json:"minCount,omitempty"`
	// TopologyRequest asks for the pods to be placed close together.
	TopologyRequest *PodSetTopologyRequest `json:"topologyRequest,omitempty"`
}

// PodSetTopologyRequest is where in the topology a pod set must or should go.
type PodSetTopologyRequest struct {
	Required      *string `json:"required,omitempty"`
	Preferred     *string `json:"preferred,omitempty"`
	PodIndexLabel *string `json:"podIndexLabel,omitempty"`
}

// WorkloadStatus is what the controllers observed of a Workload.
type WorkloadStatus struct {
	// Admission is the quota reservation of an admitted workload.
	Admission *Admission `json:"admission,omitempty"`
	// RequeueState says when an evicted workload is queued again.
	RequeueState *RequeueState `json:"requeueState,omitempty"`
	// Conditions are QuotaReserved, Admitted, PodsReady, Evicted, Finished.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReclaimablePods are the pods of each pod set that finished.
	ReclaimablePods []ReclaimablePod `json:"reclaimablePods,omitempty"`
	// AdmissionChecks are the checks the workload must pass.
	AdmissionChecks []AdmissionCheckState `json:"admissionChecks,omitempty"`
	// ResourceRequests are the resources the pod sets request in total.
	ResourceRequests []PodSetRequest `json:"resourceRequests,omitempty"`
}

// Admission is the cluster queue and flavors a workload was admitted with.
type Admission struct {
	ClusterQueue      string             `json:"clusterQueue"`
	PodSetAssignments []PodSetAssignment `json:"podSetAssignments"`
}

// PodSetAssignment is the flavor of each resource of one pod set and the
// quota it uses.
type PodSetAssignment struct {
	Name          string                         `json:"name"`
	Flavors       map[corev1.ResourceName]string `json:"flavors,omitempty"`
	ResourceUsage corev1.ResourceList            `json:"resourceUsage,omitempty"`
	Count         *int32                         `json:"count,omitempty"`
}

// RequeueState counts the requeues of an evicted workload.
type RequeueState struct {
	Count     *int32       `json:"count,omitempty"`
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
}

// ReclaimablePod is the number of finished pods of one pod set.
type ReclaimablePod struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// AdmissionCheckState is the state of one admission check.
type AdmissionCheckState struct {
	Name               string         `json:"name"`
	State              string         `json:"state"`
	LastTransitionTime metav1.Time    `json:"lastTransitionTime"`
	Message            string         `json:"message"`
	PodSetUpdates      []PodSetUpdate `json:"podSetUpdates,omitempty"`
}

// PodSetUpdate is what an admission check adds to a pod set's pods.
type PodSetUpdate struct {
	Name         string              `json:"name"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Annotations  map[string]string   `json:"annotations,omitempty"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// PodSetRequest is the total of the resources one pod set requests.
type PodSetRequest struct {
	Name      string              `json:"name"`
	Resources corev1.ResourceList `json:"resources,omitempty"`
}
