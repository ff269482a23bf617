package informer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// fakeAPIServer is a small in-process Kubernetes API server on 127.0.0.1
// for the tests and examples of the factory and the REST ListerWatchers. It
// serves list and watch (with label and field selectors and streamed initial
// events) of the collections it is told about, answering in protobuf or JSON
// as the request's Accept header asks, and metadata-only
// (as=PartialObjectMetadata[List]) like the real server. Watch streams are
// framed as the real server frames them, and a watch from a resource version
// first gets the changes made since, even before the watch was open, so that
// a test need not wait for a watch before it writes. It records every
// request.
type fakeAPIServer struct {
	server *httptest.Server
	scheme *k8sruntime.Scheme
	codecs serializer.CodecFactory
	stop   chan struct{}

	mu              sync.Mutex
	clusterUID      string
	rejectWatchList bool
	forbidden       map[schema.GroupVersionResource]bool
	rv              int
	collections     map[schema.GroupVersionResource]*fakeCollection
	requests        []fakeRequest
}

// fakeCollection is one served resource.
type fakeCollection struct {
	kind     schema.GroupVersionKind
	protobuf bool // whether the server may answer with protobuf, as for built-ins
	objects  map[string]k8sruntime.Object
	watchers map[*fakeWatch]struct{}
	// history holds every change, in order, so that a watch from a
	// resource version gets the changes made after it even if they were
	// made before the watch was open, as from the real server's watch cache.
	history []watch.Event
	// historyLimit, if not 0, bounds history as the real server's watch
	// cache is bounded (see LimitHistory); compacted is the resource
	// version of the latest change dropped from it.
	historyLimit, compacted int
}

// fakeWatch is one open watch request.
type fakeWatch struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	events    chan watch.Event
}

// fakeRequest is what the server recorded of one request.
type fakeRequest struct {
	Path        string
	Watch       bool
	Query       string // selected query parameters: labelSelector, fieldSelector
	Accept      string
	Code        int    // HTTP status of the response
	ContentType string // of the response
}

// newFakeAPIServer starts a server that knows the built-in types and those
// added by addTypes; it stops when the test ends.
func newFakeAPIServer(tb testing.TB, addTypes ...func(*k8sruntime.Scheme) error) *fakeAPIServer {
	tb.Helper()
	s, err := startFakeAPIServer(addTypes...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// startFakeAPIServer starts a server; the caller must Close it.
func startFakeAPIServer(addTypes ...func(*k8sruntime.Scheme) error) (*fakeAPIServer, error) {
	scheme := k8sruntime.NewScheme()
	adders := append([]func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, metav1.AddMetaToScheme}, addTypes...)
	for _, add := range adders {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("fake API server scheme: %w", err)
		}
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	s := &fakeAPIServer{
		scheme:      scheme,
		codecs:      serializer.NewCodecFactory(scheme),
		stop:        make(chan struct{}),
		rv:          100,
		collections: map[schema.GroupVersionResource]*fakeCollection{},
	}
	s.server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s, nil
}

// SetClusterUID makes the server answer a GET of the kube-system namespace
// with one of that UID (a cluster's identity); "" (the default) answers
// 404, as to a client that may not read it.
func (s *fakeAPIServer) SetClusterUID(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusterUID = uid
}

// serveClusterUID answers a GET of the kube-system namespace, if the server
// has a cluster UID (SetClusterUID).
func (s *fakeAPIServer) serveClusterUID(rw http.ResponseWriter, req *http.Request) bool {
	s.mu.Lock()
	uid := s.clusterUID
	s.mu.Unlock()
	if uid == "" || req.Method != http.MethodGet || req.URL.Path != "/api/v1/namespaces/kube-system" {
		return false
	}
	s.record(fakeRequest{Path: req.URL.Path, Accept: req.Header.Get("Accept"), Code: http.StatusOK, ContentType: k8sruntime.ContentTypeJSON})
	rw.Header().Set("Content-Type", k8sruntime.ContentTypeJSON)
	_, _ = fmt.Fprintf(rw, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":%q}}`, uid)
	return true
}

// Close ends every watch and stops the server.
func (s *fakeAPIServer) Close() {
	close(s.stop)
	s.server.Close()
}

// Config returns a client configuration for the server.
func (s *fakeAPIServer) Config() *rest.Config {
	return &rest.Config{Host: s.server.URL}
}

// Serve makes the server answer for resource, whose objects are of kind.
// protobuf says whether it may answer with protobuf (true for built-ins).
func (s *fakeAPIServer) Serve(resource schema.GroupVersionResource, kind schema.GroupVersionKind, protobuf bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collections[resource] = &fakeCollection{
		kind: kind, protobuf: protobuf,
		objects:  map[string]k8sruntime.Object{},
		watchers: map[*fakeWatch]struct{}{},
	}
}

// Create stores obj with the next resource version and sends ADDED to the
// matching watches. It returns the stored object.
func (s *fakeAPIServer) Create(resource schema.GroupVersionResource, obj k8sruntime.Object) k8sruntime.Object {
	return s.write(resource, watch.Added, obj)
}

// Update replaces obj with the next resource version and sends MODIFIED.
func (s *fakeAPIServer) Update(resource schema.GroupVersionResource, obj k8sruntime.Object) k8sruntime.Object {
	return s.write(resource, watch.Modified, obj)
}

// Delete removes obj and sends DELETED with the next resource version.
func (s *fakeAPIServer) Delete(resource schema.GroupVersionResource, obj k8sruntime.Object) k8sruntime.Object {
	return s.write(resource, watch.Deleted, obj)
}

func (s *fakeAPIServer) write(resource schema.GroupVersionResource, typ watch.EventType, obj k8sruntime.Object) k8sruntime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.collections[resource]
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if c == nil || err != nil {
		panic(fmt.Sprintf("fake API server: cannot write %T to %v: %v", obj, resource, err))
	}
	s.rv++
	m.SetResourceVersion(strconv.Itoa(s.rv))
	key := m.GetNamespace() + "/" + m.GetName()
	if typ == watch.Deleted {
		delete(c.objects, key)
	} else {
		c.objects[key] = obj
	}
	c.history = append(c.history, watch.Event{Type: typ, Object: obj.DeepCopyObject()})
	if c.historyLimit > 0 && len(c.history) > c.historyLimit {
		drop := len(c.history) - c.historyLimit/2
		m, _ := meta.Accessor(c.history[drop-1].Object)
		c.compacted, _ = strconv.Atoi(m.GetResourceVersion())
		// A copy, so that the dropped events are freed.
		c.history = slices.Clone(c.history[drop:])
	}
	for w := range c.watchers {
		if w.matches(m) {
			// A copy: encoding sets apiVersion and kind for a moment.
			w.events <- watch.Event{Type: typ, Object: obj.DeepCopyObject()}
		}
	}
	return obj.DeepCopyObject()
}

// LimitHistory makes the server keep between n/2 and n of the latest
// changes of resource, as the real server's watch cache keeps a window of
// them, instead of every change: a long test then holds no more than a
// window. A watch from a resource version older than the window gets "410
// Gone" (an Error event), as from the real server.
func (s *fakeAPIServer) LimitHistory(resource schema.GroupVersionResource, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collections[resource].historyLimit = n
}

// RejectStreamingLists makes the server refuse watches with
// sendInitialEvents=true, as a server without the WatchList feature does, so
// that clients fall back to list+watch.
func (s *fakeAPIServer) RejectStreamingLists() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectWatchList = true
}

// Forbid makes the server answer every request for resource with "403
// Forbidden", as the real server does for a user RBAC does not allow.
func (s *fakeAPIServer) Forbid(resource schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forbidden == nil {
		s.forbidden = map[schema.GroupVersionResource]bool{}
	}
	s.forbidden[resource] = true
}

// SendError sends an Error event carrying status to every watch of
// resource, as the server does when a watch cannot go on (410 Gone, ...).
func (s *fakeAPIServer) SendError(resource schema.GroupVersionResource, status *metav1.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.collections[resource].watchers {
		w.events <- watch.Event{Type: watch.Error, Object: status.DeepCopy()}
	}
}

// Requests returns the recorded requests, in order.
func (s *fakeAPIServer) Requests() []fakeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// WaitForWatches waits until resource has n open watches.
func (s *fakeAPIServer) WaitForWatches(tb testing.TB, resource schema.GroupVersionResource, n int) {
	tb.Helper()
	informer.Eventually(tb, fmt.Sprintf("%d watches of %v", n, resource), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.collections[resource].watchers) == n
	})
}

// handle serves GET /api/v1[/namespaces/NS]/RESOURCE and
// GET /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE.
func (s *fakeAPIServer) handle(rw http.ResponseWriter, req *http.Request) {
	if s.serveClusterUID(rw, req) {
		return
	}
	resource, namespace, ok := parseCollectionPath(req.URL.Path)
	query := req.URL.Query()
	isWatch := query.Get("watch") == "true" || query.Get("watch") == "1"
	record := fakeRequest{Path: req.URL.Path, Watch: isWatch, Query: selectedQuery(query), Accept: req.Header.Get("Accept")}
	fail := func(code int, reason metav1.StatusReason, message string) {
		record.Code, record.ContentType = code, k8sruntime.ContentTypeJSON
		s.record(record)
		s.writeStatus(rw, code, reason, message)
	}
	s.mu.Lock()
	c := s.collections[resource]
	rejectWatchList := s.rejectWatchList
	forbidden := s.forbidden[resource]
	s.mu.Unlock()
	if !ok || c == nil || req.Method != http.MethodGet {
		fail(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	if forbidden {
		verb := "list"
		if isWatch {
			verb = "watch"
		}
		fail(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("%s is forbidden: User \"test\" cannot %s resource %q in API group %q", resource.Resource, verb, resource.Resource, resource.Group))
		return
	}
	mediaType, asMetadata, ok := negotiate(record.Accept, c.protobuf)
	if !ok {
		fail(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "no acceptable media type")
		return
	}
	if isWatch && rejectWatchList && query.Get("sendInitialEvents") == "true" {
		fail(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
		return
	}
	filter, err := newFakeWatch(namespace, query)
	if err != nil {
		fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	info, _ := k8sruntime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), mediaType)
	gv := c.kind.GroupVersion()
	if asMetadata {
		gv = metav1.SchemeGroupVersion
	}
	encoder := s.codecs.EncoderForVersion(info.Serializer, gv)
	record.Code, record.ContentType = http.StatusOK, mediaType
	if isWatch && mediaType == k8sruntime.ContentTypeProtobuf {
		record.ContentType += ";stream=watch"
	}
	s.record(record)
	rw.Header().Set("Content-Type", record.ContentType)
	if !isWatch {
		s.serveList(rw, c, filter, asMetadata, encoder)
		return
	}
	s.serveWatch(rw, req, c, filter, query.Get("sendInitialEvents") == "true", query.Get("resourceVersion"), asMetadata, info, encoder)
}

func (s *fakeAPIServer) record(r fakeRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// writeStatus answers with a failure Status in JSON, as the API server does.
func (s *fakeAPIServer) writeStatus(rw http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	info, _ := k8sruntime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), k8sruntime.ContentTypeJSON)
	status := &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message}
	rw.Header().Set("Content-Type", k8sruntime.ContentTypeJSON)
	rw.WriteHeader(code)
	_ = s.codecs.EncoderForVersion(info.Serializer, metav1.Unversioned).Encode(status, rw)
}

func (s *fakeAPIServer) serveList(rw http.ResponseWriter, c *fakeCollection, filter *fakeWatch, asMetadata bool, encoder k8sruntime.Encoder) {
	s.mu.Lock()
	items := c.matching(filter)
	rv := strconv.Itoa(s.rv)
	s.mu.Unlock()
	var list k8sruntime.Object
	if asMetadata {
		partial := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		for _, obj := range items {
			// Items carry apiVersion and kind, as those of custom resources
			// do; clients must not depend on either.
			item := toPartial(obj)
			item.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}
			partial.Items = append(partial.Items, *item)
		}
		list = partial
	} else {
		typed, err := s.scheme.New(c.kind.GroupVersion().WithKind(c.kind.Kind + "List"))
		if err == nil {
			err = meta.SetList(typed, items)
		}
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		listMeta, _ := meta.ListAccessor(typed)
		listMeta.SetResourceVersion(rv)
		list = typed
	}
	if err := encoder.Encode(list, rw); err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
	}
}

// serveWatch streams the changes w selects. With initialEvents it first
// sends the current objects and the bookmark that ends them; otherwise,
// from a resource version other than "" and "0", it first sends the
// changes made after that version.
func (s *fakeAPIServer) serveWatch(rw http.ResponseWriter, req *http.Request, c *fakeCollection, w *fakeWatch, initialEvents bool, resourceVersion string, asMetadata bool, info k8sruntime.SerializerInfo, encoder k8sruntime.Encoder) {
	s.mu.Lock()
	var initial []k8sruntime.Object
	var missed []watch.Event
	if initialEvents {
		initial = c.matching(w)
	} else {
		var expired bool
		if missed, expired = c.changesAfter(w, resourceVersion); expired {
			status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%d)", resourceVersion, c.compacted+1)).ErrStatus
			missed = []watch.Event{{Type: watch.Error, Object: &status}}
		}
	}
	rv := strconv.Itoa(s.rv)
	c.watchers[w] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(c.watchers, w)
		s.mu.Unlock()
	}()

	rw.WriteHeader(http.StatusOK)
	flusher, _ := rw.(http.Flusher)
	flusher.Flush()
	frames := info.StreamSerializer.Framer.NewFrameWriter(rw)
	send := func(ev watch.Event) bool {
		if asMetadata {
			ev.Object = toPartial(ev.Object)
		}
		raw, err := k8sruntime.Encode(encoder, ev.Object)
		if err == nil {
			err = info.StreamSerializer.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: k8sruntime.RawExtension{Raw: raw}}, frames)
		}
		flusher.Flush()
		return err == nil
	}
	for _, obj := range initial {
		if !send(watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	for _, ev := range missed {
		if !send(ev) || ev.Type == watch.Error {
			return
		}
	}
	if initialEvents {
		bookmark, _ := s.scheme.New(c.kind)
		m, _ := meta.Accessor(bookmark)
		m.SetResourceVersion(rv)
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		if !send(watch.Event{Type: watch.Bookmark, Object: bookmark}) {
			return
		}
	}
	for {
		select {
		case ev := <-w.events:
			if !send(ev) {
				return
			}
		case <-req.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
}
