package crcache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// defaultSyncPeriod is controller-runtime's default resync period.
const defaultSyncPeriod = 10 * time.Hour

// shared is what every informer set of one cache shares.
type shared struct {
	config                      *rest.Config
	httpClient                  *http.Client
	scheme                      *runtime.Scheme
	mapper                      meta.RESTMapper
	readerFailOnMissingInformer bool
	watchErrorHandler           toolscache.WatchErrorHandlerWithContext
	// lean is crcache's own Options, resolved.
	lean leanOptions
	// newSource builds the ListerWatcher of an informer: newRESTSource,
	// or a fake in tests and benchmarks.
	newSource func(listWatchRequest) (source, error)
	// tables are the decoding tables of the Fleet the cache belongs to;
	// nil for a cache of its own.
	tables *decodingTables
}

// selectors are the server-side selectors of an informer's lists and
// watches.
type selectors struct {
	label labels.Selector
	field fields.Selector
}

// applyTo sets the selectors on a list or watch request.
func (s selectors) applyTo(opts *metav1.ListOptions) {
	if s.label != nil {
		opts.LabelSelector = s.label.String()
	}
	if s.field != nil {
		opts.FieldSelector = s.field.String()
	}
}

// formOf returns the form of informer that holds obj (an object or a list).
func formOf(obj runtime.Object) objectForm {
	switch obj.(type) {
	case runtime.Unstructured:
		return formUnstructured
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return formMetadata
	default:
		return formTyped
	}
}

// entryKey identifies an informer of an informerSet.
type entryKey struct {
	gvk  schema.GroupVersionKind
	form objectForm
}

// informerSet is the informers of one namespace (or of all namespaces)
// with one configuration: the counterpart of controller-runtime's
// informerCache. It is a cache.Cache on its own; multiNamespaceCache and
// byGVKCache combine several.
type informerSet struct {
	*shared
	namespace string
	config    cache.Config

	mu        sync.RWMutex // readers take the read lock to find their entry
	entries   map[entryKey]*entry
	started   bool
	startWait chan struct{} // closed by Start
	ctx       context.Context
	stopped   bool
	wg        sync.WaitGroup // one per running informer
}

var _ cache.Cache = (*informerSet)(nil)

func newInformerSet(s *shared, config cache.Config, namespace string) *informerSet {
	return &informerSet{
		shared:    s,
		namespace: namespace,
		config:    config,
		entries:   map[entryKey]*entry{},
		startWait: make(chan struct{}),
	}
}

// entry is one informer of an informerSet and what reading from it needs.
type entry struct {
	key        entryKey
	inf        *coreInformer
	namespaced bool
	// itemType is the pointer type of the cached objects; copier makes
	// their deep copies.
	itemType        reflect.Type
	copier          objectCopier
	disableDeepCopy bool
	// cancel stops the informer once it runs; removed is set by
	// RemoveInformer. Both are guarded by the set's mu.
	cancel  context.CancelFunc
	removed bool

	fieldsMu sync.RWMutex
	fields   map[string]client.IndexerFunc // by field name, from IndexField
}

// Start runs every informer created so far, and from then on every new one
// at once, until ctx is done; then it waits for them to stop. It fails if
// the set was already started.
func (s *informerSet) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("informer already started")
	}
	s.ctx = ctx
	for _, e := range s.entries {
		s.startLocked(e)
	}
	s.started = true
	close(s.startWait)
	s.mu.Unlock()

	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// startLocked runs e's informer. Call with s.mu held, after Start.
func (s *informerSet) startLocked(e *entry) {
	if s.stopped || e.removed {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel = cancel
	s.wg.Go(func() {
		defer cancel()
		e.inf.run(ctx)
	})
}

// WaitForCacheSync waits until Start was called and every informer created
// so far has synced, or ctx is done; it reports whether they synced.
func (s *informerSet) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-s.startWait:
	case <-ctx.Done():
		return false
	}
	s.mu.RLock()
	entries := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.RUnlock()
	for _, e := range entries {
		select {
		case <-e.inf.shared.HasSyncedChecker().Done():
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// entryFor returns the informer for key, creating it (and running it,
// once the set is started) unless failOnMissing. With block, it waits for
// a started informer to sync. started reports whether Start was called.
func (s *informerSet) entryFor(ctx context.Context, key entryKey, failOnMissing, block bool) (started bool, e *entry, err error) {
	s.mu.RLock()
	e, ok := s.entries[key]
	started = s.started
	s.mu.RUnlock()
	created := false
	if !ok {
		started, e, created, err = s.addEntry(key, failOnMissing)
		if err != nil {
			return started, nil, err
		}
	}
	// An informer this call created has not synced when the read began,
	// even if it has by now (a loaded machine may pause this goroutine
	// for the whole list): the read waits for it like any other.
	if block && started && (created || !e.inf.shared.HasSynced()) {
		// A context already done fails the read even if the informer
		// syncs meanwhile: select would pick either case at random.
		if ctx.Err() == nil {
			select {
			case <-e.inf.shared.HasSyncedChecker().Done():
				return started, e, nil
			case <-ctx.Done():
			}
		}
		return started, nil, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %v informer to sync", key.gvk), 0)
	}
	return started, e, nil
}

// addEntry returns the informer for key, creating it unless failOnMissing;
// created reports whether this call created it.
func (s *informerSet) addEntry(key entryKey, failOnMissing bool) (started bool, e *entry, created bool, err error) {
	gvk := key.gvk
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok {
		if failOnMissing {
			s.mu.Unlock()
			return false, nil, false, &cache.ErrResourceNotCached{GVK: gvk}
		}
		e, err = s.newEntry(key)
		if err != nil {
			s.mu.Unlock()
			return false, nil, false, err
		}
		s.entries[key] = e
		created = true
		if s.started {
			s.startLocked(e)
		}
	}
	started = s.started
	s.mu.Unlock()
	return started, e, created, nil
}

// newEntry creates the informer for key. Call with s.mu held.
func (s *informerSet) newEntry(key entryKey) (*entry, error) {
	mapping, err := s.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return nil, err
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	var proto runtime.Object
	switch key.form {
	case formUnstructured:
		proto = &unstructured.Unstructured{}
	case formMetadata:
		proto = &metav1.PartialObjectMetadata{}
	default:
		if proto, err = s.scheme.New(key.gvk); err != nil {
			return nil, err
		}
	}
	itemType := reflect.TypeOf(proto)

	disableDeepCopy := ptr.Deref(s.config.UnsafeDisableDeepCopy, false)
	lean := s.lean.resolve(key.gvk, disableDeepCopy)
	req := listWatchRequest{
		gvk:        key.gvk,
		form:       key.form,
		resource:   mapping.Resource.Resource,
		selector:   selectors{label: s.config.LabelSelector, field: s.config.FieldSelector},
		dropFields: lean.dropFields,
		// A transform may write into what it is given: its input must not
		// share sub-objects (the informer's pass deduplicates its output).
		shareSubObjects: lean.deduplicate && s.config.Transform == nil,
	}
	if namespaced {
		req.namespace = restrictNamespaceBySelector(s.namespace, s.config.FieldSelector)
	}
	src, err := s.newSource(req)
	if err != nil {
		return nil, err
	}
	name := mapping.Resource.GroupResource().String()
	if key.form != formTyped {
		name += " (" + key.form.String() + ")"
	}
	if s.namespace != "" {
		name += " in " + s.namespace
	}
	inf, err := newCoreInformer(src, informerSettings{
		snapshot:          s.snapshotOptions(key.form, proto, req),
		name:              name,
		resource:          mapping.Resource,
		resync:            jitter(ptr.Deref(s.config.SyncPeriod, defaultSyncPeriod)),
		transform:         s.config.Transform,
		watchErrorHandler: s.watchErrorHandler,
		deduplicate:       lean.deduplicate,
		detectMutations:   s.lean.detectMutations,
	})
	if err != nil {
		return nil, err
	}
	return &entry{
		key:             key,
		inf:             inf,
		namespaced:      namespaced,
		itemType:        itemType,
		copier:          newObjectCopier(itemType),
		disableDeepCopy: disableDeepCopy,
		fields:          map[string]client.IndexerFunc{},
	}, nil
}

// objectCopier makes the deep copies of cached objects of one type that
// reads return.
type objectCopier struct {
	itemType reflect.Type
	// deepCopyInto is the type's DeepCopyInto method, if it has one taking
	// its own type; invalid otherwise.
	deepCopyInto reflect.Value
}

// newObjectCopier returns the copier of objects of itemType, a pointer
// type. Types without their own DeepCopyInto (hand-written types with
// DeepCopyObject alone; a DeepCopyInto promoted from an embedded field,
// such as ObjectMeta's, copies only that field) are copied as
// controller-runtime's cache copies every object, by DeepCopyObject.
func newObjectCopier(itemType reflect.Type) objectCopier {
	c := objectCopier{itemType: itemType}
	if method, ok := itemType.MethodByName("DeepCopyInto"); ok && method.Type.NumIn() == 2 && method.Type.In(1) == itemType {
		c.deepCopyInto = method.Func
	}
	return c
}

// copy makes dst, a new object of the type, a deep copy of src, one of
// the type: by DeepCopyInto, straight into dst, or by DeepCopyObject, whose
// copy's value is then assigned to dst's (an allocation more). args, of
// length 2, is the scratch space of the call, reused.
func (c objectCopier) copy(src, dst reflect.Value, args []reflect.Value) error {
	if c.deepCopyInto.IsValid() {
		args[0], args[1] = src, dst
		c.deepCopyInto.Call(args)
		return nil
	}
	cp := reflect.ValueOf(src.Interface().(runtime.Object).DeepCopyObject())
	if !cp.IsValid() || cp.Type() != c.itemType || cp.IsNil() {
		return fmt.Errorf("%v.DeepCopyObject returned %v, not a %v", c.itemType, cp, c.itemType)
	}
	dst.Elem().Set(cp.Elem())
	return nil
}

// snapshotOptions returns the snapshot settings of the informer of req,
// whose objects are of proto's type: none for the metadata form, whose
// objects' kind their encoding does not hold.
func (s *informerSet) snapshotOptions(form objectForm, proto runtime.Object, req listWatchRequest) snapshotSettings {
	o := s.lean.snapshot
	if o.Dir == "" || form == formMetadata {
		return snapshotSettings{}
	}
	var label, field string
	if req.selector.label != nil {
		label = req.selector.label.String()
	}
	if req.selector.field != nil {
		field = req.selector.field.String()
	}
	return snapshotSettings{options: o, example: proto,
		scopeID: fmt.Sprintf("crcache %s namespace=%q labels=%q fields=%q dropFields=%q", form, req.namespace, label, field, req.dropFields)}
}

// jitter spreads resyncs of informers created together over ±10% of
// period, as controller-runtime does.
func jitter(period time.Duration) time.Duration {
	return time.Duration(float64(period) * (0.9 + rand.Float64()/5))
}

// restrictNamespaceBySelector narrows an all-namespaces informer to the
// namespace its field selector requires, if any.
func restrictNamespaceBySelector(namespace string, field fields.Selector) string {
	if namespace != "" || field == nil {
		return namespace
	}
	if ns, ok := field.RequiresExactMatch("metadata.namespace"); ok {
		return ns
	}
	return ""
}

// GetInformer returns the informer for obj's kind, in obj's form, creating
// it if needed; once the cache is started it waits for the informer to
// sync unless told not to.
func (s *informerSet) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return nil, err
	}
	_, e, err := s.entryFor(ctx, entryKey{gvk: gvk, form: formOf(obj)}, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.inf.shared, nil
}

// GetInformerForKind returns the typed informer for gvk, as GetInformer.
func (s *informerSet) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := s.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	_, e, err := s.entryFor(ctx, entryKey{gvk: gvk, form: formOf(obj)}, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.inf.shared, nil
}

// blockUntilSynced reads cache.BlockUntilSynced from opts; the default is
// to block.
func blockUntilSynced(opts []cache.InformerGetOption) bool {
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	return ptr.Deref(o.BlockUntilSynced, true)
}

// RemoveInformer stops the informer for obj's kind and form and forgets it.
// Handlers registered on it stop receiving events.
func (s *informerSet) RemoveInformer(_ context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	key := entryKey{gvk: gvk, form: formOf(obj)}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil
	}
	e.removed = true
	if e.cancel != nil {
		e.cancel()
	}
	delete(s.entries, key)
	return nil
}

// IndexField adds an index over field to the informer for obj's kind and
// form. The index serves field selectors on field in List, with namespaced
// values as controller-runtime's cache stores them.
func (s *informerSet) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	_, e, err := s.entryFor(ctx, entryKey{gvk: gvk, form: formOf(obj)}, false, false)
	if err != nil {
		return err
	}
	return e.indexField(field, extractValue)
}

// NeedLeaderElection reports that the cache runs without the leader lock.
func (s *informerSet) NeedLeaderElection() bool { return false }
