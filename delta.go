package informer

import "k8s.io/klog/v2"

// DeltaType is the kind of change a [Delta] records. The values are the
// strings client-go uses.
type DeltaType string

const (
	// Added records that an object was created.
	Added DeltaType = "Added"
	// Updated records that an object was modified.
	Updated DeltaType = "Updated"
	// Deleted records that an object was deleted. When the deletion was
	// inferred from a relist, the Delta is flagged FinalStateUnknown.
	Deleted DeltaType = "Deleted"
	// Replaced records an object seen in a full list (the initial list or a
	// relist). It is only emitted when [DeltaFIFOOptions.EmitDeltaTypeReplaced]
	// is set; otherwise such objects are recorded as Sync.
	Replaced DeltaType = "Replaced"
	// Sync records a periodic resync of an object already known, or an
	// object seen in a full list when Replaced is not emitted.
	Sync DeltaType = "Sync"
)

// Delta is one change to one object.
type Delta[T Object] struct {
	// Type is the kind of change.
	Type DeltaType
	// Object is the object's state after the change; for a deletion, its
	// last known state. It is shared: treat it as read-only.
	Object T
	// FinalStateUnknown is set on a Deleted delta that was inferred because
	// the object was missing from a relist: the watch event of the deletion
	// was missed, so Object may be stale. The delta's key is Object's key.
	FinalStateUnknown bool
}

// Deltas is the list of changes to one object, oldest first. A queued
// Deltas is never empty.
type Deltas[T Object] []Delta[T]

// Oldest returns the oldest delta, or nil if d is empty.
func (d Deltas[T]) Oldest() *Delta[T] {
	if len(d) == 0 {
		return nil
	}
	return &d[0]
}

// Newest returns the newest delta, or nil if d is empty.
func (d Deltas[T]) Newest() *Delta[T] {
	if len(d) == 0 {
		return nil
	}
	return &d[len(d)-1]
}

// KeyListerGetter is the set of objects the consumer of a [DeltaFIFO]
// already knows about, usually the [Indexer] it fills. It must be safe for
// concurrent use, and key each object by [KeyOf].
type KeyListerGetter[T Object] interface {
	// ListKeys returns the keys of every known object.
	ListKeys() []string
	// GetByKey returns the known object stored under key.
	GetByKey(key string) (obj T, exists bool, err error)
}

// DeltaFIFOOptions configures a [DeltaFIFO]. Every field is optional.
type DeltaFIFOOptions[T Object] struct {
	// KnownObjects lets Delete, Replace and Resync see the objects the
	// consumer already holds. Without it, Replace only detects deletions
	// of queued keys and Resync does nothing.
	KnownObjects KeyListerGetter[T]
	// Transform is applied once to every object given to Add, Update, Delete
	// and Replace, before it is queued; never to final-state-unknown
	// records nor to resync deltas, whose objects were transformed already.
	Transform TransformFunc[T]
	// EmitDeltaTypeReplaced makes Replace record Replaced deltas instead of
	// Sync ones, for consumers that understand them.
	EmitDeltaTypeReplaced bool
	// Name is used in logs; default "DeltaFIFO".
	Name string
	// Logger receives the queue's log output; default klog.Background().
	Logger *klog.Logger
}

// PopProcessFunc processes the deltas [DeltaFIFO.Pop] removed from the
// queue. isInInitialList reports that they belong to the first Replace.
type PopProcessFunc[T Object] func(deltas Deltas[T], isInInitialList bool) error
