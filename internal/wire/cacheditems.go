package wire

import (
	"bytes"
	"fmt"
	"k8s.io/client-go/tools/cache"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file lets the REST ListerWatcher skip decoding the items of a
// protobuf list body that the informer's cache holds at the listed
// resource version (see cachedLookup): it reads each item's namespace, name
// and resource version in the bytes, cuts the items the cache holds out of
// the list message, decodes what is left and puts the cached objects back
// in their places. A relist of an unchanged cache then allocates little
// beyond the response body, instead of a copy of every object that the
// cache would let go at once.

// CachedLookup returns the object an informer's cache holds under name at
// resourceVersion (a non-empty one), if any: the root package's
// cachedLookup, which the REST, dynamic and metadata ListerWatchers pass to
// CutCachedItems and CutCachedJSONItems.
type CachedLookup[T any] = func(name cache.ObjectName, resourceVersion string) (T, bool)

// Protobuf field numbers of metav1.ObjectMeta.
const (
	objectMetaName      protowire.Number = 1
	objectMetaNamespace protowire.Number = 3
	objectMetaRV        protowire.Number = 6
)

// CachedItemsLayout is where the items of a list type and their metadata
// are in protobuf: the field numbers of the list's Items and of the item
// type's ObjectMeta. The zero value means the type has none (not protobuf).
type CachedItemsLayout struct {
	items, metadata protowire.Number
}

// CachedItemsLayoutOf returns the layout of listType, whose items are of
// type itemType (a pointer to a struct embedding metav1.ObjectMeta).
func CachedItemsLayoutOf(listType, itemType reflect.Type) CachedItemsLayout {
	items := protobufItemsNumber(listType)
	for itemType.Kind() == reflect.Pointer {
		itemType = itemType.Elem()
	}
	f, ok := itemType.FieldByName("ObjectMeta")
	if items == 0 || !ok {
		return CachedItemsLayout{}
	}
	return CachedItemsLayout{items: items, metadata: protobufNumber(f)}
}

// ProtobufListMessage returns the list message of body, if body is a
// protobuf response holding a list of kind listKind (not a Status), or of
// no kind (the decoder then takes the list type it is asked for); its
// bytes are body's.
func ProtobufListMessage(body []byte, listKind string) ([]byte, bool) {
	if !bytes.HasPrefix(body, []byte(ProtobufMagic)) {
		return nil, false
	}
	gvk, raw, ok := ParseProtobufEnvelope(body[len(ProtobufMagic):])
	return raw, ok && (gvk.Kind == listKind || gvk.Kind == "")
}

// CutCachedItems looks up the namespace, name and resource version of
// each item of msg, a list message laid out as layout says, with lookup,
// and cuts the items found out of msg, in place. It returns what is left
// of msg and, if an item was found, slots: for each item in list order,
// the cached object, or the zero T for an item left in msg. msg is left
// whole if it cannot be parsed: decoding it reports what is wrong.
func CutCachedItems[T comparable](msg []byte, layout CachedItemsLayout, lookup CachedLookup[T]) ([]byte, []T) {
	if layout.items == 0 || layout.metadata == 0 {
		return msg, nil
	}
	// First pass: read only, so that msg is whole if it ends early.
	var zero T
	var slots []T
	cached := 0
	for rest := msg; len(rest) > 0; {
		num, typ, content, n := consumeField(rest)
		if n < 0 {
			return msg, nil
		}
		rest = rest[n:]
		if num != layout.items {
			continue
		}
		if typ != protowire.BytesType {
			return msg, nil
		}
		obj, found := cachedItem(content, layout.metadata, lookup)
		if found {
			cached++
		} else {
			obj = zero
		}
		slots = append(slots, obj)
	}
	if cached == 0 {
		return msg, nil
	}
	// Second pass: move the fields kept over the cut items.
	w, k := 0, 0
	for r := 0; r < len(msg); {
		num, _, _, n := consumeField(msg[r:])
		if num == layout.items {
			k++
			if slots[k-1] != zero {
				r += n
				continue
			}
		}
		w += copy(msg[w:], msg[r:r+n])
		r += n
	}
	return msg[:w], slots
}

// cachedItem looks up the item whose message is item by the namespace, name
// and resource version of its metadata (the field numbered metadata).
func cachedItem[T comparable](item []byte, metadata protowire.Number, lookup CachedLookup[T]) (T, bool) {
	namespace, name, rv, ok := itemVersion(item, metadata)
	if !ok {
		var zero T
		return zero, false
	}
	return lookup(cache.ObjectName{Namespace: string(namespace), Name: string(name)}, string(rv))
}

// itemVersion reads the namespace, name and resource version of the item
// whose message is item in its metadata (the field numbered metadata),
// without decoding it; the bytes are item's. It reports false for an item
// without a name or resource version, or one whose metadata it cannot
// read alone (malformed, or in two fields, which decoding would merge).
func itemVersion(item []byte, metadata protowire.Number) (namespace, name, rv []byte, ok bool) {
	var meta []byte
	seen := false
	for len(item) > 0 {
		num, typ, content, n := consumeField(item)
		if n < 0 {
			return nil, nil, nil, false
		}
		item = item[n:]
		if num == metadata && typ == protowire.BytesType {
			if seen {
				return nil, nil, nil, false
			}
			meta, seen = content, true
		}
	}
	for len(meta) > 0 {
		num, typ, content, n := consumeField(meta)
		if n < 0 {
			return nil, nil, nil, false
		}
		meta = meta[n:]
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case objectMetaName:
			name = content
		case objectMetaNamespace:
			namespace = content
		case objectMetaRV:
			rv = content
		}
	}
	if len(name) == 0 || len(rv) == 0 {
		return nil, nil, nil, false
	}
	return namespace, name, rv, true
}

// consumeField parses the field at the start of msg: its number, wire type,
// content for a length-delimited field, and length, negative if msg does
// not start with a valid field.
func consumeField(msg []byte) (protowire.Number, protowire.Type, []byte, int) {
	num, typ, tagLen := protowire.ConsumeTag(msg)
	if tagLen < 0 {
		return 0, 0, nil, -1
	}
	valLen := protowire.ConsumeFieldValue(num, typ, msg[tagLen:])
	if valLen < 0 {
		return 0, 0, nil, -1
	}
	var content []byte
	if typ == protowire.BytesType {
		content, _ = protowire.ConsumeBytes(msg[tagLen:])
	}
	return num, typ, content, tagLen + valLen
}

// WithCachedItems returns the items of a list of which CutCachedItems or
// CutCachedJSONItems cut those in slots: decoded, the items decoded from
// what was left, in order, put in the zero slots. Without slots it returns
// decoded.
func WithCachedItems[T comparable](decoded, slots []T) ([]T, error) {
	if slots == nil {
		return decoded, nil
	}
	var zero T
	next := 0 // the next of decoded
	for i, obj := range slots {
		if obj != zero {
			continue
		}
		if next == len(decoded) {
			return nil, ErrCutItems
		}
		slots[i] = decoded[next]
		next++
	}
	if next != len(decoded) {
		return nil, ErrCutItems
	}
	return slots, nil
}

// ErrCutItems reports a list whose decoded items do not match the items
// left after cutting the cached ones.
var ErrCutItems = fmt.Errorf("%w list: the decoded items do not match those left after cutting the cached ones", errMalformed)
