package crdtypes

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of the types in this package.
var GroupVersion = schema.GroupVersion{Group: "kueue.bench.kubetyped.io", Version: "v1beta1"}

// Resource is the resource the CRD (Manifest) serves Workloads as.
var Resource = GroupVersion.WithResource("workloads")

// AddToScheme registers Workload and WorkloadList, and the meta types of
// their group version (ListOptions, Status, WatchEvent…), in scheme.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Workload{}, &WorkloadList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
