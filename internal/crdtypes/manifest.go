package crdtypes

import _ "embed"

// Manifest is the CustomResourceDefinition of Workload in YAML
// (apiextensions.k8s.io/v1), for creating it on a real server: a
// structural schema that keeps spec and status as the client wrote them.
//
//go:embed crd.yaml
var Manifest []byte
