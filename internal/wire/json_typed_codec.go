package wire

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// The JSON decoder of the REST ListerWatcher's custom resources: objects
// of a CRD type and their lists are decoded by TypedJSON (json_typed.go),
// built once per type from its reflect.Type, straight into interned
// strings, instead of by apimachinery's JSON serializer (sigs.k8s.io/json,
// which allocates every string) followed by the queue's interning of
// their metadata. TypedJSON decodes exactly what sigs.k8s.io/json decodes
// (internal/wire/json_typed.go); this decoder also finds the object's kind
// as apimachinery's serializer does, and hands everything it cannot
// decode the same way (another kind, such as a watch's Status; keys that
// apimachinery's case-insensitive kind detection could read differently;
// input TypedJSON rejects, whose error then is the serializer's) to that
// serializer.

// typedJSONTarget is a type the decoder decodes: an item or list type.
type typedJSONTarget struct {
	typ reflect.Type // the struct type
	dec *TypedJSON
}

// TypedJSONTypes are the types of one REST ListerWatcher that the JSON
// decoder decodes (NewRESTCodecs), and the kinds the scheme has for them.
type TypedJSONTypes struct {
	item   *typedJSONTarget // decoded when the caller gives no object (watch events)
	byType map[reflect.Type]*typedJSONTarget
	byKind map[schema.GroupVersionKind]*typedJSONTarget
}

// NewTypedJSONTypes returns the JSON decoder's types for objects of type
// item (a pointer to a struct) and their lists of type list, or nil if
// TypedJSON cannot decode one of them: their objects are then decoded by
// apimachinery's codec, as it says in one log line.
func NewTypedJSONTypes(scheme *runtime.Scheme, item, list reflect.Type) *TypedJSONTypes {
	types := &TypedJSONTypes{byType: map[reflect.Type]*typedJSONTarget{}, byKind: map[schema.GroupVersionKind]*typedJSONTarget{}}
	for _, typ := range []reflect.Type{item, list} {
		dec, err := NewTypedJSON(typ)
		if err == nil && !hasTypeMeta(typ.Elem()) {
			err = errNoTypeMeta
		}
		if err != nil {
			klog.Background().Info("Decoding with apimachinery's JSON codec: the lean JSON decoder cannot decode this type", "type", typ.String(), "reason", err.Error())
			return nil
		}
		types.byType[typ.Elem()] = &typedJSONTarget{typ: typ.Elem(), dec: dec}
	}
	types.item = types.byType[item.Elem()]
	for gvk, typ := range scheme.AllKnownTypes() {
		if target := types.byType[typ]; target != nil {
			types.byKind[gvk] = target
		}
	}
	return types
}

// errNoTypeMeta says why a type without an inlined metav1.TypeMeta is
// decoded by apimachinery: the decoder reads the kind from it.
var errNoTypeMeta = errorString("its kind is not in an inlined metav1.TypeMeta")

// hasTypeMeta tells whether struct type t embeds metav1.TypeMeta as
// apimachinery's types do (inlined), so that GetObjectKind returns it.
func hasTypeMeta(t reflect.Type) bool {
	f, ok := t.FieldByName("TypeMeta")
	return ok && f.Anonymous && f.Type == reflect.TypeFor[metav1.TypeMeta]() && len(f.Index) == 1
}

// typedJSONDecoder is apimachinery's JSON serializer with the objects of
// types decoded by TypedJSON (see above).
type typedJSONDecoder struct {
	runtime.Serializer // apimachinery's JSON serializer
	types              *TypedJSONTypes
	interns            *InternTable
}

// Decode implements runtime.Decoder: it returns what apimachinery's
// serializer returns for the same arguments.
func (d *typedJSONDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	target := d.types.item
	if into != nil {
		target = d.types.byType[reflect.TypeOf(into).Elem()]
		// The serializer decodes into into, over what it holds: only an
		// empty one is decoded here, into a new object copied over it.
		if target == nil || !reflect.ValueOf(into).Elem().IsZero() {
			return d.Serializer.Decode(data, defaults, into)
		}
	}
	fresh := reflect.New(target.typ)
	d.interns.lock()
	res, err := target.dec.DecodeAt(data, fresh.UnsafePointer(), d.interns)
	d.interns.mu.Unlock()
	if err != nil || res.TopLevelKeyRisk {
		return d.Serializer.Decode(data, defaults, into)
	}
	obj := fresh.Interface().(runtime.Object)
	typeMeta := fresh.Elem().FieldByName("TypeMeta").Addr().Interface().(*metav1.TypeMeta)
	gv, err := schema.ParseGroupVersion(typeMeta.APIVersion)
	if err != nil {
		return d.Serializer.Decode(data, defaults, into)
	}
	// The serializer decodes an object whose apiVersion and kind name a
	// kind of the decoded type, with or without into and defaults, into
	// into or a new object of that type; anything else (kinds it fills
	// from defaults, other types) it decodes itself.
	actual := gv.WithKind(typeMeta.Kind)
	if actual.Kind == "" || actual.Version == "" || d.types.byKind[actual] != target {
		return d.Serializer.Decode(data, defaults, into)
	}
	if into != nil {
		reflect.ValueOf(into).Elem().Set(fresh.Elem())
		obj = into
	}
	return obj, &actual, nil
}
