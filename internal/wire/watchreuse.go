package wire

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchReuse is what lets the protobuf decoders of one streaming list
// (NewRESTCodecsReusing) skip decoding the initial objects an informer's
// cache holds at the same resource version, as CutCachedItems does for a
// list's items: for each ADDED event before the bookmark that ends the
// initial events, the event's object bytes are looked up by their
// namespace, name and resource version, and the cached object is handed
// out instead of a decoded copy. A relist of an unchanged cache by a
// streaming list then allocates little beyond the stream's buffers,
// instead of a copy of every object that the cache would let go at once.
//
// It holds the state of one watch's decoding, which client-go's watch
// decoder does on one goroutine, event by event: the frame (watchEvent
// Decoder, observe) and then its object (protobufDecoder, cached). It is
// not safe for concurrent use, and serves one watch.
type WatchReuse struct {
	layout CachedItemsLayout
	lookup CachedLookup[runtime.Object]
	// initial is set while the event being decoded is an initial ADDED
	// event; ended once the bookmark ending them has been read.
	initial, ended bool
}

// NewWatchReuse returns the reuse state of one streaming list of objects
// whose list type's layout is layout (CachedItemsLayoutOf), looking cached
// objects up with lookup.
func NewWatchReuse(layout CachedItemsLayout, lookup CachedLookup[runtime.Object]) *WatchReuse {
	return &WatchReuse{layout: layout, lookup: lookup}
}

// initialEventsEnd is the annotation key that marks the bookmark ending a
// streaming list's initial events, as it appears in the bookmark's bytes.
var initialEventsEnd = []byte(metav1.InitialEventsAnnotationKey)

// observe notes the type of the event about to be decoded, whose object's
// bytes are object.
func (r *WatchReuse) observe(eventType string, object []byte, ok bool) {
	r.initial = ok && !r.ended && eventType == string(watch.Added)
	if ok && eventType == string(watch.Bookmark) && bytes.Contains(object, initialEventsEnd) {
		// A bookmark naming the annotation key ends the initial events (a
		// later stage checks its value; a false positive only stops reuse
		// early).
		r.ended = true
	}
}

// cached returns the cached object for raw, the object of an initial ADDED
// event (the message inside its envelope), if the cache holds it at the
// same resource version. A nil *WatchReuse finds nothing.
func (r *WatchReuse) cached(raw []byte) (runtime.Object, bool) {
	if r == nil || !r.initial || r.layout.metadata == 0 {
		return nil, false
	}
	return cachedItem(raw, r.layout.metadata, r.lookup)
}
