package replayserver

import (
	"bytes"
	"encoding/binary"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// This file writes the protobuf framing kube-apiserver writes around
// objects, by hand, so that a page or an event costs a copy of each pod's
// bytes and a few length prefixes (encode_test.go checks the bytes against
// apimachinery's serializers):
//
//   - an object: "k8s\x00" and a runtime.Unknown {typeMeta {apiVersion,
//     kind}, raw: the object's Marshal, contentEncoding "", contentType ""};
//   - a list: the same around a PodList {listMeta, items...};
//   - a watch event: a 4-byte big-endian length, then a metav1.WatchEvent
//     {type, object: RawExtension {raw: the enveloped object}}.

// Protobuf field keys (field number << 3 | wire type 2, length-delimited).
const (
	key1 = 1<<3 | 2
	key2 = 2<<3 | 2
	key3 = 3<<3 | 2
	key4 = 4<<3 | 2
	// keyRemaining is ListMeta's remainingItemCount, a varint (wire type 0).
	keyRemaining = 4 << 3
)

// protoMagic is the prefix of Kubernetes' protobuf encoding.
var protoMagic = []byte("k8s\x00")

// Media types of the responses.
const (
	contentTypeProtobuf = runtime.ContentTypeProtobuf
	contentTypeWatch    = runtime.ContentTypeProtobuf + ";stream=watch"
)

// varintLen returns the length of v as a varint.
func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// fieldLen returns the length of a length-delimited field of n bytes.
func fieldLen(n int) int { return 1 + varintLen(uint64(n)) + n }

// appendField appends key and the length n of the field that follows.
func appendField(dst []byte, key byte, n int) []byte {
	return binary.AppendUvarint(append(dst, key), uint64(n))
}

// appendString appends a length-delimited field holding s.
func appendString(dst []byte, key byte, s string) []byte {
	return append(appendField(dst, key, len(s)), s...)
}

// typeMetaLen returns the length of a TypeMeta of v1 kind.
func typeMetaLen(kind string) int { return fieldLen(len("v1")) + fieldLen(len(kind)) }

// unknownLen returns the length of a runtime.Unknown of v1 kind around raw
// bytes of rawLen.
func unknownLen(kind string, rawLen int) int {
	return fieldLen(typeMetaLen(kind)) + fieldLen(rawLen) + 2*fieldLen(0)
}

// appendUnknownHead appends the runtime.Unknown of v1 kind up to its raw
// bytes (of rawLen), which the caller appends, followed by
// appendUnknownTail.
func appendUnknownHead(dst []byte, kind string, rawLen int) []byte {
	dst = appendField(dst, key1, typeMetaLen(kind))
	dst = appendString(dst, key1, "v1")
	dst = appendString(dst, key2, kind)
	return appendField(dst, key2, rawLen)
}

// appendUnknownTail appends an Unknown's empty contentEncoding and
// contentType.
func appendUnknownTail(dst []byte) []byte {
	return append(dst, key3, 0, key4, 0)
}

// listMeta is what a page says about its list.
type listMeta struct {
	resourceVersion string
	continueToken   string
	remaining       int64 // remainingItemCount, when hasRemaining
	hasRemaining    bool
}

// len returns the encoded length of m.
func (m listMeta) len() int {
	n := fieldLen(0) + fieldLen(len(m.resourceVersion)) + fieldLen(len(m.continueToken))
	if m.hasRemaining {
		n += 1 + varintLen(uint64(m.remaining))
	}
	return n
}

// appendListMeta appends m as a ListMeta's fields.
func appendListMeta(dst []byte, m listMeta) []byte {
	dst = append(dst, key1, 0) // selfLink
	dst = appendString(dst, key2, m.resourceVersion)
	dst = appendString(dst, key3, m.continueToken)
	if m.hasRemaining {
		dst = binary.AppendUvarint(append(dst, keyRemaining), uint64(m.remaining))
	}
	return dst
}

// appendPageHead appends everything of a PodList page before its items,
// whose framed total is itemsLen (the sum of fieldLen of each pod's size).
func appendPageHead(dst []byte, meta listMeta, itemsLen int) []byte {
	listLen := fieldLen(meta.len()) + itemsLen
	dst = append(dst, protoMagic...)
	dst = appendUnknownHead(dst, "PodList", listLen)
	dst = appendField(dst, key1, meta.len())
	return appendListMeta(dst, meta)
}

// appendItemHead appends the field head of one list item of size n.
func appendItemHead(dst []byte, n int) []byte { return appendField(dst, key2, n) }

// Watch event types, as the WatchEvent's type field spells them.
const (
	eventAdded    = "ADDED"
	eventModified = "MODIFIED"
	eventBookmark = "BOOKMARK"
	eventError    = "ERROR"
)

// appendEventHead appends the frame length and the WatchEvent of
// eventType around an object of kind whose raw encoding (without envelope)
// is rawLen long, up to that encoding; the caller appends it and then
// appendUnknownTail.
func appendEventHead(dst []byte, eventType, kind string, rawLen int) []byte {
	objLen := len(protoMagic) + unknownLen(kind, rawLen)
	extLen := fieldLen(objLen)
	eventLen := fieldLen(len(eventType)) + fieldLen(extLen)
	dst = binary.BigEndian.AppendUint32(dst, uint32(eventLen))
	dst = appendString(dst, key1, eventType)
	dst = appendField(dst, key2, extLen)
	dst = appendField(dst, key1, objLen)
	dst = append(dst, protoMagic...)
	return appendUnknownHead(dst, kind, rawLen)
}

// appendEvent appends a whole watch event of eventType around raw, the
// Marshal of an object of kind.
func appendEvent(dst []byte, eventType, kind string, raw []byte) []byte {
	dst = appendEventHead(dst, eventType, kind, len(raw))
	return appendUnknownTail(append(dst, raw...))
}

// bookmarkEvent returns a BOOKMARK event at resourceVersion; initialEnd
// marks it as the end of a watch's initial events.
func bookmarkEvent(resourceVersion string, initialEnd bool) ([]byte, error) {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: resourceVersion}}
	if initialEnd {
		pod.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	raw, err := pod.Marshal()
	if err != nil {
		return nil, err
	}
	return appendEvent(nil, eventBookmark, "Pod", raw), nil
}

// statusSerializer encodes Status objects (errors), enveloped.
var statusSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// encodeStatus returns st in the protobuf encoding, enveloped, as an error
// response's body.
func encodeStatus(st *metav1.Status) ([]byte, error) {
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	var buf bytes.Buffer
	if err := statusSerializer.Encode(st, &buf); err != nil {
		return nil, fmt.Errorf("encoding a Status: %w", err)
	}
	return buf.Bytes(), nil
}

// errorEvent returns an ERROR watch event carrying st.
func errorEvent(st *metav1.Status) ([]byte, error) {
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	raw, err := st.Marshal()
	if err != nil {
		return nil, err
	}
	return appendEvent(nil, eventError, "Status", raw), nil
}
