package informer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StripManagedFields removes metadata.managedFields, the server-side-apply
// bookkeeping that often makes up a large part of an object and that
// controllers seldom read. It changes obj in place, returns it, and never
// fails. Use StripManagedFields[*corev1.Pod] as one informer's transform and
// StripManagedFields[metav1.Object] as a factory's. For a ListerWatcher
// built from a rest.Config (and so a factory's informers), DropFields with
// [ManagedFields] is cheaper: the fields are dropped before decoding.
func StripManagedFields[T metav1.Object](obj T) (T, error) {
	obj.SetManagedFields(nil)
	return obj, nil
}

// DropAnnotations returns a transform that removes the annotations with the
// given keys, for example the large
// "kubectl.kubernetes.io/last-applied-configuration". It changes its
// argument in place and returns it.
func DropAnnotations[T metav1.Object](keys ...string) TransformFunc[T] {
	return func(obj T) (T, error) {
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
		return obj, nil
	}
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

// typedTransform adapts a factory-wide transform to an informer's type T.
// The factory transform may return a new object, which must then be a T.
func typedTransform[T Object](transform TransformFunc[metav1.Object]) TransformFunc[T] {
	return func(obj T) (T, error) {
		var zero T
		out, err := transform(obj)
		if err != nil {
			return zero, err
		}
		typed, ok := out.(T)
		if !ok {
			return zero, fmt.Errorf("the factory's transform returned a %T, not a %T", out, zero)
		}
		return typed, nil
	}
}
