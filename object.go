package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Object is the constraint satisfied by every type an informer can hold: a
// pointer to a Kubernetes API type such as *corev1.Pod, a CRD Go type,
// *metav1.PartialObjectMetadata or *unstructured.Unstructured.
//
// It is comparable so that a missing object can be represented by the zero
// value (a nil pointer).
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// ObjectName identifies an object within its resource: its namespace (empty
// for cluster-scoped objects) and its name. It is client-go's
// cache.ObjectName, so keys pass unchanged to client-go's workqueues.
type ObjectName = cache.ObjectName

// NameOf returns the namespace and name of obj. It does not allocate.
func NameOf[T Object](obj T) ObjectName {
	return ObjectName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// KeyOf returns the cache key of obj: "namespace/name", or "name" for a
// cluster-scoped object, the same key as client-go's MetaNamespaceKeyFunc.
func KeyOf[T Object](obj T) string {
	return NameOf(obj).String()
}

// TransformFunc changes an object before it is stored in the cache, for
// example to drop fields the program never reads and so save memory. It is
// called exactly once per object received from the API server, before the
// object is queued, and never for final-state-unknown deletion records. It
// may modify and return its argument, which nothing else references yet.
//
// An informer's transform is a TransformFunc[T] of its object type
// ([InformerOptions].Transform); a factory-wide one, which must suit every
// type, is a TransformFunc[metav1.Object] ([FactoryOptions].Transform). The
// transforms of this package are generic, so each serves both:
// StripManagedFields[*corev1.Pod] or StripManagedFields[metav1.Object].
type TransformFunc[T metav1.Object] func(obj T) (T, error)
