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
)

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
