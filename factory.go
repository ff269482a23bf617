package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/internal/wire"
)

// FactoryOptions configures a [Factory]. The zero value is valid: all
// namespaces, no resync, built-in types only, protobuf for built-ins.
//
// The fields that [InformerOptions] has too are defaults: an informer
// whose own setting is nil inherits them, and one whose setting is
// explicit, an explicit "off" included, overrides them (see
// [InformerOptions]).
type FactoryOptions struct {
	// Namespace limits every informer to one namespace; empty means all
	// namespaces. Informers created with [InformerOptions].ClusterScoped
	// ignore it, as do, like in client-go's factory, the typed informers of
	// built-in cluster-scoped resources (*corev1.Node, *corev1.Namespace,
	// *rbacv1.ClusterRole...), which list and watch the whole cluster.
	Namespace string
	// TweakListOptions, if set, changes the options of every list and watch
	// call of every informer, for example to set a label or field selector.
	TweakListOptions func(options *metav1.ListOptions)
	// ResyncPeriod is the resync period of informers created without
	// [InformerOptions].ResyncPeriod; 0 means no resync.
	ResyncPeriod time.Duration
	// Transform, if set, runs on every object of every informer before the
	// informer's own transform, for example
	// StripManagedFields[metav1.Object] (see [TransformFunc]). If it returns
	// a new object, that object must have the informer's type.
	Transform TransformFunc[metav1.Object]
	// Name, if set, prefixes the default name of every informer in logs.
	Name string
	// Scheme knows the CRD Go types to inform on (see [RESTOptions].Scheme);
	// built-in types are always known.
	Scheme *runtime.Scheme
	// ContentType is the wire format of the typed informers made by [For]:
	// by default protobuf for built-in types and JSON for the others.
	ContentType ContentType
	// HTTPClient is the client every request goes through. Nil means one
	// client built from the config and owned by the factory, on a transport
	// of its own (not shared with other clients of the same config), whose
	// idle connections Shutdown closes.
	HTTPClient *http.Client
	// Metrics, if set, receives the metrics of every informer the factory
	// makes, identified by the informer's name and resource (see
	// [MetricsProvider] and [InformerID]). Nil means no metrics.
	Metrics MetricsProvider
	// DetectMutations enables the cache mutation detector of every informer
	// created without [InformerOptions].DetectMutations (see there), for
	// tests and CI.
	DetectMutations bool
	// MissingResourceRetry, if positive, makes every informer whose
	// resource the server stops serving (its CRD was deleted) retry quietly
	// every MissingResourceRetry, instead of logging a failure after each
	// backoff, and resume when the resource is served again; informers
	// created with [InformerOptions].MissingResourceRetry use their own.
	// To stop such an informer for good, see [Release].
	MissingResourceRetry time.Duration
	// ConsistencyCheck configures the consistency checks of every informer
	// created without [InformerOptions].ConsistencyCheck (see
	// [Informer.CheckConsistency]), except those with a dynamic shard
	// ([Shard].Group), whose caches cannot be checked: Start logs one
	// warning for the factory that names them.
	ConsistencyCheck ConsistencyCheckOptions
	// DropFields are fields dropped on the wire, before decoding, from the
	// objects of every informer (see [RESTOptions].DropFields), in
	// addition to each informer's [InformerOptions].DropFields: they are
	// absent from every cached object and event. Set it to
	// []string{informer.ManagedFields} to keep no informer's managed
	// fields. Every path must exist in the type of every informer made
	// (metadata paths do), else For fails; NewFactory rejects a malformed
	// path and the fields that are never dropped (see
	// [RESTOptions].DropFields).
	DropFields []string
	// Shard, if set, restricts every informer created without
	// [InformerOptions].Shard to a shard of its resource (see [Shard]).
	Shard *Shard
	// Deduplicate turns on deduplication in every informer created
	// without [InformerOptions].Deduplicate: cached objects then share
	// equal strings, maps, slices and structs (see there).
	Deduplicate bool
	// Snapshot makes every informer created without
	// [InformerOptions].Snapshot.Dir keep a snapshot of its cache in
	// Snapshot.Dir and restart from it (see [SnapshotOptions]); each
	// informer's file is named after its name and resource.
	Snapshot SnapshotOptions
}

// InformerKey identifies one informer of a [Factory]: the Go type of its
// objects and the resource it lists and watches.
type InformerKey struct {
	// Type is the Go type of the informer's objects, e.g. *v1.Pod.
	Type reflect.Type
	// Resource is the resource the informer lists and watches.
	Resource schema.GroupVersionResource
}

// String returns the type and the resource, e.g. "*v1.Pod v1/pods" or
// "*v1.PartialObjectMetadata apps/v1/deployments".
func (k InformerKey) String() string {
	return fmt.Sprintf("%v %s", k.Type, resourcePath(k.Resource))
}

// Factory creates and runs informers that share one HTTP client and one
// configuration, like client-go's SharedInformerFactory: [For] returns the
// same *Informer[T] for a type and resource every time, so that every part of
// a program shares one cache and one watch per resource.
//
// All methods are safe for concurrent use. Objects in the informers' caches
// are shared and must not be modified.
type Factory struct {
	config        *rest.Config
	opts          FactoryOptions
	httpClient    *http.Client
	ownHTTPClient bool

	mu        sync.Mutex
	informers map[InformerKey]*factoryEntry
	byType    map[reflect.Type]*factoryEntry // typed informers
	cancels   []context.CancelFunc           // of every Start that started something
	// startCalled records that Start has been called.
	startCalled bool
	// unchecked names the informers with a dynamic shard that the
	// factory's ConsistencyCheck leaves out; the first Start to start any
	// of them warns once for the whole factory (uncheckedWarned).
	unchecked       []string
	uncheckedWarned bool
	shutDown        bool
	done            chan struct{}  // closed by Shutdown
	wg              sync.WaitGroup // one per running informer
}

// factoryInformer is what the factory needs of an *Informer[T].
type factoryInformer interface {
	Run(ctx context.Context)
	HasSynced() bool
	HasSyncedChecker() cache.DoneChecker
	lastError() error
	syncBlocked() <-chan struct{}
	stopUnstarted()
	endedChan() <-chan struct{}
}

type factoryEntry struct {
	key       InformerKey
	name      string // the informer's name in logs
	namespace string // the namespace it lists and watches, "" for all
	informer  factoryInformer
	started   bool
	// cancel stops the informer's Run, and done is closed once Run has
	// returned; both set by Start.
	cancel context.CancelFunc
	done   chan struct{}
	// released is closed by Release, so that a WaitForCacheSync in
	// progress stops waiting for the informer.
	released chan struct{}
}

// NewFactory returns a factory for the cluster config points to. It makes no
// request; it fails if config is nil or cannot give an HTTP client, or if an
// option is invalid.
func NewFactory(config *rest.Config, opts FactoryOptions) (*Factory, error) {
	if config == nil {
		return nil, fmt.Errorf("informer factory: rest config is nil")
	}
	if err := validateNamespace(opts.Namespace); err != nil {
		return nil, fmt.Errorf("informer factory: %w", err)
	}
	switch opts.ContentType {
	case ContentTypeDefault, ContentTypeJSON, ContentTypeProtobuf:
	default:
		return nil, fmt.Errorf("informer factory: unsupported content type %q", opts.ContentType)
	}
	if err := validateResync("FactoryOptions.ResyncPeriod", opts.ResyncPeriod); err != nil {
		return nil, fmt.Errorf("informer factory: %w", err)
	}
	if opts.Shard != nil {
		if err := opts.Shard.validate(); err != nil {
			return nil, fmt.Errorf("informer factory: FactoryOptions.%w", err)
		}
	}
	if err := opts.Snapshot.validate(); err != nil {
		return nil, fmt.Errorf("informer factory: FactoryOptions.%w", err)
	}
	// The names are checked against each informer's type in For; the
	// syntax and the fields never to drop, at once.
	if err := wire.ValidateDropFields(opts.DropFields); err != nil {
		return nil, fmt.Errorf("informer factory: FactoryOptions.DropFields: %w", err)
	}
	f := &Factory{
		config:     rest.CopyConfig(config),
		opts:       opts,
		httpClient: opts.HTTPClient,
		informers:  map[InformerKey]*factoryEntry{},
		byType:     map[reflect.Type]*factoryEntry{},
		done:       make(chan struct{}),
	}
	if f.httpClient == nil {
		// A transport of the factory's own, so that Shutdown closes only its
		// connections: for a config without TLS options, client-go hands out
		// the process-wide http.DefaultTransport, and configs with equal TLS
		// options share one cached transport. A config naming a proxy
		// function gets a fresh transport; ProxyFromEnvironment is what
		// client-go uses when none is named.
		cfg := rest.CopyConfig(f.config)
		if cfg.Proxy == nil {
			cfg.Proxy = http.ProxyFromEnvironment
		}
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("informer factory: HTTP client: %w", err)
		}
		f.httpClient, f.ownHTTPClient = client, true
	}
	return f, nil
}

// For returns the factory's informer for the Go type T, creating it on the
// first call; every later call for the same T (and resource) returns the same
// pointer. T is either a typed object, a built-in type of k8s.io/api or a CRD
// type known to [FactoryOptions].Scheme, or, for a resource given in
// opts.Resource, *metav1.PartialObjectMetadata (metadata only, see
// [NewMetadataListerWatcher]) or *unstructured.Unstructured (see
// [NewDynamicListerWatcher]). T is inferred from opts:
//
//	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
//
// It fails at once, with a clear error, for a type the factory cannot list
// and watch, for a nil factory, and after Shutdown.
//
// opts apply when the informer is created; nil fields take the factory's
// settings (see [InformerOptions]). On a later call, opts.Indexers are added
// to the existing informer; opts.Resource, if set, must be the informer's;
// any other field that would configure the informer differently from the
// factory's defaults is an error, since the informer is already
// configured.
//
// An informer created after Start runs once Start is called again.
func For[T Object](f *Factory, opts InformerOptions[T]) (*Informer[T], error) {
	typ := reflect.TypeFor[T]()
	named := namedResourceType[T]()
	key := InformerKey{Type: typ, Resource: opts.Resource}
	if f == nil {
		return nil, fmt.Errorf("informer for %v: the factory is nil", typ)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutDown {
		return nil, fmt.Errorf("informer for %v: the factory is shut down", typ)
	}
	var entry *factoryEntry
	if named {
		entry = f.informers[key]
	} else {
		entry = f.byType[typ]
	}
	if entry != nil {
		inf, err := reuseInformer(f, entry, opts)
		if err != nil || len(opts.Indexers) == 0 {
			return inf, err
		}
		// AddIndexers calls the new index functions on every cached object:
		// user code, which may call back into the factory, so not under f.mu.
		f.mu.Unlock()
		err = inf.AddIndexers(opts.Indexers)
		f.mu.Lock() // for the deferred Unlock
		if err != nil {
			return nil, fmt.Errorf("informer for %v: %w", entry.key, err)
		}
		return inf, nil
	}
	cfg := resolveConfig(f.opts, opts)
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("informer for %v: %w", typ, err)
	}
	// As client-go's factory does, a built-in cluster-scoped type (nodes)
	// is listed cluster-wide whatever the factory's namespace: the API
	// server serves no nodes inside a namespace.
	namespace := f.namespaceFor(cfg.ClusterScoped || (!named && builtinClusterScopedType[T](f.opts.Scheme)))
	restOpts := cfg.restOptions(f.opts, namespace, f.httpClient)
	var lw ListerWatcher[T]
	form := ""
	if named {
		if opts.Resource.Empty() {
			return nil, fmt.Errorf("informer for %v: InformerOptions.Resource is required for %v", typ, typ)
		}
		restOpts.Scheme, restOpts.ContentType = nil, ContentTypeDefault
		var err error
		if lw, err = newResourceListerWatcher[T](f.config, restOpts); err != nil {
			return nil, fmt.Errorf("informer for %v: %w", key, err)
		}
		form = typ.Elem().Name()
	} else {
		restLW, err := newRESTListerWatcher[T](f.config, restOpts)
		if err != nil {
			return nil, fmt.Errorf("informer for %v: %w", typ, err)
		}
		lw, key.Resource = restLW, restLW.Resource()
	}
	inf, entry, err := newFactoryInformer(f, lw, key, form, namespace, cfg, opts.Indexers)
	if err != nil {
		return nil, fmt.Errorf("informer for %v: %w", key, err)
	}
	if !named {
		f.byType[typ] = entry
	}
	return inf, nil
}

// namedResourceType reports whether T is one of the types whose resource
// must be named: metadata-only or unstructured objects.
func namedResourceType[T Object]() bool {
	var zero T
	switch any(zero).(type) {
	case *metav1.PartialObjectMetadata, *unstructured.Unstructured:
		return true
	}
	return false
}

// namespaceFor is the namespace an informer lists and watches.
func (f *Factory) namespaceFor(clusterScoped bool) string {
	if clusterScoped {
		return ""
	}
	return f.opts.Namespace
}

// newFactoryInformer creates and registers an informer of the resolved
// configuration cfg, whose lw lists and watches namespace ("" for all) and
// drops cfg's DropFields. form, if set, is appended to its default name
// ("pods (PartialObjectMetadata)"). Call with f.mu held.
func newFactoryInformer[T Object](f *Factory, lw ListerWatcher[T], key InformerKey, form, namespace string, cfg config[T], indexers map[string]IndexFunc[T]) (*Informer[T], *factoryEntry, error) {
	if cfg.Name == "" {
		cfg.Name = key.Resource.GroupResource().String()
		if form != "" {
			cfg.Name += " (" + form + ")"
		}
		if f.opts.Name != "" {
			cfg.Name = f.opts.Name + "/" + cfg.Name
		}
	}
	if cfg.consistencyInherited && cfg.ConsistencyCheck.Period > 0 && cfg.dynamicShard() {
		// A dynamic shard's cache cannot be checked (errDynamicShard): each
		// such informer would warn at its Run; Start warns once instead.
		cfg.ConsistencyCheck = ConsistencyCheckOptions{}
		f.unchecked = append(f.unchecked, cfg.Name)
	}
	cfg.Resource = key.Resource
	inf, err := newInformer(lw, cfg, indexers)
	if err != nil {
		return nil, nil, err
	}
	entry := &factoryEntry{key: key, name: cfg.Name, namespace: namespace, informer: inf, released: make(chan struct{})}
	f.informers[key] = entry
	return inf, entry, nil
}

// reuseInformer returns the informer of entry after checking the options a
// later For call may give: Indexers, which For adds once f.mu is released;
// the informer's Resource; and no setting that would configure the
// informer differently from the factory's defaults, which apply only when
// it is created. Call with f.mu held.
func reuseInformer[T Object](f *Factory, entry *factoryEntry, opts InformerOptions[T]) (*Informer[T], error) {
	inf, ok := entry.informer.(*Informer[T])
	if !ok {
		return nil, fmt.Errorf("informer for %v: the factory holds a %T", entry.key, entry.informer)
	}
	if !opts.Resource.Empty() && opts.Resource != entry.key.Resource {
		return nil, fmt.Errorf("informer for %v already exists: a %v informer of %s needs a factory of its own", entry.key, entry.key.Type, resourcePath(opts.Resource))
	}
	if set := creationOnlySettings(resolveConfig(f.opts, opts), resolveConfig(f.opts, InformerOptions[T]{})); len(set) > 0 {
		verb := "applies"
		if len(set) > 1 {
			verb = "apply"
		}
		return nil, fmt.Errorf("informer for %v already exists: %s %s only when the informer is created", entry.key, joinAnd(set), verb)
	}
	return inf, nil
}

// Start runs every informer created so far and not yet started, each in its
// own goroutine, until ctx is done or Shutdown is called. It does not block.
// Calling it again starts the informers created since: until then
// WaitForCacheSync fails naming them. It does nothing after Shutdown.
// Informers log through the logger of ctx.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutDown {
		return
	}
	f.startCalled = true
	if len(f.unchecked) > 0 && !f.uncheckedWarned {
		f.uncheckedWarned = true
		klog.FromContext(ctx).Info("Warning: the factory's consistency checks do not run on informers with a dynamic shard: their caches have no single resource version to list at",
			"informers", f.unchecked, "period", f.opts.ConsistencyCheck.Period)
	}
	var runCtx context.Context
	for _, entry := range f.informers {
		if entry.started {
			continue
		}
		if runCtx == nil {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithCancel(ctx)
			f.cancels = append(f.cancels, cancel)
		}
		entry.started = true
		klog.FromContext(ctx).V(2).Info("Starting informer", "informer", entry.name, "key", entry.key.String())
		entryCtx, cancel := context.WithCancel(runCtx)
		entry.cancel, entry.done = cancel, make(chan struct{})
		f.wg.Go(func() {
			defer close(entry.done)
			defer cancel()
			entry.informer.Run(entryCtx)
		})
	}
}

// WaitForCacheSync waits until every informer of the factory has synced
// (its first list is in its cache), or stopped, or been released, or ctx is
// done, or the factory is shut down, and reports for each informer whether
// it synced. The error is nil when all synced. Otherwise it names each
// informer that did not, says why when it knows (it stopped before it
// synced, for example because the context given to Start had ended; it was
// released; it was created after the last Start), gives the error of its
// last failed list or watch if there was one (and a hint for a resource the
// server does not serve), and wraps those errors and context.Cause(ctx)
// when ctx ended the wait: errors.Is, errors.As and apierrors.IsForbidden
// and the like see through it.
//
// It fails at once, without waiting, when Start was never called, or when
// an informer was created after the last Start (call Start again): such an
// informer would never sync. It never waits for an informer that has
// stopped: one that stopped before it synced never will. It stops waiting,
// and fails saying so, when an informer of a dynamic shard ([Shard].Group)
// has run for 5 seconds and its [ShardGroup] is not running.
func (f *Factory) WaitForCacheSync(ctx context.Context) (map[InformerKey]bool, error) {
	f.mu.Lock()
	entries := slices.Collect(maps.Values(f.informers))
	startCalled, shutDown := f.startCalled, f.shutDown
	unstarted := map[*factoryEntry]bool{}
	for _, entry := range entries {
		if !entry.started {
			unstarted[entry] = true
		}
	}
	f.mu.Unlock()
	slices.SortFunc(entries, func(a, b *factoryEntry) int { return strings.Compare(a.key.String(), b.key.String()) })

	var cause error
	switch {
	case shutDown:
		cause = errFactoryShutDown
	case !startCalled:
		cause = errors.New("the factory was never started: call Start before WaitForCacheSync")
	case len(unstarted) > 0:
		cause = errors.New("not every informer is running")
	default:
	wait:
		for _, entry := range entries {
			select {
			case <-entry.informer.HasSyncedChecker().Done():
			case <-entry.informer.endedChan():
			case <-entry.informer.syncBlocked():
				// Its last error says why it cannot sync.
				cause = errCannotSync
				break wait
			case <-entry.released:
			case <-ctx.Done():
				cause = context.Cause(ctx)
				break wait
			case <-f.done:
				cause = errFactoryShutDown
				break wait
			}
		}
	}
	select {
	case <-f.done:
		// Shut down while waiting: the informers stopped because of it.
		shutDown = true
		if cause == nil {
			cause = errFactoryShutDown
		}
	default:
	}
	synced := make(map[InformerKey]bool, len(entries))
	var missing []string
	var causes []error
	for _, entry := range entries {
		ok := entry.informer.HasSynced()
		synced[entry.key] = ok
		if ok {
			continue
		}
		why := whyNotSynced(entry, unstarted[entry] && startCalled && !shutDown, shutDown)
		if err := entry.informer.lastError(); err != nil {
			why = append(why, fmt.Sprintf("last error: %v%s", err, f.hintFor(entry, err)))
			causes = append(causes, err)
		}
		if len(why) == 0 {
			missing = append(missing, entry.key.String())
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (%s)", entry.key, strings.Join(why, "; ")))
	}
	if len(missing) == 0 {
		return synced, nil
	}
	msg := "informers not synced: " + strings.Join(missing, ", ")
	if cause != nil {
		// Only a wait that ctx, the shutdown or the factory's state ended
		// has a cause: one that ended because each informer synced,
		// stopped or was released has none, and wraps no nil error.
		msg += ": " + cause.Error()
		causes = append(causes, cause)
	}
	return synced, &syncError{msg: msg, causes: causes}
}

// whyNotSynced says why the informer of entry, which has not synced, will
// not sync on its own: it was released, it stopped (unless the factory was
// shut down, which the error's cause says), or it was created after the
// last Start (createdLate). It returns nil when the informer may still
// sync.
func whyNotSynced(entry *factoryEntry, createdLate, shutDown bool) []string {
	select {
	case <-entry.released:
		return []string{"released"}
	default:
	}
	if createdLate {
		return []string{"created after the last Start: call Start again to run it"}
	}
	select {
	case <-entry.informer.endedChan():
		if !shutDown {
			return []string{"stopped before it synced: the context it ran with ended"}
		}
	default:
	}
	return nil
}

// errCannotSync is the cause of a WaitForCacheSync that ended because an
// informer cannot sync until something outside it changes (a dynamic
// shard's ShardGroup that is not running).
var errCannotSync = errors.New("an informer cannot sync")

// errFactoryShutDown is the cause of a WaitForCacheSync that ended because
// the factory was shut down.
var errFactoryShutDown = errors.New("the factory is shut down")

// syncError is the error of WaitForCacheSync: its message names every
// informer that did not sync, and it wraps each one's last error and the
// reason the wait ended.
type syncError struct {
	msg    string
	causes []error
}

func (e *syncError) Error() string   { return e.msg }
func (e *syncError) Unwrap() []error { return e.causes }

// hintFor explains the likely mistake behind err, the last error of the
// informer of entry, or returns "". A list the server answers with "404 Not
// Found" means it does not serve the resource: a CRD that is not installed,
// or a cluster-scoped resource asked for in a namespace.
func (f *Factory) hintFor(entry *factoryEntry, err error) string {
	if !apierrors.IsNotFound(err) {
		return ""
	}
	resource := resourcePath(entry.key.Resource)
	if entry.namespace != "" {
		return fmt.Sprintf("; the server does not serve %s in namespace %q: if %s is cluster-scoped, create its informer with InformerOptions.ClusterScoped; if it is a custom resource, check that its CRD is installed",
			resource, entry.namespace, entry.key.Resource.Resource)
	}
	return fmt.Sprintf("; the server does not serve %s: if it is a custom resource, check that its CRD is installed", resource)
}

// Shutdown stops every informer the factory started and waits until every
// goroutine it started has exited; then it closes the idle connections of
// the HTTP client it owns. Informers never started are stopped too: they
// refuse handlers, which they could never notify, and report IsStopped.
// Afterwards Start does nothing, For fails, and WaitForCacheSync returns at
// once. It may be called more than once, also concurrently. It waits for
// the event handlers of its informers, so it must not be called from one of
// them: a handler cancels the context given to Start instead.
//
// Unlike client-go's factory, which waits for the context given to Start to
// end, Shutdown cancels the informers itself.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	if !f.shutDown {
		f.shutDown = true
		close(f.done)
	}
	var unstarted []factoryInformer
	for _, entry := range f.informers {
		if !entry.started {
			unstarted = append(unstarted, entry.informer)
		}
	}
	cancels := f.cancels
	f.cancels = nil
	f.mu.Unlock()
	// Not under f.mu: stopping takes each informer's lock, under which user
	// code (a MetricsProvider) may run. Start, which would start them, does
	// nothing from now on.
	for _, inf := range unstarted {
		inf.stopUnstarted()
	}
	for _, cancel := range cancels {
		cancel()
	}
	f.wg.Wait()
	if f.ownHTTPClient {
		f.httpClient.CloseIdleConnections()
	}
}

// Release removes inf from f and stops it: its Run returns, so its
// goroutines have exited and its handlers receive nothing more, by the time
// Release returns (an informer never started is stopped, as Shutdown
// does). A later [For] for the same type and resource creates a new
// informer, which runs once Start is called again. Like Shutdown, it waits
// for inf's handlers, so it must not be called from one of them. A
// WaitForCacheSync already waiting stops waiting for inf, and reports it
// unsynced if it had not synced.
//
// It fails if f or inf is nil, or if inf is not an informer of f, for
// example because it was released already.
func Release[T Object](f *Factory, inf *Informer[T]) error {
	switch {
	case f == nil:
		return errors.New("release: the factory is nil")
	case inf == nil:
		return errors.New("release: the informer is nil")
	}
	f.mu.Lock()
	var entry *factoryEntry
	for _, e := range f.informers {
		if e.informer == factoryInformer(inf) {
			entry = e
			break
		}
	}
	if entry == nil {
		f.mu.Unlock()
		return fmt.Errorf("release: %s is not an informer of this factory (released already?)", informerName(inf))
	}
	delete(f.informers, entry.key)
	if f.byType[entry.key.Type] == entry {
		delete(f.byType, entry.key.Type)
	}
	close(entry.released)
	f.mu.Unlock()
	if !entry.started {
		inf.stopUnstarted()
		return nil
	}
	entry.cancel()
	<-entry.done
	return nil
}
