package wire

import (
	"bytes"
	"k8s.io/client-go/tools/cache"
	"reflect"
	"strings"
	"sync"
)

// This file is cacheditems.go for JSON list bodies (custom resources
// through the REST ListerWatcher, the dynamic ListerWatcher's unstructured
// objects, the metadata ListerWatcher's JSON fallback): it finds each
// element of the list's "items" in the bytes and its metadata's namespace,
// name and resourceVersion, cuts the elements the cache holds at that
// version out of the body, decodes what is left as the full body would be,
// and puts the cached objects back in their places.

// jsonListedItem is where an element of a JSON list's items is in the
// body, and its identity if it can be read without decoding it.
type jsonListedItem struct {
	start, end int // the element's bytes
	// namespace, name and resourceVersion are the strings of the element's
	// metadata, when known.
	namespace, name, resourceVersion []byte
	known                            bool
}

// JSONItemsLayout tells whether listType, whose items are of type
// itemType, is laid out in JSON as CutCachedJSONItems reads it: items
// under "items", and each item's metav1.ObjectMeta under "metadata".
func JSONItemsLayout(listType, itemType reflect.Type) bool {
	for listType.Kind() == reflect.Pointer {
		listType = listType.Elem()
	}
	for itemType.Kind() == reflect.Pointer {
		itemType = itemType.Elem()
	}
	items, ok := listType.FieldByName("Items")
	if !ok || jsonName(items) != "items" {
		return false
	}
	meta, ok := itemType.FieldByName("ObjectMeta")
	return ok && jsonName(meta) == "metadata"
}

// jsonName is the member name of f in JSON, by its json tag.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// CutCachedJSONItems looks up the namespace, name and resource version of
// each element of the items of body, a JSON list, with lookup, and cuts
// the elements found out of body, in place. It returns what is left of
// body and, if an element was found, slots: for each element in list
// order, the cached object, or the zero T for one left in body. If
// listKind is not empty, body must be of that kind or of none (a Status
// is decoded whole).
//
// body is left whole, and lookup not called, unless the whole body can be
// read: an object with "items" once, an array, and nothing after it. An
// element is left in body (decoded) unless it is an object with
// "metadata" once, an object with "name" and "resourceVersion" (and maybe
// "namespace") once each, strings without escapes: what every decoder
// reads the same way. What is inside the elements cut is not checked
// further, as in protobuf bodies: a body that a decoder would reject only
// for what is inside them is listed.
func CutCachedJSONItems[T comparable](body []byte, listKind string, lookup CachedLookup[T]) ([]byte, []T) {
	scratch := jsonListScratches.Get().(*jsonListScratch)
	defer scratch.put()
	listed, ok := scratch.scanJSONList(body, listKind)
	if !ok {
		return body, nil
	}
	var slots []T
	cuts := scratch.cuts
	kept := false // whether an element before this one is kept
	for i, item := range listed {
		var obj T
		found := false
		if item.known {
			obj, found = lookup(cache.ObjectName{Namespace: string(item.namespace), Name: string(item.name)}, string(item.resourceVersion))
		}
		if !found {
			kept = true
			continue
		}
		if slots == nil {
			slots = make([]T, len(listed))
		}
		slots[i] = obj
		switch {
		case kept: // with the comma before it
			cuts = append(cuts, [2]int{listed[i-1].end, item.end})
		case i+1 < len(listed): // with the comma after it
			cuts = append(cuts, [2]int{item.start, listed[i+1].start})
		default:
			cuts = append(cuts, [2]int{item.start, item.end})
		}
	}
	scratch.cuts = cuts
	if slots == nil {
		return body, nil
	}
	return cutRanges(body, cuts), slots
}

// jsonListScratch is what CutCachedJSONItems works in, kept between lists
// in jsonListScratches: for a page of 500 pods, a list of an unchanged
// cache allocated 170 KB with new ones, 21 KB with kept ones
// (BenchmarkRelistUnchanged, path=typed-json/cache=all, load 4.8).
type jsonListScratch struct {
	listed []jsonListedItem
	cuts   [][2]int
}

var jsonListScratches = sync.Pool{New: func() any { return new(jsonListScratch) }}

// put returns s to jsonListScratches, without the body it points into.
func (s *jsonListScratch) put() {
	clear(s.listed)
	s.listed, s.cuts = s.listed[:0], s.cuts[:0]
	jsonListScratches.Put(s)
}

// scanJSONList reads body, a JSON list of kind listKind (if not empty) or
// of none, and returns where its items are, in scratch.listed. It reports
// false if body cannot be read so, or has no items.
func (scratch *jsonListScratch) scanJSONList(body []byte, listKind string) ([]jsonListedItem, bool) {
	s := jsonScanner{buf: body}
	s.ws()
	if s.expect('{') != nil {
		return nil, false
	}
	var listed []jsonListedItem
	seenItems := false
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if err != nil {
			return nil, false
		}
		if !more {
			break
		}
		key, err := s.member()
		if err != nil {
			return nil, false
		}
		switch {
		case string(key) == "items":
			if seenItems {
				return nil, false
			}
			seenItems = true
			listed, err = s.listedItems(scratch.listed[:0])
			scratch.listed = listed
		case listKind != "" && bytes.EqualFold(key, []byte("kind")):
			// The decoders find the kind with encoding/json, which
			// matches member names regardless of case.
			var kind []byte
			var plain bool
			kind, plain, err = s.plainString()
			if !plain || string(kind) != listKind {
				return nil, false
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return nil, false
		}
	}
	s.ws()
	return listed, s.pos == len(body) && len(listed) > 0
}

// listedItems reads a list's items, an array (anything else is read as no
// items), and appends where they are to listed.
func (s *jsonScanner) listedItems(listed []jsonListedItem) ([]jsonListedItem, error) {
	if s.peek() != '[' {
		return listed, s.skip()
	}
	s.pos++
	for first := true; ; first = false {
		more, err := s.next(']', first)
		if !more {
			return listed, err
		}
		item := jsonListedItem{start: s.pos}
		if s.peek() == '{' {
			item.known, err = s.listedItem(&item)
		} else {
			err = s.skip()
		}
		if err != nil {
			return listed, err
		}
		item.end = s.pos
		listed = append(listed, item)
	}
}

// listedItem reads an object, an element of a list's items, records the
// identity its metadata gives in item and reports whether it is known.
func (s *jsonScanner) listedItem(item *jsonListedItem) (bool, error) {
	s.pos++ // {
	known, seenMetadata := false, false
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if !more {
			return known, err
		}
		key, err := s.member()
		if err != nil {
			return false, err
		}
		isMetadata := string(key) == "metadata"
		if isMetadata && !seenMetadata && s.peek() == '{' {
			known, err = s.listedMetadata(item)
		} else {
			// Metadata twice would be merged by a typed decoder.
			known = known && !isMetadata
			err = s.skip()
		}
		if err != nil {
			return false, err
		}
		seenMetadata = seenMetadata || isMetadata
	}
}

// listedMetadata reads the object of an item's metadata, records its
// namespace, name and resource version in item and reports whether they
// are known.
func (s *jsonScanner) listedMetadata(item *jsonListedItem) (bool, error) {
	s.pos++                // {
	var identity [3][]byte // namespace, name, resource version
	var seen [3]bool
	known := true
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if !more {
			if err != nil {
				return false, err
			}
			item.namespace, item.name, item.resourceVersion = identity[0], identity[1], identity[2]
			return known && len(item.name) > 0 && len(item.resourceVersion) > 0, nil
		}
		key, err := s.member()
		if err != nil {
			return false, err
		}
		i := -1
		switch string(key) {
		case "namespace":
			i = 0
		case "name":
			i = 1
		case "resourceVersion":
			i = 2
		}
		if i < 0 {
			if err := s.skip(); err != nil {
				return false, err
			}
			continue
		}
		value, plain, err := s.plainString()
		if err != nil {
			return false, err
		}
		known = known && plain && !seen[i]
		identity[i], seen[i] = value, true
	}
}
