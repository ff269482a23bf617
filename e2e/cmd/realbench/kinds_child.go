package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// kindScheme returns the scheme every side is given for k: nil for the
// built-in kinds, whose sides use client-go's scheme (scheme.Scheme) by
// default, and one knowing Workloads for them, as an operator registers
// its types.
func kindScheme(k benchKind) (*runtime.Scheme, error) {
	if k.name != kindWorkloads {
		return nil, nil
	}
	return workloadScheme()
}

// startKind starts the informer of c.Impl for the objects of kind c.Kind
// in form c.Form and returns its HasSynced: client-go's informer (its
// shared informer factory for typed built-in kinds, a generated informer's
// ListWatch for typed Workloads, its metadata or dynamic informer
// factory), this library's informer from its factory, or the informer of
// controller-runtime's cache or crcache; every one with its default
// settings, but for c.Deduplicate, which turns on this library's
// FactoryOptions.Deduplicate (ours only).
func startKind(ctx context.Context, config *rest.Config, c childSpec, onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	k, ok := benchKindNamed(c.Kind)
	if !ok {
		return nil, fmt.Errorf("unknown -kind %q", c.Kind)
	}
	switch c.Form {
	case formTyped, formMetadata, formUnstructured:
	default:
		return nil, fmt.Errorf("unknown form %q", c.Form)
	}
	scheme, err := kindScheme(k)
	if err != nil {
		return nil, err
	}
	switch c.Impl {
	case implClientGo:
		inf, err := clientGoInformer(ctx, config, k, c.Form)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handlerFuncs(onAdd, onUpdate)); err != nil {
			return nil, err
		}
		go inf.RunWithContext(ctx)
		return inf.HasSynced, nil
	case implOurs:
		factory, err := informer.NewFactory(config, informer.FactoryOptions{Scheme: scheme, Deduplicate: c.Deduplicate})
		if err != nil {
			return nil, err
		}
		if hasSynced, err = startOursKind(factory, k, c.Form, onAdd, onUpdate); err != nil {
			return nil, err
		}
		factory.Start(ctx)
		return hasSynced, nil
	case implControllerRuntime, implCRCache:
		newCache, err := cacheConstructor(c.Impl)
		if err != nil {
			return nil, err
		}
		obj, err := cacheObject(scheme, k, c.Form)
		if err != nil {
			return nil, err
		}
		return startCache(ctx, config, newCache, scheme, obj, onAdd, onUpdate)
	}
	return nil, fmt.Errorf("unknown implementation %q", c.Impl)
}

// clientGoInformer returns client-go's informer of k in form, not started,
// with the namespace index its factories give every informer.
func clientGoInformer(ctx context.Context, config *rest.Config, k benchKind, form string) (toolscache.SharedIndexInformer, error) {
	switch {
	case form == formMetadata:
		mc, err := metadata.NewForConfig(config)
		if err != nil {
			return nil, err
		}
		return metadatainformer.NewSharedInformerFactory(mc, 0).ForResource(k.resource).Informer(), nil
	case form == formUnstructured:
		dc, err := dynamic.NewForConfig(config)
		if err != nil {
			return nil, err
		}
		return dynamicinformer.NewDynamicSharedInformerFactory(dc, 0).ForResource(k.resource).Informer(), nil
	case k.name == kindWorkloads:
		return workloadInformer(config)
	}
	client, err := clientset(config)
	if err != nil {
		return nil, err
	}
	generic, err := informers.NewSharedInformerFactory(client, 0).ForResource(k.resource)
	if err != nil {
		return nil, err
	}
	return generic.Informer(), nil
}

// workloadInformer returns client-go's informer of typed Workloads as a
// generated informer package builds it: a ListWatch over the CRD group's
// JSON REST client.
func workloadInformer(config *rest.Config) (toolscache.SharedIndexInformer, error) {
	scheme, err := workloadScheme()
	if err != nil {
		return nil, err
	}
	client, err := workloadsClient(config, scheme)
	if err != nil {
		return nil, err
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out := &crdtypes.WorkloadList{}
			return out, client.Get().Resource("workloads").VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(out)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return client.Get().Resource("workloads").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}
	return toolscache.NewSharedIndexInformer(lw, &crdtypes.Workload{}, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}), nil
}

// startOursKind adds this library's informer of k in form to factory (see
// startOursFor) and returns its HasSynced.
func startOursKind(factory *informer.Factory, k benchKind, form string, onAdd func(), onUpdate func(rv string)) (func() bool, error) {
	switch form {
	case formMetadata:
		return startOursFor(factory, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: k.resource}, onAdd, onUpdate)
	case formUnstructured:
		return startOursFor(factory, informer.InformerOptions[*unstructured.Unstructured]{Resource: k.resource}, onAdd, onUpdate)
	}
	switch k.name {
	case "pods":
		return startOursFor(factory, informer.InformerOptions[*corev1.Pod]{}, onAdd, onUpdate)
	case "configmaps":
		return startOursFor(factory, informer.InformerOptions[*corev1.ConfigMap]{}, onAdd, onUpdate)
	case "secrets":
		return startOursFor(factory, informer.InformerOptions[*corev1.Secret]{}, onAdd, onUpdate)
	case "services":
		return startOursFor(factory, informer.InformerOptions[*corev1.Service]{}, onAdd, onUpdate)
	case "endpointslices":
		return startOursFor(factory, informer.InformerOptions[*discoveryv1.EndpointSlice]{}, onAdd, onUpdate)
	case "events":
		return startOursFor(factory, informer.InformerOptions[*corev1.Event]{}, onAdd, onUpdate)
	case kindWorkloads:
		return startOursFor(factory, informer.InformerOptions[*crdtypes.Workload]{}, onAdd, onUpdate)
	}
	return nil, fmt.Errorf("no typed informer of %q", k.name)
}

// cacheObject is the object a cache's GetInformer is given for k in form,
// as a controller asks for it: the typed object of scheme (nil:
// client-go's), a
// PartialObjectMetadata or an Unstructured of k's kind.
func cacheObject(scheme *runtime.Scheme, k benchKind, form string) (client.Object, error) {
	switch form {
	case formMetadata:
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(k.kind)
		return obj, nil
	case formUnstructured:
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(k.kind)
		return obj, nil
	}
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	obj, err := scheme.New(k.kind)
	if err != nil {
		return nil, err
	}
	typed, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a client.Object", obj)
	}
	return typed, nil
}
