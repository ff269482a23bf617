package informer

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MetricsProvider receives the metrics of informers, for example to export
// them to Prometheus (see the module
// github.com/kubetyped/informer/metrics/prometheus). Set it in
// [InformerOptions].Metrics or [FactoryOptions].Metrics. Nil means no
// metrics, at no cost.
//
// Counters an informer keeps anyway (queue depth, handler counters, dropped
// input, list and watch requests, the store's resource version) are pulled:
// the provider receives functions that read them, and calls them whenever
// it collects, for example on a scrape. Only what no counter records is
// pushed: the time each handler spends on its batches of notifications
// (see [HandlerMetrics]). So metrics cost nothing per event, and little per
// batch.
//
// Lifetimes: an informer registers itself with AddInformer when Run
// starts, and each of its handlers with [InformerMetrics].AddHandler when
// the handler starts (at Run, or when it is added to a running informer).
// A handler's HandlerMetrics.Remove is called when its goroutine exits:
// after RemoveEventHandler (once the handler call in progress, if any, has
// returned) or when the informer stops. The informer's InformerMetrics.Remove
// is called when Run returns, after every one of its handlers' Removes. A
// provider should drop a source's series when it is removed.
//
// Concurrency: a provider given to several informers (as a factory does) is
// called by all of them at once and must be safe for concurrent use.
// AddInformer and AddHandler are called while the informer registers a
// handler, so they must not call the informer's methods (read may be
// called at any time).
type MetricsProvider interface {
	// AddInformer registers a running informer. read returns the informer's
	// current values; it is safe for concurrent use, cheap (atomic loads and
	// two short lock holds), and may be called at any time, even after
	// Remove. AddInformer is called from the goroutine calling Run. It may
	// return nil, to collect nothing about the informer's handlers.
	AddInformer(id InformerID, read func() InformerSnapshot) InformerMetrics
}

// InformerMetrics receives the metrics of one informer, from
// [MetricsProvider].AddInformer.
type InformerMetrics interface {
	// AddHandler registers a handler that starts receiving notifications.
	// name is the handler's name ([Registration].Name); two handlers may
	// have the same name. read returns the handler's counters, like
	// [Registration].Stats: safe for concurrent use, cheap, callable at any
	// time, even after Remove. The calls to AddHandler of one informer are
	// serialized; they come from the goroutine calling Run or
	// AddEventHandler. It may return nil: the handler's batches are then not
	// timed.
	AddHandler(name string, read func() HandlerStats) HandlerMetrics
	// Remove unregisters the informer once it has stopped. It is called
	// once, from the goroutine that called Run, after every handler's
	// Remove.
	Remove()
}

// HandlerMetrics receives the measurements of one handler, from
// [InformerMetrics].AddHandler. Its methods are called from the handler's
// goroutine only, never concurrently; Remove is the last call.
type HandlerMetrics interface {
	// ObserveBatch reports the processing latency of one batch: the time
	// from just before the handler's goroutine called the handler for the
	// first notification of a batch it took from its buffer (at most 512
	// notifications; a single one when notifications arrive more slowly
	// than the handler processes them) to just after the call for the last
	// one returned, panics included. It is measured with the monotonic
	// clock, not the informer's Clock. The sum of these durations is the
	// time the handler was busy; divided by [HandlerStats].Delivered it is
	// the mean time per notification. The time a notification waited in the
	// buffer is not included: [HandlerStats].Pending shows the backlog.
	ObserveBatch(elapsed time.Duration)
	// Remove unregisters the handler once its goroutine has exited.
	Remove()
}

// InformerID identifies an informer to a [MetricsProvider].
type InformerID struct {
	// Name is the informer's name: [InformerOptions].Name, or, if empty, the
	// resource, or, if that is empty too, the Go type of its objects. A
	// factory names its informers after their resources (see [Factory]).
	// Two informers may have the same name.
	Name string
	// Resource is [InformerOptions].Resource; it may be empty.
	Resource schema.GroupVersionResource
}

// InformerSnapshot are the values a [MetricsProvider] reads from an
// informer.
type InformerSnapshot struct {
	// Stats are the informer's counters, as [Informer.Stats] returns them;
	// Stats.Queued is the depth of its queue.
	Stats InformerStats
	// Reflector counts the bad input the informer's reflector dropped
	// (all the reflectors of a dynamic shard, stopped ones included).
	Reflector ReflectorStats
	// Requests counts the reflector's lists (relists, by reason) and
	// watch restarts.
	Requests ReflectorRequestStats
	// StoreResourceVersion is the resource version of the cache's last
	// write or bookmark ([Indexer.LastStoreSyncResourceVersion]); empty
	// until the first list is applied.
	StoreResourceVersion string
	// Synced is [Informer.HasSynced].
	Synced bool
}

// InformerStats are counters of an informer, from [Informer.Stats].
type InformerStats struct {
	// Queued is the number of records (events, lists, resyncs, bookmarks)
	// waiting to be applied to the cache.
	Queued int
	// TransformErrors counts objects dropped because the transform failed.
	TransformErrors int64
	// StoreErrors counts events dropped because the cache rejected them (an
	// index function failed).
	StoreErrors int64
	// MutatedObjects counts the cached objects found modified by the
	// mutation detector (see InformerOptions.DetectMutations), each once:
	// with Deduplicate, one write into a value cached objects share
	// changes, and counts, every one of them. MutatedValues counts the
	// values (maps, lists, byte slices, structs) found written into, each
	// reported once with every object it changed: the writes, however
	// many objects each changed.
	MutatedObjects, MutatedValues int64
	// Consistency counts the consistency checks and the differences they
	// found (see [Informer.CheckConsistency]).
	Consistency ConsistencyStats
	// InvalidListItems counts the listed objects dropped, and logged,
	// because they were nil or had no name (client-go would store them; see
	// docs/semantics.md, "Reflector").
	InvalidListItems int64
	// DroppedEvents counts the watch events dropped, and logged, as bad
	// input: an object that is nil, has no name or is not a T (or not of
	// the expected kind), or an unknown event type.
	// [InformerSnapshot].Reflector tells them apart.
	DroppedEvents int64
	// DropFieldsFailures counts the list responses and watch events from
	// which the ListerWatcher could not drop the fields of DropFields
	// (bytes it could not parse): they were passed on whole, to be decoded
	// or rejected by the client (see [RESTOptions].DropFields).
	DropFieldsFailures int64
	// ShardWatches is the number of list+watch streams of a dynamic shard:
	// one per range gained since they were last merged (see
	// docs/sharding.md); 0 for other informers.
	ShardWatches int
	// Snapshot counts the snapshots written and restored (see
	// [SnapshotOptions]).
	Snapshot SnapshotStats
}
