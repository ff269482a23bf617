package synctrial

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// The built-in implementations, as Spec.Impl names them.
const (
	ImplClientGo = "client-go"
	ImplOurs     = "ours"
)

// startClientGo starts the pod informer of client-go's shared informer
// factory over a protobuf clientset without client-side rate limits, as a
// controller builds it (the namespace index included); DropManagedFields
// strips them with a transform.
func startClientGo(ctx context.Context, config *rest.Config, spec Spec, counters *Counters) (func() bool, error) {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.QPS, config.Burst = -1, 0
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	var opts []informers.SharedInformerOption
	if spec.DropManagedFields {
		opts = append(opts, informers.WithTransform(func(obj any) (any, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { counters.Adds.Add(1) },
		UpdateFunc: func(any, any) { counters.Updates.Add(1) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return inf.HasSynced, nil
}

// startOurs starts this library's pod informer from its factory, with the
// namespace index client-go's factory gives its informers;
// DropManagedFields drops them with DropFields, on the wire, and
// Deduplicate turns on InformerOptions.Deduplicate.
func startOurs(ctx context.Context, config *rest.Config, spec Spec, counters *Counters) (func() bool, error) {
	opts := informer.FactoryOptions{Deduplicate: spec.Deduplicate}
	if spec.DropManagedFields {
		opts.DropFields = []string{informer.ManagedFields}
	}
	factory, err := informer.NewFactory(config, opts)
	if err != nil {
		return nil, err
	}
	inf, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
	})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { counters.Adds.Add(1) },
		UpdateFunc: func(*corev1.Pod, *corev1.Pod) { counters.Updates.Add(1) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx)
	return inf.HasSynced, nil
}
