package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// sinkPod keeps measured single-object results alive.
var sinkPod *corev1.Pod

// runGet is W5: GetByKey on the store and Get through the namespaced lister.
func runGet(cfg config) ([]benchkit.Row, error) {
	st, err := storesFor(cfg)
	if err != nil {
		return nil, err
	}
	const namespace, name = "ns-7", "pod-7007"
	key := namespace + "/" + name
	cgLister := corev1listers.NewPodLister(st.clientGo).Pods(namespace)
	ourLister := informer.NewLister(st.ours, corev1.SchemeGroupVersion.WithResource("pods")).Namespace(namespace)

	getByKeyCase := fmt.Sprintf("GetByKey(%q)", key)
	cgGetByKey := func() error {
		obj, exists, err := st.clientGo.GetByKey(key)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("client-go: %s not found", key)
		}
		sinkPod, _ = obj.(*corev1.Pod)
		return nil
	}
	ourGetByKey := func() error {
		pod, exists, err := st.ours.GetByKey(key)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("ours: %s not found", key)
		}
		sinkPod = pod
		return nil
	}
	cg, our, err := compareOps(cfg, cgGetByKey, ourGetByKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", getByKeyCase, err)
	}
	rows := opRows("W5", getByKeyCase, cg, our, false, false)

	getCase := fmt.Sprintf("Namespace(%q).Get(%q)", namespace, name)
	cgGet := func() error {
		pod, err := cgLister.Get(name)
		sinkPod = pod
		return err
	}
	ourGet := func() error {
		pod, err := ourLister.Get(name)
		sinkPod = pod
		return err
	}
	cg, our, err = compareOps(cfg, cgGet, ourGet)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", getCase, err)
	}
	return append(rows, opRows("W5", getCase, cg, our, false, false)...), nil
}
