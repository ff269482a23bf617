package informer

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/wire"
)

// InformerOptions configures an [Informer], made by [NewInformer] over a
// ListerWatcher or by [For] from a [Factory]. The zero value is valid.
//
// The settings a [FactoryOptions] field of the same name also sets
// (ResyncPeriod, MissingResourceRetry, Metrics, ConsistencyCheck,
// Deduplicate, DetectMutations, Shard) follow one rule: nil inherits the
// factory's setting (off for NewInformer), and an explicit value overrides
// it, an explicit "off" included, so that one informer can opt out of a
// factory default:
//
//	informer.InformerOptions[*corev1.Pod]{
//		ResyncPeriod:     new(time.Duration(0)), // no resync
//		Deduplicate:      new(false),
//		DetectMutations:  new(false),
//		ConsistencyCheck: &informer.ConsistencyCheckOptions{}, // on demand only
//		Shard:            informer.NoShard,
//	}
//
// Transform and DropFields add to the factory's instead.
type InformerOptions[T Object] struct {
	// Name identifies the informer in logs and metrics. A factory's
	// informer is named after its resource by default (see [For]).
	Name string
	// Resource is the resource the informer lists and watches. For an
	// informer made by [For] it says what to list and watch: it is required
	// for *metav1.PartialObjectMetadata and *unstructured.Unstructured, and
	// for a typed object it may be left zero (see [RESTOptions].Resource).
	// For [NewInformer], whose ListerWatcher decides what is listed, it only
	// names the resource. Either way the Lister's NotFound errors and the
	// metrics name its group and resource.
	Resource schema.GroupVersionResource
	// ClusterScoped makes an informer made by [For] list and watch across
	// all namespaces whatever [FactoryOptions].Namespace says, as a
	// cluster-scoped CRD, or a metadata-only or unstructured informer of any
	// cluster-scoped resource, needs in a namespaced factory. The typed
	// informers of built-in cluster-scoped resources (*corev1.Node...) need
	// not set it: For knows their scope, as client-go's factory does.
	// [NewInformer] ignores it: its ListerWatcher decides the namespace.
	ClusterScoped bool
	// ResyncPeriod is the default resync period of handlers (0 = none) and
	// the informer's initial resync check period, as client-go's
	// defaultEventHandlerResyncPeriod. Nil means
	// [FactoryOptions].ResyncPeriod for an informer made by [For], none
	// for [NewInformer]; new(time.Duration(0)) turns off the factory's. A
	// negative period is rejected: For and NewInformer return an error.
	ResyncPeriod *time.Duration
	// Indexers are the cache's secondary indexes.
	Indexers map[string]IndexFunc[T]
	// Transform, if set, is applied once to every object received from the
	// API server before it is cached (see [TransformFunc]). In a factory it
	// runs after [FactoryOptions].Transform.
	Transform TransformFunc[T]
	// WatchErrorHandler, if set, is called whenever a list or watch fails,
	// before the reflector backs off and retries (see [ReflectorOptions]).
	WatchErrorHandler WatchErrorHandler
	// DisableWatchList makes the reflector use list+watch instead of a
	// streaming initial list (see [ReflectorOptions]).
	DisableWatchList bool
	// Backoff, if set, replaces the reflector's backoff between failed list
	// and watch attempts (see [ReflectorOptions]).
	Backoff *wait.Backoff
	// MissingResourceRetry, if positive, makes the informer wait quietly
	// for a resource the server does not serve (a deleted CRD), retrying
	// every MissingResourceRetry and logging one line when it goes missing
	// and one when it returns (see [ReflectorOptions]). Nil means
	// [FactoryOptions].MissingResourceRetry for an informer made by [For];
	// new(time.Duration(0)) turns it off.
	MissingResourceRetry *time.Duration
	// Clock drives resync scheduling and the reflector's timers. Nil means
	// the real clock; tests pass a fake one.
	Clock clock.WithTicker
	// Metrics, if set, receives the informer's metrics while it runs (see
	// [MetricsProvider]). Nil means [FactoryOptions].Metrics for an
	// informer made by [For], and no metrics, at no cost, for
	// [NewInformer].
	Metrics MetricsProvider
	// ConsistencyCheck configures the checks that compare the cache with
	// the server: periodic checks and repair (see
	// [Informer.CheckConsistency]). Nil means
	// [FactoryOptions].ConsistencyCheck for an informer made by [For], and
	// checks on demand only for [NewInformer]; &ConsistencyCheckOptions{}
	// turns off the factory's periodic checks.
	ConsistencyCheck *ConsistencyCheckOptions
	// Deduplicate makes equal values of different cached objects share one
	// copy: each string repeated across cached objects (label and
	// annotation keys and values, images, env vars, node names…), equal
	// managed fields' FieldsV1.Raw bytes and, in a pod, each sub-object
	// equal to one already cached (labels and annotations maps, resource
	// lists, env, port, mount and toleration lists, probes, security
	// contexts, volume sources…). It changes no value, but CACHED OBJECTS
	// THEN SHARE MUTABLE MAPS, SLICES, STRUCTS AND BYTES: writing into one
	// cached object, which the no-mutation rule forbids, may change many
	// others at once. The mutation detector (DetectMutations) reports such
	// a write once, naming every object it changed and where each was
	// handed out; see docs/semantics.md, "Deduplication".
	// That is why it is off by default; strings alone, which are
	// immutable, are shared by default for pods, nodes and the other
	// built-in types decoded from protobuf (see [NewRESTListerWatcher]).
	//
	// Pods (and the other types [NewRESTListerWatcher] interns) decoded
	// from protobuf by the REST ListerWatcher (that of [For]), and the
	// custom resources it decodes from JSON, with no Transform, are
	// deduplicated as they are decoded: a sub-object (for custom resources,
	// any pointer, list or map of 32 bytes of JSON or more) whose bytes were
	// seen before is not decoded at all, which costs less CPU than decoding
	// without deduplication. Every other object is passed, after the
	// transform and before it is cached, through a deduplication pass,
	// which costs CPU per object. The figures (BenchmarkDecodePod, E1, W2,
	// W6) are in docs/benchmarks.md, "Figures behind design choices". To drop
	// fields and keep deduplicating on decode, use
	// DropFields rather than a Transform.
	//
	// Nil means [FactoryOptions].Deduplicate for an informer made by
	// [For], off for [NewInformer]; new(true) turns it on, new(false) off.
	Deduplicate *bool
	// DetectMutations enables the cache mutation detector, meant for tests
	// and CI; the environment variable KUBE_CACHE_MUTATION_DETECTOR=true
	// enables it in every informer, as in client-go. It keeps a deep copy of
	// every cached object, compares them every second while the informer
	// runs and once when Run ends, and logs each value found written into
	// (a map, list or struct of a cached object, which Deduplicate may have
	// made many objects share) with the objects it changed and the
	// handlers and Lister callers they were handed out to, at most five
	// such reports per 10 s (the others counted, their number logged);
	// InformerStats counts the objects and the values. It costs a copy per
	// cached object and a stack capture per Lister call; disabled, nothing.
	// Nil means [FactoryOptions].DetectMutations (or the environment
	// variable); new(false) turns it off whatever either says.
	DetectMutations *bool
	// DropFields are fields dropped from every object on the wire, before
	// it is decoded, for an informer made by [For] (see
	// [RESTOptions].DropFields for the paths and what is guaranteed):
	// they are absent from every cached object and event, and cost neither
	// memory nor decoding. [ManagedFields] is the usual one. In a factory
	// they add to [FactoryOptions].DropFields. [NewInformer], whose
	// ListerWatcher decodes the objects, rejects them: give them to the
	// ListerWatcher's [RESTOptions] instead.
	DropFields []string
	// Shard, if set, restricts the informer to a shard of the resource (see
	// [Shard] and docs/sharding.md): the server sends only the shard's
	// objects. For an informer made by [For], nil means
	// [FactoryOptions].Shard, and [NoShard] holds the whole resource in a
	// sharded factory.
	Shard *Shard
	// Snapshot makes the informer keep a snapshot of its cache on disk and
	// restart from it (see [SnapshotOptions] and docs/restart.md). For an
	// informer made by [For], a zero Snapshot.Dir means
	// [FactoryOptions].Snapshot.
	Snapshot SnapshotOptions
}

// One resolved configuration per informer: resolveConfig merges the
// factory's defaults (FactoryOptions) with an informer's own settings
// (InformerOptions) by one rule, and everything else (the reflector's
// options, the REST ListerWatcher's options with the dropped fields, the
// handlers' default resync, the creation-only check of a later For) is
// derived from the result here, so that no stage reads either options
// struct.

// config is an informer's resolved configuration. Its exported fields are
// named after the InformerOptions fields they resolve, so that
// creationOnlySettings can name the options a later For call changes by
// comparing two configurations field by field; its unexported fields are
// what the factory adds on top (its transform and dropped fields, which
// compose with the informer's rather than being overridden).
type config[T Object] struct {
	Name                 string
	Resource             schema.GroupVersionResource
	ClusterScoped        bool
	ResyncPeriod         time.Duration
	Transform            TransformFunc[T]
	WatchErrorHandler    WatchErrorHandler
	DisableWatchList     bool
	Backoff              *wait.Backoff
	MissingResourceRetry time.Duration
	Clock                clock.WithTicker
	Metrics              MetricsProvider
	ConsistencyCheck     ConsistencyCheckOptions
	Deduplicate          bool
	DetectMutations      bool
	DropFields           []string
	Shard                *Shard
	Snapshot             SnapshotOptions

	// factoryTransform runs before Transform (FactoryOptions.Transform).
	factoryTransform TransformFunc[T]
	// factoryDropFields are dropped in addition to DropFields.
	factoryDropFields []string
	// consistencyInherited records that ConsistencyCheck came from the
	// factory, which leaves dynamic shards out of its checks.
	consistencyInherited bool
	// interns, if set, is the intern table of the informer's fleet, which
	// the informer deduplicates with instead of tables of its own (see
	// Informer.deduplicate).
	interns *wire.InternTable
	// resyncCheckPeriod is how often the reflector asks the handlers
	// whether a resync is due: ResyncPeriod, lowered before Run by a
	// handler asking for a shorter period (see adjustResyncPeriod).
	resyncCheckPeriod time.Duration
}

// resolveConfig merges the factory's defaults with an informer's options
// by one rule: a nil (or, for strings, functions and booleans without a
// factory counterpart, zero) setting inherits the factory's, an explicit
// value overrides it, an explicit "off" included (new(false),
// new(time.Duration(0)), &ConsistencyCheckOptions{}, NoShard). The
// factory's transform and dropped fields compose with the informer's
// instead. [NewInformer] resolves against the zero FactoryOptions, whose
// every default is off. The environment's KUBE_CACHE_MUTATION_DETECTOR
// acts as a factory default of DetectMutations.
func resolveConfig[T Object](f FactoryOptions, opts InformerOptions[T]) config[T] {
	c := config[T]{
		Name:                 opts.Name,
		Resource:             opts.Resource,
		ClusterScoped:        opts.ClusterScoped,
		ResyncPeriod:         inherit(opts.ResyncPeriod, f.ResyncPeriod),
		Transform:            opts.Transform,
		WatchErrorHandler:    opts.WatchErrorHandler,
		DisableWatchList:     opts.DisableWatchList,
		Backoff:              opts.Backoff,
		MissingResourceRetry: inherit(opts.MissingResourceRetry, f.MissingResourceRetry),
		Clock:                opts.Clock,
		Metrics:              opts.Metrics,
		ConsistencyCheck:     inherit(opts.ConsistencyCheck, f.ConsistencyCheck),
		Deduplicate:          inherit(opts.Deduplicate, f.Deduplicate),
		DetectMutations:      inherit(opts.DetectMutations, f.DetectMutations || mutationDetectorFromEnv()),
		DropFields:           opts.DropFields,
		Shard:                opts.Shard,
		Snapshot:             opts.Snapshot,
		factoryDropFields:    f.DropFields,
		consistencyInherited: opts.ConsistencyCheck == nil,
	}
	if c.Metrics == nil {
		c.Metrics = f.Metrics
	}
	if c.Shard == nil {
		c.Shard = f.Shard
	}
	if c.Snapshot.Dir == "" {
		c.Snapshot = f.Snapshot
	}
	if c.Shard != nil && c.Shard.whole {
		c.Shard = nil
	}
	if f.Transform != nil {
		c.factoryTransform = typedTransform[T](f.Transform)
	}
	c.resyncCheckPeriod = c.ResyncPeriod
	return c
}

// inherit is the rule of resolveConfig: an explicit setting, else the
// factory's.
func inherit[V any](setting *V, factory V) V {
	if setting != nil {
		return *setting
	}
	return factory
}

// validate rejects settings that could only fail: a negative resync
// period, an invalid shard. DropFields are checked by the ListerWatcher.
func (c *config[T]) validate() error {
	if err := validateResync("InformerOptions.ResyncPeriod", c.ResyncPeriod); err != nil {
		return err
	}
	if c.Shard != nil {
		if err := c.Shard.validate(); err != nil {
			return fmt.Errorf("InformerOptions.%w", err)
		}
	}
	return nil
}

// transform is the transform the queue runs: the factory's, then the
// informer's.
func (c *config[T]) transform() TransformFunc[T] {
	if c.factoryTransform == nil {
		return c.Transform
	}
	return Chain(c.factoryTransform, c.Transform)
}

// dropFields are the fields the informer's ListerWatcher drops: the
// factory's and the informer's.
func (c *config[T]) dropFields() []string {
	return slices.Concat(c.factoryDropFields, c.DropFields)
}

// dynamicShard reports whether the informer follows a ShardGroup.
func (c *config[T]) dynamicShard() bool {
	return c.Shard != nil && c.Shard.Group != nil
}

// clock returns the configured clock, the real one by default.
func (c *config[T]) clock() clock.WithTicker {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// reflectorOptions are the options of the informer's reflectors (one, or
// one per range of a dynamic shard). shouldResync decides which handlers
// get the next resync.
func (c *config[T]) reflectorOptions(shouldResync func() bool) ReflectorOptions {
	return ReflectorOptions{
		Name:                 c.Name,
		ResyncPeriod:         c.resyncCheckPeriod,
		ShouldResync:         shouldResync,
		WatchErrorHandler:    c.WatchErrorHandler,
		Clock:                c.clock(),
		Backoff:              c.Backoff,
		DisableWatchList:     c.DisableWatchList,
		MissingResourceRetry: c.MissingResourceRetry,
	}
}

// restOptions are the options of the REST ListerWatcher of an informer
// made by For from a factory with options f, listing namespace ("" for
// all) through client.
func (c *config[T]) restOptions(f FactoryOptions, namespace string, client *http.Client) RESTOptions {
	return RESTOptions{
		Scheme:           f.Scheme,
		Resource:         c.Resource,
		Namespace:        namespace,
		TweakListOptions: f.TweakListOptions,
		ContentType:      f.ContentType,
		HTTPClient:       client,
		DropFields:       c.dropFields(),
	}
}

// handlerResync is the resync period a handler asks for with opts: its
// own, or the informer's default.
func (c *config[T]) handlerResync(opts HandlerOptions) time.Duration {
	if opts.ResyncPeriod != nil {
		return *opts.ResyncPeriod
	}
	return c.ResyncPeriod
}

// metricsID returns the informer's identity for a metrics provider.
func (c *config[T]) metricsID() InformerID {
	id := InformerID{Name: c.Name, Resource: c.Resource}
	if id.Name == "" {
		id.Name = c.Resource.GroupResource().String()
	}
	if id.Name == "" {
		var zero T
		id.Name = fmt.Sprintf("%T", zero)
	}
	return id
}

// creationOnlySettings names the options of a later For call that would
// configure the informer differently from the factory's defaults: the
// exported fields of the two resolved configurations that differ, Resource
// (checked on its own) aside. Functions differ unless both are nil;
// pointers and interfaces (a Backoff, a Shard, the Metrics provider, the
// Clock) are the same only when they are the same one; empty and nil
// slices are the same.
func creationOnlySettings[T Object](requested, inherited config[T]) []string {
	var set []string
	a, b := reflect.ValueOf(requested), reflect.ValueOf(inherited)
	for k := range a.NumField() {
		field := a.Type().Field(k)
		if !field.IsExported() || field.Name == "Resource" {
			continue
		}
		x, y := a.Field(k), b.Field(k)
		var same bool
		switch field.Type.Kind() {
		case reflect.Func:
			same = x.IsNil() && y.IsNil()
		case reflect.Slice:
			same = x.Len() == 0 && y.Len() == 0 || reflect.DeepEqual(x.Interface(), y.Interface())
		case reflect.Pointer:
			same = x.Pointer() == y.Pointer()
		case reflect.Interface:
			// The same provider or clock: never compared by walking what
			// they hold, which may be changing.
			same = x.IsNil() && y.IsNil() ||
				!x.IsNil() && !y.IsNil() && x.Elem().Type() == y.Elem().Type() && x.Elem().Comparable() && x.Interface() == y.Interface()
		default:
			same = reflect.DeepEqual(x.Interface(), y.Interface())
		}
		if !same {
			set = append(set, "InformerOptions."+field.Name)
		}
	}
	return set
}

// joinAnd joins names as in an English sentence: "a", "a and b",
// "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
