package crcache

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informer/crcache/internal/pods"
)

var (
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeGVK      = corev1.SchemeGroupVersion.WithKind("Node")
	configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")
)

// fakeCluster is an in-memory API server for the cache's informers: it
// holds typed objects by kind and serves them, filtered by namespace and by
// label and field (metadata.name, metadata.namespace) selectors, in the
// form each informer asks for, to client-go ListerWatchers that both this
// package's cache and controller-runtime's can run on. Writes reach every
// open watch they match. Like an API server, a watch from a list's
// resourceVersion first replays the writes made after that list: a
// reflector opens its watch only after its list returns, and a write in
// between must not be lost.
type fakeCluster struct {
	mu      sync.Mutex
	rv      int
	log     []fakeEvent // every write, in resourceVersion order
	objects map[schema.GroupVersionKind]map[client.ObjectKey]client.Object
	sources []*fakeSource
}

// fakeEvent is one write in the cluster's log; obj's resourceVersion is
// the write's.
type fakeEvent struct {
	typ watch.EventType
	gvk schema.GroupVersionKind
	rv  int
	obj client.Object
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{objects: map[schema.GroupVersionKind]map[client.ObjectKey]client.Object{}}
}

// fakeSource is one informer's client-go ListerWatcher on a fakeCluster.
type fakeSource struct {
	cluster *fakeCluster
	gvk     schema.GroupVersionKind
	form    objectForm
	ns      string // "" for all
	// selector is applied to every request, as the informer's selectors
	// are by the cache's own ListerWatchers.
	selector selectors
	// dropFields are the paths the cache asked to drop (a fake drops
	// nothing).
	dropFields []string

	mu       sync.Mutex
	requests []metav1.ListOptions
	watchers []*fakeWatcher
}

// fakeWatcher is an open watch with the selectors it was opened with.
type fakeWatcher struct {
	*watch.RaceFreeFakeWatcher
	label labels.Selector
	field fields.Selector
}

var (
	_ toolscache.ListerWatcherWithContext = (*fakeSource)(nil)
	_ toolscache.ListerWatcher            = (*fakeSource)(nil)
)

// gvkOf returns the kind of a typed object.
func gvkOf(obj runtime.Object) schema.GroupVersionKind {
	gvk, err := apiutil.GVKForObject(obj, scheme.Scheme)
	if err != nil {
		panic(err)
	}
	return gvk
}

// Create stores obj (with a new resource version) before or after
// informers started, and sends it to the matching watches.
func (c *fakeCluster) Create(obj client.Object) { c.write(watch.Added, obj) }

// Update replaces obj.
func (c *fakeCluster) Update(obj client.Object) { c.write(watch.Modified, obj) }

// Delete removes obj.
func (c *fakeCluster) Delete(obj client.Object) { c.write(watch.Deleted, obj) }

func (c *fakeCluster) write(typ watch.EventType, obj client.Object) {
	gvk := gvkOf(obj)
	// c.mu is held through delivery so that a watch being opened sees each
	// write exactly once: in its replay or on its channel.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv++
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetResourceVersion(fmt.Sprint(c.rv))
	byKey := c.objects[gvk]
	if byKey == nil {
		byKey = map[client.ObjectKey]client.Object{}
		c.objects[gvk] = byKey
	}
	if typ == watch.Deleted {
		delete(byKey, client.ObjectKeyFromObject(obj))
	} else {
		byKey[client.ObjectKeyFromObject(obj)] = obj
	}
	c.log = append(c.log, fakeEvent{typ: typ, gvk: gvk, rv: c.rv, obj: obj})
	for _, s := range c.sources {
		if !s.serves(gvk, obj) {
			continue
		}
		s.mu.Lock()
		for _, w := range s.watchers {
			if matches(obj, w.label, w.field) {
				w.Action(typ, s.convert(obj))
			}
		}
		s.mu.Unlock()
	}
}

// serves reports whether s lists and watches obj of kind gvk.
func (s *fakeSource) serves(gvk schema.GroupVersionKind, obj client.Object) bool {
	return s.gvk == gvk && (s.ns == "" || s.ns == obj.GetNamespace())
}

// CreateAll stores objs without events, for benchmarks before informers
// start. It keeps the objects themselves, shared by every informer.
func (c *fakeCluster) CreateAll(objs ...client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, obj := range objs {
		gvk := gvkOf(obj)
		if c.objects[gvk] == nil {
			c.objects[gvk] = map[client.ObjectKey]client.Object{}
		}
		c.objects[gvk][client.ObjectKeyFromObject(obj)] = obj
	}
}

// newSource returns the ListerWatcher of req, for newCache.
func (c *fakeCluster) newSource(req listWatchRequest) (source, error) {
	s := c.source(req.gvk, req.form, req.namespace)
	s.selector = req.selector
	s.dropFields = req.dropFields
	return sourceFromListWatch(s), nil
}

// source registers a new source.
func (c *fakeCluster) source(gvk schema.GroupVersionKind, form objectForm, ns string) *fakeSource {
	s := &fakeSource{cluster: c, gvk: gvk, form: form, ns: ns}
	c.mu.Lock()
	c.sources = append(c.sources, s)
	c.mu.Unlock()
	return s
}

// Sources returns the sources made for gvk.
func (c *fakeCluster) Sources(gvk schema.GroupVersionKind) []*fakeSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*fakeSource
	for _, s := range c.sources {
		if s.gvk == gvk {
			out = append(out, s)
		}
	}
	return out
}

// IsWatchListSemanticsUnSupported makes client-go's reflector (and ours)
// list, then watch.
func (s *fakeSource) IsWatchListSemanticsUnSupported() bool { return true }

// ListWithContext lists the matching objects.
func (s *fakeSource) ListWithContext(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.selector.applyTo(&opts)
	ls, fs, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.requests = append(s.requests, opts)
	s.mu.Unlock()
	c := s.cluster
	c.mu.Lock()
	var items []runtime.Object
	for _, obj := range c.objects[s.gvk] {
		if (s.ns == "" || obj.GetNamespace() == s.ns) && matches(obj, ls, fs) {
			items = append(items, s.convert(obj))
		}
	}
	rv := fmt.Sprint(c.rv)
	c.mu.Unlock()
	var list runtime.Object
	switch s.form {
	case formUnstructured:
		list = &unstructured.UnstructuredList{}
	case formMetadata:
		list = &metav1.PartialObjectMetadataList{}
	default:
		l, err := scheme.Scheme.New(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
		if err != nil {
			return nil, err
		}
		list = l
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	if la, err := meta.ListAccessor(list); err == nil {
		la.SetResourceVersion(rv)
	}
	return list, nil
}

// List is ListWithContext for client-go's informers.
func (s *fakeSource) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext for client-go's informers.
func (s *fakeSource) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

// WatchWithContext opens a watch, which lasts until its consumer stops it.
func (s *fakeSource) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.selector.applyTo(&opts)
	ls, fs, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	// "" and "0" mean "from now", as on an API server.
	from := 0
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		if from, err = strconv.Atoi(opts.ResourceVersion); err != nil {
			return nil, fmt.Errorf("fake watch: resourceVersion %q: %w", opts.ResourceVersion, err)
		}
	}
	w := &fakeWatcher{RaceFreeFakeWatcher: watch.NewRaceFreeFake(), label: ls, field: fs}
	c := s.cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	if from > 0 {
		for _, e := range c.log {
			if e.rv > from && s.serves(e.gvk, e.obj) && matches(e.obj, ls, fs) {
				w.Action(e.typ, s.convert(e.obj))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, opts)
	s.watchers = slices.DeleteFunc(s.watchers, func(w *fakeWatcher) bool { return w.IsStopped() })
	s.watchers = append(s.watchers, w)
	return w, nil
}

// Requests returns the options of every list and watch request.
func (s *fakeSource) Requests() []metav1.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metav1.ListOptions(nil), s.requests...)
}

// convert returns obj in the source's form, never obj itself unless the
// form is typed (then the stored object is shared, as benchmarks need).
func (s *fakeSource) convert(obj client.Object) runtime.Object {
	switch s.form {
	case formUnstructured:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			panic(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(s.gvk)
		return u
	case formMetadata:
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: s.gvk.GroupVersion().String(), Kind: s.gvk.Kind},
			ObjectMeta: *obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopy(),
		}
	default:
		// A copy per response, as a decoding client's: this library's
		// informers intern what they receive in place.
		return obj.DeepCopyObject()
	}
}

func parseSelectors(opts metav1.ListOptions) (labels.Selector, fields.Selector, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, nil, err
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, nil, err
	}
	return ls, fs, nil
}

func matches(obj client.Object, ls labels.Selector, fs fields.Selector) bool {
	return ls.Matches(labels.Set(obj.GetLabels())) &&
		fs.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

// testMapper knows pods and config maps (namespaced) and nodes.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(podGVK, meta.RESTScopeNamespace)
	m.Add(configMapGVK, meta.RESTScopeNamespace)
	m.Add(nodeGVK, meta.RESTScopeRoot)
	return m
}

// testOptions are cache options that need no server.
func testOptions(tb testing.TB) cache.Options {
	httpClient, err := rest.HTTPClientFor(fakeConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return cache.Options{HTTPClient: httpClient, Mapper: testMapper(), Scheme: scheme.Scheme}
}

// fakeConfig points at nothing: every request goes to a fakeCluster.
func fakeConfig() *rest.Config {
	return &rest.Config{Host: "http://127.0.0.1:1", Transport: http.DefaultTransport}
}

// newTestCache returns this package's cache over cluster, started; it is
// stopped (and its goroutines waited for) when the test ends.
func newTestCache(tb testing.TB, cluster *fakeCluster, opts cache.Options) cache.Cache {
	tb.Helper()
	return newTestCacheWith(tb, cluster, opts, Options{})
}

// newTestCacheWith is newTestCache with crcache's own options.
func newTestCacheWith(tb testing.TB, cluster *fakeCluster, opts cache.Options, lean Options) cache.Cache {
	tb.Helper()
	c, err := newCache(fakeConfig(), opts, lean, cluster.newSource)
	if err != nil {
		tb.Fatal(err)
	}
	startCache(tb, c)
	if !c.WaitForCacheSync(tb.Context()) {
		tb.Fatal("cache not synced")
	}
	return c
}

// startCache starts c until the test ends, or until the stop it returns
// is called, and waits for its goroutine then.
func startCache(tb testing.TB, c cache.Cache) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Start: %v", err)
			}
		case <-time.After(time.Minute):
			tb.Errorf("Start did not return within a minute of its context's end")
		}
	})
	tb.Cleanup(stop)
	return stop
}

// newControllerRuntimeCache returns controller-runtime's own cache with its
// informers fed by cluster, started until the test ends.
func newControllerRuntimeCache(tb testing.TB, cluster *fakeCluster, opts cache.Options) cache.Cache {
	tb.Helper()
	opts.NewInformer = func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(cluster.source(gvkOf(obj), formOf(obj), ""), obj, resync, indexers)
	}
	c, err := cache.New(fakeConfig(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	startCache(tb, c)
	if !c.WaitForCacheSync(tb.Context()) {
		tb.Fatal("cache not synced")
	}
	return c
}

// TestFakeWatchReplaysFromListResourceVersion checks the fake's API-server
// behaviour the informer tests rely on: a write made between a list and the
// watch opened from its resourceVersion arrives on that watch, exactly once
// and in order, and a watch from "" starts from now.
func TestFakeWatchReplaysFromListResourceVersion(t *testing.T) {
	cluster := newFakeCluster()
	cluster.Create(pods.Pod(1, 10))
	s := cluster.source(podGVK, formTyped, "")
	list, err := s.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := list.(*corev1.PodList).ResourceVersion
	cluster.Create(pods.Pod(2, 10))
	cluster.Create(pods.Pod(3, 20)) // another namespace's pod, same source
	fromNow, err := s.WatchWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fromNow.Stop()
	w, err := s.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cluster.Delete(pods.Pod(2, 10))
	next := func(w watch.Interface) string {
		t.Helper()
		select {
		case e := <-w.ResultChan():
			return string(e.Type) + " " + e.Object.(*corev1.Pod).Name
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30s")
			return ""
		}
	}
	var got []string
	for range 3 {
		got = append(got, next(w))
	}
	want := []string{"ADDED pod-2", "ADDED pod-3", "DELETED pod-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch from the list's resourceVersion (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("DELETED pod-2", next(fromNow)); diff != "" {
		t.Errorf("watch from now (-want +got):\n%s", diff)
	}
	if _, err := s.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "x"}); err == nil {
		t.Error("a watch from resourceVersion \"x\" succeeded")
	}
}
