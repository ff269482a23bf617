package wire

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

//go:generate go run github.com/kubetyped/informer/hack/pbdecode -o decode_gen.go

// This file holds the protobuf decoders of the typed REST ListerWatcher.
// apimachinery's decoders copy each object's bytes twice before decoding
// them: a watch event's object out of the event (metav1.WatchEvent's
// RawExtension), then out of its runtime.Unknown envelope; a list body out
// of its envelope. These decoders decode in place instead. Syncing 5,000
// production-like pods (9.6 KB each as protobuf) from kube-apiserver, the
// two copies were 41% of the bytes the client allocated (allocation
// profiles of 6 syncs: 372 of 896 MB); see restCodecs for the CPU.

// restCodecs is the codec factory of scheme for a typed REST client, with
// the protobuf decoders replaced by decoders that do not copy (see above).
// Everything else, JSON and encoding included, is apimachinery's.
type restCodecs struct {
	runtime.NegotiatedSerializer
	mediaTypes []runtime.SerializerInfo
}

// NewRESTCodecs returns the codecs of a typed REST client over scheme. If
// interns is not nil, objects of the types unmarshalInterned knows are
// decoded with their strings interned in it. If typed is not nil, the
// objects of its types are decoded from JSON by the typed JSON decoder
// (json_typed_codec.go), their strings interned in interns, which must then
// not be nil, and watch events are read by NewJSONWatchStream's framer and
// decoder (watchjson.go).
func NewRESTCodecs(scheme *runtime.Scheme, interns *InternTable, typed *TypedJSONTypes) runtime.NegotiatedSerializer {
	return NewRESTCodecsReusing(scheme, interns, typed, nil)
}

// NewRESTCodecsReusing is NewRESTCodecs for the REST client of one
// streaming list whose protobuf decoders hand out, for each of its initial
// events, the object reuse finds cached instead of decoding it (see
// WatchReuse); reuse nil is NewRESTCodecs.
func NewRESTCodecsReusing(scheme *runtime.Scheme, interns *InternTable, typed *TypedJSONTypes, reuse *WatchReuse) runtime.NegotiatedSerializer {
	base := serializer.NewCodecFactory(scheme).WithoutConversion()
	mediaTypes := slices.Clone(base.SupportedMediaTypes())
	for i := range mediaTypes {
		info := &mediaTypes[i]
		if info.MediaType == runtime.ContentTypeJSON && typed != nil {
			info.Serializer = &typedJSONDecoder{Serializer: info.Serializer, types: typed, interns: interns}
			info.StreamSerializer = NewJSONWatchStream(info.StreamSerializer, scheme)
			continue
		}
		if info.MediaType != runtime.ContentTypeProtobuf {
			continue
		}
		info.Serializer = &protobufDecoder{
			Serializer: info.Serializer,
			raw:        protobuf.NewRawSerializer(scheme, scheme),
			creater:    scheme,
			interns:    interns,
			reuse:      reuse,
		}
		if info.StreamSerializer != nil {
			stream := *info.StreamSerializer
			stream.Serializer = &watchEventDecoder{Serializer: stream.Serializer, typer: scheme, reuse: reuse}
			info.StreamSerializer = &stream
		}
	}
	return restCodecs{NegotiatedSerializer: base, mediaTypes: mediaTypes}
}

// SupportedMediaTypes implements runtime.NegotiatedSerializer.
func (c restCodecs) SupportedMediaTypes() []runtime.SerializerInfo {
	return c.mediaTypes
}

// DecoderToVersion implements runtime.NegotiatedSerializer as the codec
// factory's WithoutConversion does (the decoded object's kind is cleared),
// except that an object whose kind is already clear is not written: it may
// be an object an informer's cache holds and others read (WatchReuse).
func (c restCodecs) DecoderToVersion(decoder runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return kindClearingDecoder{decoder}
}

// kindClearingDecoder clears the kind of the objects it decodes, if set.
type kindClearingDecoder struct {
	runtime.Decoder
}

// Decode implements runtime.Decoder.
func (d kindClearingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.Decoder.Decode(data, defaults, into)
	if obj != nil {
		if kind := obj.GetObjectKind(); !kind.GroupVersionKind().Empty() {
			kind.SetGroupVersionKind(schema.GroupVersionKind{})
		}
	}
	return obj, gvk, err
}

// protobufDecoder decodes an object in Kubernetes' protobuf encoding (the
// magic prefix, then a runtime.Unknown envelope holding the object's
// bytes) from within the envelope, as apimachinery's protobuf.Serializer
// does after copying the bytes out of it; it returns the same objects,
// kinds and errors. What it does not handle the same way (an envelope it
// cannot parse, decoding into a *runtime.Unknown, a kind without a
// version) it hands to apimachinery's serializer, as it does encoding.
type protobufDecoder struct {
	runtime.Serializer // apimachinery's protobuf.Serializer
	raw                *protobuf.RawSerializer
	creater            runtime.ObjectCreater
	// interns, if not nil, is the table of the objects' strings (see
	// unmarshalInterned).
	interns *InternTable
	// reuse, if not nil, finds a streaming list's initial objects cached.
	reuse *WatchReuse
}

// ProtobufMessage is what apimachinery's protobuf serializer requires of
// an object to decode into.
type ProtobufMessage interface {
	Reset()
	Unmarshal(data []byte) error
}

// Unmarshal does msg.Reset and msg.Unmarshal(data), except for the types
// with an interning decoder (decode_gen.go, unmarshalInterned) when
// interns is not nil: those are decoded straight into the table's strings,
// so that a string the table holds costs a lookup instead of an
// allocation. The objects are equal either way.
func Unmarshal(interns *InternTable, data []byte, msg ProtobufMessage) error {
	if interns != nil {
		if handled, err := unmarshalInterned(interns, nil, data, msg); handled {
			return err
		}
	}
	msg.Reset()
	return msg.Unmarshal(data)
}

// DecodesInterned reports whether objects of obj's type (a pointer to a
// built-in type, such as *corev1.Pod) have an interning decoder (see
// Unmarshal): the REST ListerWatcher gives them a table. obj's value is
// not looked at; a nil pointer of the type will do.
func DecodesInterned(obj any) bool {
	return decodesInternedType(obj)
}

// ProtobufMagic starts Kubernetes' protobuf encoding of an object (the
// runtime.Unknown envelope follows).
const ProtobufMagic = "k8s\x00"

// Decode implements runtime.Decoder.
func (d *protobufDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if _, isUnknown := into.(*runtime.Unknown); isUnknown || len(data) <= len(ProtobufMagic) || string(data[:len(ProtobufMagic)]) != ProtobufMagic {
		return d.Serializer.Decode(data, defaults, into)
	}
	actual, raw, ok := ParseProtobufEnvelope(data[len(ProtobufMagic):])
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	if defaults != nil {
		if actual.Kind == "" {
			actual.Kind = defaults.Kind
		}
		if actual.Version == "" && defaults.Version != "" {
			actual.Group, actual.Version = defaults.Group, defaults.Version
		}
	}
	if actual.Version == "" {
		return d.Serializer.Decode(data, defaults, into)
	}
	if into != nil {
		if len(raw) == 0 {
			// The raw serializer rejects empty data, which the
			// serializer decodes as an empty object.
			return d.Serializer.Decode(data, defaults, into)
		}
		// With a version, the raw serializer given the envelope's kind
		// does what the serializer does with the envelope.
		return d.raw.Decode(raw, &actual, into)
	}
	if actual.Kind == "" {
		return d.Serializer.Decode(data, defaults, into)
	}
	if obj, ok := d.reuse.cached(raw); ok {
		return obj, &actual, nil
	}
	obj, err := d.creater.New(actual)
	if err != nil {
		return d.Serializer.Decode(data, defaults, into)
	}
	msg, ok := obj.(ProtobufMessage)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	if err := Unmarshal(d.interns, raw, msg); err != nil {
		return nil, &actual, err
	}
	obj.GetObjectKind().SetGroupVersionKind(actual)
	return obj, &actual, nil
}

// ParseProtobufEnvelope returns the kind and the bytes of the object in
// msg, a runtime.Unknown (after the magic prefix); raw shares msg's bytes.
// It reports false for anything but one of each of the fields
// runtime.Unknown has.
func ParseProtobufEnvelope(msg []byte) (gvk schema.GroupVersionKind, raw []byte, ok bool) {
	var seen [5]bool
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 4 || seen[num] {
			return gvk, nil, false
		}
		seen[num] = true
		value, m := protowire.ConsumeBytes(msg[n:])
		if m < 0 {
			return gvk, nil, false
		}
		msg = msg[n+m:]
		switch num {
		case 1: // typeMeta
			if gvk, ok = parseTypeMeta(value); !ok {
				return gvk, nil, false
			}
		case 2: // raw
			raw = value
		}
		// 3 and 4, contentEncoding and contentType, are ignored, as
		// protobuf.Serializer ignores them.
	}
	return gvk, raw, true
}

// parseTypeMeta returns the kind a runtime.TypeMeta message names.
func parseTypeMeta(msg []byte) (schema.GroupVersionKind, bool) {
	var apiVersion, kind []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
			return schema.GroupVersionKind{}, false
		}
		value, m := protowire.ConsumeBytes(msg[n:])
		if m < 0 {
			return schema.GroupVersionKind{}, false
		}
		msg = msg[n+m:]
		if num == 1 {
			apiVersion = value
		} else {
			kind = value
		}
	}
	return schema.FromAPIVersionAndKind(string(apiVersion), string(kind)), true
}

// watchEventDecoder decodes the frames of a protobuf watch stream into
// metav1.WatchEvent as apimachinery's protobuf.RawSerializer does, except
// that the event's Object.Raw shares the frame's bytes instead of being a
// copy. That is safe because client-go's watch decoder
// (k8s.io/client-go/rest/watch.Decoder) decodes Object.Raw into an object,
// whose generated Unmarshal copies every string and byte slice, before it
// reads the next frame into the same buffer. Anything else is
// apimachinery's RawSerializer's.
type watchEventDecoder struct {
	runtime.Serializer // apimachinery's protobuf.RawSerializer
	typer              runtime.ObjectTyper
	// reuse, if not nil, learns of each event before its object is
	// decoded.
	reuse *WatchReuse
}

// Decode implements runtime.Decoder.
func (d *watchEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	parse := parseWatchEvent
	if d.reuse != nil {
		parse = func(data []byte) (string, []byte, bool) {
			eventType, object, ok := parseWatchEvent(data)
			d.reuse.observe(eventType, object, ok)
			return eventType, object, ok
		}
	}
	return decodeWatchEvent(d.Serializer, d.typer, parse, data, defaults, into)
}

// decodeWatchEvent decodes data into into, if it is a *metav1.WatchEvent,
// with parse, which returns the event's type and its object's bytes (a
// sub-slice of data) or false; into anything else, or what parse does not
// read, it decodes with delegate. The kind returned with an event is the
// one apimachinery's serializers return (watchEventKind).
func decodeWatchEvent(delegate runtime.Decoder, typer runtime.ObjectTyper, parse func([]byte) (string, []byte, bool), data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return delegate.Decode(data, defaults, into)
	}
	eventType, object, ok := parse(data)
	if !ok {
		return delegate.Decode(data, defaults, into)
	}
	actual := watchEventKind(typer, defaults, into)
	*event = metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: object}}
	return event, &actual, nil
}

// watchEventKind is the kind apimachinery's serializers return with a
// watch event decoded into into, a *metav1.WatchEvent, from bytes that
// name no kind: the defaults, completed from typer's kind of WatchEvent.
func watchEventKind(typer runtime.ObjectTyper, defaults *schema.GroupVersionKind, into runtime.Object) schema.GroupVersionKind {
	var actual schema.GroupVersionKind
	if defaults != nil {
		actual = *defaults
	}
	if kinds, _, err := typer.ObjectKinds(into); err == nil {
		if actual.Kind == "" {
			actual.Kind = kinds[0].Kind
		}
		if actual.Version == "" {
			actual.Group, actual.Version = kinds[0].Group, kinds[0].Version
		}
	}
	return actual
}

// parseWatchEvent returns the type and the object's bytes of msg, a
// metav1.WatchEvent; object shares msg's bytes. It reports false for
// anything but one type and one object holding one raw field.
func parseWatchEvent(msg []byte) (eventType string, object []byte, ok bool) {
	var typ, raw []byte
	for len(msg) > 0 {
		num, wireType, n := protowire.ConsumeTag(msg)
		if n < 0 || wireType != protowire.BytesType {
			return "", nil, false
		}
		value, m := protowire.ConsumeBytes(msg[n:])
		if m < 0 {
			return "", nil, false
		}
		msg = msg[n+m:]
		switch {
		case num == 1 && typ == nil: // type
			typ = value
		case num == 2 && raw == nil: // object, a RawExtension
			if raw, ok = parseRawExtension(value); !ok {
				return "", nil, false
			}
		default:
			return "", nil, false
		}
	}
	if typ == nil || raw == nil {
		return "", nil, false
	}
	return watchEventType(typ), raw, true
}

// parseRawExtension returns the raw field of msg, a runtime.RawExtension.
func parseRawExtension(msg []byte) ([]byte, bool) {
	num, wireType, n := protowire.ConsumeTag(msg)
	if n < 0 || num != 1 || wireType != protowire.BytesType {
		return nil, false
	}
	raw, m := protowire.ConsumeBytes(msg[n:])
	if m < 0 || n+m != len(msg) {
		return nil, false
	}
	if raw == nil {
		raw = []byte{}
	}
	return raw, true
}

// watchEventType returns b as a string, without allocating for the event
// types the API server sends.
func watchEventType(b []byte) string {
	switch string(b) {
	case "ADDED":
		return "ADDED"
	case "MODIFIED":
		return "MODIFIED"
	case "DELETED":
		return "DELETED"
	case "BOOKMARK":
		return "BOOKMARK"
	case "ERROR":
		return "ERROR"
	}
	return string(b)
}
