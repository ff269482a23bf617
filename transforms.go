package informer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetadataTransformFunc changes an object in place through its metadata
// accessors. Unlike a [TransformFunc] it suits every object type, which is
// what a [Factory]-wide transform needs. Like a TransformFunc it runs once per
// object received from the API server, before the object is stored, on an
// object nothing else references yet.
type MetadataTransformFunc func(obj metav1.Object) error

// ClearManagedFields removes metadata.managedFields, the server-side-apply
// bookkeeping that often makes up a large part of an object and that
// controllers seldom read. It never fails.
func ClearManagedFields(obj metav1.Object) error {
	obj.SetManagedFields(nil)
	return nil
}

// TransformFor adapts a MetadataTransformFunc to a TransformFunc[T] that
// changes its argument in place and returns it.
func TransformFor[T Object](transform MetadataTransformFunc) TransformFunc[T] {
	return func(obj T) (T, error) {
		if err := transform(obj); err != nil {
			var zero T
			return zero, err
		}
		return obj, nil
	}
}

// StripManagedFields returns a transform that removes metadata.managedFields
// (see [ClearManagedFields]).
func StripManagedFields[T Object]() TransformFunc[T] {
	return TransformFor[T](ClearManagedFields)
}

// DropAnnotations returns a transform that removes the annotations with the
// given keys, for example the large
// "kubectl.kubernetes.io/last-applied-configuration".
func DropAnnotations[T Object](keys ...string) TransformFunc[T] {
	return TransformFor[T](func(obj metav1.Object) error {
		annotations := obj.GetAnnotations()
		changed := false
		for _, key := range keys {
			if _, ok := annotations[key]; ok {
				delete(annotations, key)
				changed = true
			}
		}
		// Set them back for types whose getter returns a copy, such as
		// unstructured.Unstructured.
		if changed {
			obj.SetAnnotations(annotations)
		}
		return nil
	})
}

// Chain returns a transform that applies transforms in order, each to the
// result of the previous one; nil entries are skipped. The first error stops
// the chain and is returned wrapped with the failing transform's position
// among the non-nil ones; a transform that returns no object (the zero T)
// without an error is reported the same way. With no transform, the result
// returns its argument unchanged.
func Chain[T Object](transforms ...TransformFunc[T]) TransformFunc[T] {
	var steps []TransformFunc[T]
	for _, t := range transforms {
		if t != nil {
			steps = append(steps, t)
		}
	}
	return func(obj T) (T, error) {
		var zero T
		for i, step := range steps {
			out, err := step(obj)
			if err != nil {
				return zero, fmt.Errorf("transform %d of %d: %w", i+1, len(steps), err)
			}
			if out == zero {
				return zero, fmt.Errorf("transform %d of %d returned no object", i+1, len(steps))
			}
			obj = out
		}
		return obj, nil
	}
}
