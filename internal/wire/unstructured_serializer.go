package wire

import (
	"io"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UnstructuredSerializer is the JSON serializer of client-go's dynamic
// client with its decoding of *unstructured.Unstructured and
// *unstructured.UnstructuredList done by an UnstructuredDecoder: lists
// decoded into a list, single objects decoded into an object or, as the
// objects of watch events are, into nothing given. It returns what the
// dynamic client's serializer returns for the same bytes: where the decoder
// gives up (see UnstructuredDecoder), and for every other target, it
// decodes with that serializer, Delegate, which also encodes.
type UnstructuredSerializer struct {
	decoder  *UnstructuredDecoder
	delegate runtime.Serializer
	// typed holds the kinds the dynamic client decodes into Go types rather
	// than unstructured objects when given no target (the meta/v1 types
	// its scheme registers: a watch's Status, for one); unversioned holds
	// the kinds of those registered for every version.
	typed       map[schema.GroupVersionKind]bool
	unversioned map[string]bool
}

// NewUnstructuredSerializer returns an UnstructuredSerializer decoding with
// decoder in front of delegate, the dynamic client's JSON serializer, whose
// scheme holds the meta/v1 types at version v1 (as client-go's dynamic
// package registers them).
func NewUnstructuredSerializer(decoder *UnstructuredDecoder, delegate runtime.Serializer) *UnstructuredSerializer {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	s := &UnstructuredSerializer{decoder: decoder, delegate: delegate, typed: map[schema.GroupVersionKind]bool{}, unversioned: map[string]bool{}}
	for gvk, t := range scheme.AllKnownTypes() {
		s.typed[gvk] = true
		if obj, ok := reflect.New(t).Interface().(runtime.Object); ok {
			if unversioned, _ := scheme.IsUnversioned(obj); unversioned {
				s.unversioned[gvk.Kind] = true
			}
		}
	}
	return s
}

// Decode decodes data into into (see UnstructuredSerializer).
func (s *UnstructuredSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults == nil {
		switch into := into.(type) {
		case *unstructured.UnstructuredList:
			if into.Object == nil && len(into.Items) == 0 { // else the codec merges
				if gvk, ok := s.decodeList(data, into); ok {
					return into, &gvk, nil
				}
			}
		case *unstructured.Unstructured:
			if m, gvk, ok := s.decodeObject(data); ok {
				into.Object = m
				return into, &gvk, nil
			}
		case nil:
			if m, gvk, ok := s.decodeObject(data); ok && gvk.Version != "" && !s.typed[gvk] && !s.unversioned[gvk.Kind] {
				return &unstructured.Unstructured{Object: m}, &gvk, nil
			}
		}
	}
	return s.delegate.Decode(data, defaults, into)
}

// decodeObject decodes an object whose kind and version the serializer
// finds as the dynamic client's does.
func (s *UnstructuredSerializer) decodeObject(data []byte) (map[string]any, schema.GroupVersionKind, bool) {
	m, ok := s.decoder.DecodeObject(data)
	if !ok {
		return nil, schema.GroupVersionKind{}, false
	}
	gvk, ok := unstrInterpret(m)
	return m, gvk, ok
}

// decodeList decodes a list into list, as client-go's unstructured list
// decoding does: the items without a kind and version get the list's (its
// kind less "List").
func (s *UnstructuredSerializer) decodeList(data []byte, into *unstructured.UnstructuredList) (schema.GroupVersionKind, bool) {
	m, items, ok := s.decoder.DecodeList(data)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	gvk, ok := unstrInterpret(m)
	if !ok {
		return gvk, false
	}
	list := unstructured.UnstructuredList{Object: m}
	version, itemKind := list.GetAPIVersion(), strings.TrimSuffix(list.GetKind(), "List")
	list.Items = make([]unstructured.Unstructured, len(items))
	for i, item := range items {
		u := &list.Items[i]
		u.Object = item
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(itemKind)
			u.SetAPIVersion(version)
		}
	}
	*into = list
	return gvk, true
}

// unstrInterpret returns the kind and version of the object m, as the
// dynamic client's serializer reads them and then requires them of an
// unstructured object (the members "kind" and "apiVersion", which the
// decoder checked are the only ones matching them regardless of case). It
// reports false where either would fail: a kind or version that is neither
// a string nor null, a version that does not parse, no kind.
func unstrInterpret(m map[string]any) (schema.GroupVersionKind, bool) {
	kind, ok := unstrStringOrNull(m["kind"])
	if !ok || kind == "" {
		return schema.GroupVersionKind{}, false
	}
	version, ok := unstrStringOrNull(m["apiVersion"])
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(version)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(kind), true
}

// unstrStringOrNull returns v as encoding/json decodes it into a string:
// null (or a missing member) as "".
func unstrStringOrNull(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	}
	return "", false
}

// Encode encodes obj with the delegate.
func (s *UnstructuredSerializer) Encode(obj runtime.Object, w io.Writer) error {
	return s.delegate.Encode(obj, w)
}

// Identifier is the delegate's: the encoding is its.
func (s *UnstructuredSerializer) Identifier() runtime.Identifier {
	return s.delegate.Identifier()
}
