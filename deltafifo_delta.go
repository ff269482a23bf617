package informer

import "k8s.io/klog/v2"

// DeltaType is the kind of change a [Delta] records. The values are the
// strings client-go uses.
type DeltaType string

const (
	// DeltaAdded records that an object was created.
	DeltaAdded DeltaType = "Added"
	// DeltaUpdated records that an object was modified.
	DeltaUpdated DeltaType = "Updated"
	// DeltaDeleted records that an object was deleted. When the deletion was
	// inferred from a relist, the Delta is flagged FinalStateUnknown.
	DeltaDeleted DeltaType = "Deleted"
	// DeltaReplaced records an object seen in a full list (the initial list or a
	// relist). It is only emitted when [DeltaFIFOOptions.EmitDeltaTypeReplaced]
	// is set; otherwise such objects are recorded as DeltaSync.
	DeltaReplaced DeltaType = "Replaced"
	// DeltaSync records a periodic resync of an object already known, or an
	// object seen in a full list when DeltaReplaced is not emitted.
	DeltaSync DeltaType = "Sync"
)

// Delta is one change to one object.
type Delta[T Object] struct {
	// Type is the kind of change.
	Type DeltaType
	// Object is the object's state after the change; for a deletion, its
	// last known state. It is shared: treat it as read-only.
	Object T
	// FinalStateUnknown is set on a DeltaDeleted delta that was inferred because
	// the object was missing from a relist: the watch event of the deletion
	// was missed, so Object may be stale. The delta's key is Object's key.
	FinalStateUnknown bool
}

// newestDelta returns the newest of a list of deltas (oldest first), or nil
// if d is empty. The lists a DeltaFIFO queues are never empty.
func newestDelta[T Object](d []Delta[T]) *Delta[T] {
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
	// EmitDeltaTypeReplaced makes Replace record DeltaReplaced deltas instead of
	// DeltaSync ones, for consumers that understand them.
	EmitDeltaTypeReplaced bool
	// Name is used in logs; default "DeltaFIFO".
	Name string
	// Logger receives the queue's log output; default klog.Background().
	Logger *klog.Logger
}

// PopProcessFunc processes the deltas [DeltaFIFO.Pop] removed from the
// queue. isInInitialList reports that they belong to the first Replace.
type PopProcessFunc[T Object] func(deltas []Delta[T], isInInitialList bool) error
