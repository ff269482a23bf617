// Package crdtypes holds the custom resource type of the W8 and E5
// benchmarks (shared/benchmarks.md) and of the JSON decoder's tests: a
// Workload shaped like Kueue's (kueue.x-k8s.io/v1beta1), with pod sets that
// each hold a full pod template, an admission and status conditions, about
// 10 KB as JSON with the managed fields of three managers. It is not Kueue's
// type: it keeps the fields that make a Workload's size and shape (pod
// templates, resource lists, flavors, conditions), so that decoding and
// caching it costs what a real one does.
//
// +k8s:deepcopy-gen=package
// +groupName=kueue.bench.kubetyped.io
package crdtypes

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --output-file zz_generated.deepcopy.go --go-header-file /dev/null .
