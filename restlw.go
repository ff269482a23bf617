package informer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/wire"
)

// ContentType is the wire format a ListerWatcher built from a *rest.Config
// asks the API server for.
type ContentType string

const (
	// ContentTypeDefault asks for protobuf for the built-in types of
	// k8s.io/api and for JSON for everything else: the API server serves
	// custom resources only as JSON.
	ContentTypeDefault ContentType = ""
	// ContentTypeJSON asks for JSON.
	ContentTypeJSON ContentType = "application/json"
	// ContentTypeProtobuf asks for protobuf and accepts JSON as a fallback.
	// The Go type (and its list type) must implement protobuf unmarshalling,
	// which the types of k8s.io/api do.
	ContentTypeProtobuf ContentType = "application/vnd.kubernetes.protobuf"
)

// RESTOptions configures the ListerWatchers built from a *rest.Config by
// [NewRESTListerWatcher], [NewMetadataListerWatcher] and
// [NewDynamicListerWatcher].
type RESTOptions struct {
	// Scheme knows the Go type to list and watch and its list type (for a
	// CRD type: register it together with metav1.AddToGroupVersion, as
	// generated scheme builders do). It is consulted first; client-go's
	// scheme of the built-in types (k8s.io/client-go/kubernetes/scheme) is
	// always consulted after it. Nil means only the built-in types.
	Scheme *runtime.Scheme
	// Resource is the resource to list and watch. The metadata and dynamic
	// ListerWatchers need it. For a typed one it may be left zero: it is
	// then guessed from T's kind by meta.UnsafeGuessKindToResource (lower
	// case, plural by the English rules of that function: "Pod" → "pods",
	// "Ingress" → "ingresses"), which is right for every built-in type but
	// not for a CRD whose plural is irregular; if set, its group and version
	// must be those of T's kind.
	Resource schema.GroupVersionResource
	// Namespace limits lists and watches to one namespace; empty means all
	// namespaces. Leave it empty for cluster-scoped resources.
	Namespace string
	// TweakListOptions, if set, changes the options of every list and watch
	// call, for example to set a label or field selector. It is called on a
	// copy owned by the call.
	TweakListOptions func(options *metav1.ListOptions)
	// ContentType selects the wire format of typed ListerWatchers. The
	// metadata ListerWatcher always asks for protobuf with a JSON fallback;
	// the dynamic one accepts only JSON (or the default).
	ContentType ContentType
	// HTTPClient is the client requests go through, shared by every
	// ListerWatcher given it. Nil means rest.HTTPClientFor(config).
	HTTPClient *http.Client
	// DropFields are fields dropped from every listed and watched object
	// before it is decoded, so that they cost neither memory nor decoding
	// time: they are absent (zero) in every object the ListerWatcher
	// returns, and so in an informer's cache and events. [ManagedFields]
	// is the usual one. A path names a field by JSON names separated by
	// dots ("status.conditions"); a list on the way stands for each of its
	// elements ("spec.containers.env"); a map field may end in one key in
	// brackets to drop only that entry
	// ("metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]").
	//
	// The paths are checked against the Go type (for unstructured objects,
	// only their syntax): an unknown field is an error of the constructor,
	// as is a malformed key in brackets ("metadata.annotations[a][b]") and
	// a field the informer cannot do without: kind, apiVersion, metadata,
	// metadata.name, metadata.namespace, metadata.resourceVersion and
	// metadata.uid. A field of a struct embedded inline (a Volume's
	// hostPath, of its VolumeSource) can be dropped from JSON only: with
	// protobuf it is an error too.
	// Fields are dropped from the bytes of protobuf and JSON responses, list
	// bodies and each watch event; events of type ERROR (a Status) and
	// BOOKMARK (metadata marking progress) are left alone.
	// A response or event that cannot be parsed is decoded whole instead,
	// logged, and counted in the informer's Stats().DropFieldsFailures. Do
	// not drop a field an index function, a Lister's label selector or a
	// client-side filter reads.
	DropFields []string
	// DecodingTable, if set, is the table the decoder interns in (see
	// [DecodingTable]), shared with the other ListerWatchers given it;
	// nil means a table of the ListerWatcher's own. A ListerWatcher whose
	// decoder interns nothing (client-go's JSON decoding of a type that has
	// no typed JSON decoder here) ignores it; one whose decoder cannot
	// share sub-objects rejects a table that does.
	DecodingTable *DecodingTable
}

// restParameterCodec encodes metav1.ListOptions as query parameters. It has
// its own scheme so that a user's scheme need not know the options types.
var restParameterCodec = newRESTParameterCodec()

var metaV1 = schema.GroupVersion{Version: "v1"}

func newRESTParameterCodec() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, metaV1)
	return runtime.NewParameterCodec(s)
}

// restListerWatcher lists and watches objects of a Go type T through a REST
// client (see NewRESTListerWatcher).
type restListerWatcher[T Object] struct {
	client    *rest.RESTClient
	scheme    *runtime.Scheme
	listKind  schema.GroupVersionKind
	resource  schema.GroupVersionResource
	namespace string
	tweak     func(*metav1.ListOptions)
	drop      *wire.DropFieldsTransport // nil without DropFields
	// decoders decode list bodies, as the REST client's would.
	decoders runtime.ClientNegotiator
	// interns, if not nil, holds the strings of the objects decoded from
	// protobuf (see wire.Unmarshal) or from JSON by the typed JSON decoder
	// (typed); an informer deduplicating them uses it too.
	interns *wire.InternTable
	// typed, if not nil, are the types the typed JSON decoder decodes
	// (internal/wire/json_typed_codec.go): T and its list, for JSON.
	typed *wire.TypedJSONTypes
	// sharesOnDecode tells whether the decoder of interns can also share
	// sub-objects (decodingWith a sharing table): the protobuf decoder's
	// and the typed JSON decoder's.
	sharesOnDecode bool
	// newClient makes a REST client decoding with codecs (see decodeWith
	// and Watch).
	newClient func(codecs runtime.NegotiatedSerializer) (*rest.RESTClient, error)
	// cachedItems is where protobuf list bodies hold their items' metadata,
	// for skipping those the cache holds (internal/wire/cacheditems.go); zero for JSON.
	cachedItems wire.CachedItemsLayout
	// cachedJSON tells whether JSON list bodies are laid out so that the
	// items the cache holds can be skipped (internal/wire/cacheditems_json.go).
	cachedJSON bool
	// listed is what it lists and from where (description).
	listed listedScope
}

var _ describedListerWatcher[*metav1.PartialObjectMetadata] = (*restListerWatcher[*metav1.PartialObjectMetadata])(nil)

// NewRESTListerWatcher returns a ListerWatcher for objects of a Go type T (a
// built-in type of k8s.io/api or a CRD type registered in opts.Scheme)
// through a REST client. Lists are decoded into the scheme's list type, and
// their items are returned without apiVersion and kind, like the objects of
// watch events; watch events carry objects of type T (a *metav1.Status for
// Error events) decoded by the scheme. It is safe for concurrent use.
//
// Pods, nodes, services, config maps, secrets, namespaces, endpoint slices,
// deployments, replica sets, stateful sets, daemon sets and jobs decoded
// from protobuf (the default for built-in types), and objects decoded from
// JSON (custom resources; see docs/semantics.md for the types decoded by
// apimachinery instead), have their strings interned on decode: a string equal to one of an earlier object's (label
// and annotation keys and values, images, env vars, node names…)
// is the same copy of its bytes, looked up instead of allocated. Go
// strings are immutable, so this changes no value and nothing a caller can
// observe; it saves memory and allocations (docs/semantics.md, "Strings
// interned on decode"). The table holds weak pointers, so strings no
// object holds any more are released.
//
// It fails with a clear error when T is not known to opts.Scheme nor to
// client-go's scheme, when that scheme has no list type for T's kind or lacks
// the meta types (Status), when opts.Resource is of another group or
// version, or when the content type is unknown or protobuf is asked for a
// type that cannot be decoded from protobuf. No request is made.
func NewRESTListerWatcher[T Object](config *rest.Config, opts RESTOptions) (ListerWatcher[T], error) {
	return newRESTListerWatcher[T](config, opts)
}

// NewRESTListerWatcherOf is [NewRESTListerWatcher] for a Go type chosen at
// run time, for code that handles many types through one interface (as
// controller-runtime's client.Object): T may be an interface type, and
// example, a pointer to a struct implementing T (its value is not read),
// is the type listed and watched. Listed items and watched objects are of
// example's type, handed out as T. Everything else is as
// NewRESTListerWatcher: the same errors, interning on decode for the same
// types, and an informer over it with [InformerOptions].Deduplicate and no
// Transform shares sub-objects as it decodes. It fails if example is nil
// or not a pointer to a struct.
func NewRESTListerWatcherOf[T Object](config *rest.Config, opts RESTOptions, example T) (ListerWatcher[T], error) {
	typ := reflect.TypeOf(example)
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("list/watch %s: the example object must be a pointer to a struct, got %T", reflect.TypeFor[T](), example)
	}
	return newRESTListerWatcherOf[T](config, opts, typ)
}

func newRESTListerWatcher[T Object](config *rest.Config, opts RESTOptions) (*restListerWatcher[T], error) {
	return newRESTListerWatcherOf[T](config, opts, reflect.TypeFor[T]())
}

// newRESTListerWatcherOf builds the REST ListerWatcher of itemType, a type
// implementing T (T itself unless T is an interface type).
func newRESTListerWatcherOf[T Object](config *rest.Config, opts RESTOptions, itemType reflect.Type) (*restListerWatcher[T], error) {
	typeName := itemType.String()
	if config == nil {
		return nil, fmt.Errorf("list/watch %s: rest config is nil", typeName)
	}
	if err := validateNamespace(opts.Namespace); err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", typeName, err)
	}
	scheme, gvk, err := kindOfType[T](itemType, opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", typeName, err)
	}
	if !scheme.Recognizes(metav1.Unversioned.WithKind("Status")) {
		return nil, fmt.Errorf("list/watch %s: the scheme cannot decode the Status of watch errors: register the meta types with metav1.AddToGroupVersion(scheme, %#v)", typeName, gvk.GroupVersion())
	}
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	list, err := scheme.New(listKind)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: the scheme has no list type %s: %w", typeName, listKind, err)
	}
	if !meta.IsListType(list) {
		return nil, fmt.Errorf("list/watch %s: %T, registered as %s, has no Items field", typeName, list, listKind)
	}
	contentType, err := typedContentType(opts.ContentType, gvk, list)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", typeName, err)
	}
	resource := opts.Resource
	if resource.Empty() {
		resource, _ = meta.UnsafeGuessKindToResource(gvk)
	} else if resource.GroupVersion() != gvk.GroupVersion() || resource.Resource == "" {
		return nil, fmt.Errorf("list/watch %s: the resource %s is not of the group and version of the kind %s", typeName, resourcePath(resource), gvk)
	}
	httpClient, err := httpClientFor(config, opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", typeName, err)
	}
	listed := listedScopeOf(config, opts, resource, httpClient)
	drop, err := wire.NewDropFieldsTransport(opts.DropFields, itemType, reflect.TypeOf(list), contentType == ContentTypeProtobuf, resourcePath(resource))
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: DropFields: %w", typeName, err)
	}
	if drop != nil {
		httpClient = drop.Wrap(httpClient)
	}
	lw := &restListerWatcher[T]{
		scheme:    scheme,
		listKind:  listKind,
		resource:  resource,
		namespace: opts.Namespace,
		tweak:     opts.TweakListOptions,
		drop:      drop,
		listed:    listed,
	}
	var interns *wire.InternTable
	switch {
	case contentType == ContentTypeProtobuf && wire.DecodesInterned(reflect.New(itemType.Elem()).Interface()):
		lw.sharesOnDecode = true
	case contentType == ContentTypeJSON:
		lw.typed = wire.NewTypedJSONTypes(scheme, itemType, reflect.TypeOf(list))
		lw.sharesOnDecode = lw.typed != nil
	}
	if lw.sharesOnDecode {
		if interns, err = decodingTable(opts.DecodingTable, true); err != nil {
			return nil, fmt.Errorf("list/watch %s: %w", typeName, err)
		}
	}
	lw.newClient = func(codecs runtime.NegotiatedSerializer) (*rest.RESTClient, error) {
		return newTypedRESTClient(config, gvk.GroupVersion(), codecs, contentType, httpClient)
	}
	if err := lw.decodeWith(interns); err != nil {
		return nil, fmt.Errorf("list/watch %s: REST client: %w", typeName, err)
	}
	if contentType == ContentTypeProtobuf {
		lw.cachedItems = wire.CachedItemsLayoutOf(reflect.TypeOf(list), itemType)
	}
	// A protobuf client may get JSON too (its fallback).
	lw.cachedJSON = wire.JSONItemsLayout(reflect.TypeOf(list), itemType)
	return lw, nil
}

// decodeWith makes lw's REST client and list decoders decode with interns
// (see wire.NewRESTCodecs).
func (lw *restListerWatcher[T]) decodeWith(interns *wire.InternTable) error {
	// One set of codecs serves the client and the list decoders: they hold
	// no state of a request, and each set costs about 2 KB, per cluster of
	// a fleet (E6 (c)).
	codecs := wire.NewRESTCodecs(lw.scheme, interns, lw.typed)
	client, err := lw.newClient(codecs)
	if err != nil {
		return err
	}
	lw.client, lw.interns = client, interns
	lw.decoders = runtime.NewClientNegotiator(codecs, lw.listKind.GroupVersion())
	return nil
}

func (lw *restListerWatcher[T]) description() lwDescription {
	return lwDescription{interns: lw.interns, sharesOnDecode: lw.sharesOnDecode, drop: lw.drop, listed: lw.listed}
}

func (lw *restListerWatcher[T]) decodingWith(table *wire.InternTable) (ListerWatcher[T], error) {
	if err := checkDecodingWith(lw.description(), table); err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", lw.resource.GroupResource(), err)
	}
	copied := *lw
	if err := copied.decodeWith(table); err != nil {
		return nil, fmt.Errorf("list/watch %s: REST client: %w", lw.resource.GroupResource(), err)
	}
	return &copied, nil
}

// Resource returns the resource this ListerWatcher lists and watches.
func (lw *restListerWatcher[T]) Resource() schema.GroupVersionResource {
	return lw.resource
}

// List returns one page of objects. The items point into the decoded list
// and are owned by the caller, except those that the cache of the calling
// informer holds at the listed resource version: for them, not decoded, it
// returns the cached object (see cachedLookup).
//
// A protobuf list is decoded as it arrives, one item at a time (see
// wire.ReadProtobufList), so that no buffer of the page's size is made;
// another body is read into a buffer that later lists reuse (decoding
// copies what it keeps), so that a relist of an unchanged cache allocates
// almost nothing.
func (lw *restListerWatcher[T]) List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	stream, err := openList(ctx, func() *rest.Request {
		return lw.client.Get().
			NamespaceIfScoped(lw.namespace, lw.namespace != "").
			Resource(lw.resource.Resource).
			SpecificallyVersionedParams(&options, restParameterCodec, metaV1)
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	defer stream.Close()
	br := listReaders.Get().(*bufio.Reader)
	br.Reset(stream)
	defer func() {
		br.Reset(nil)
		listReaders.Put(br)
	}()
	lookup := cachedLookupFrom[T](ctx)
	if lookup != nil || lw.interns != nil {
		if result, ok, err := lw.readProtobufList(br, lookup); ok {
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
			}
			return result, nil
		}
	}
	body, err := readListBody(br)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	defer putListBody(body)
	list, slots, err := lw.decodeList(body.Bytes(), lookup)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	items := make([]T, 0, meta.LenList(list))
	err = meta.EachListItem(list, func(item runtime.Object) error {
		typed, ok := item.(T)
		if !ok {
			return fmt.Errorf("list item is a %T, not a %s", item, reflect.TypeFor[T]())
		}
		// The decoder drops apiVersion and kind of a watched object; drop
		// them from listed ones too (custom resources carry them in lists)
		// so that a cached object does not depend on how it arrived.
		typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		items = append(items, typed)
		return nil
	})
	if err == nil {
		items, err = wire.WithCachedItems(items, slots)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	return &ListResult[T]{Items: items, ResourceVersion: listMeta.GetResourceVersion(), Continue: listMeta.GetContinue(), ShardSelector: appliedShardSelector(list)}, nil
}

// readProtobufList decodes the protobuf list response in br item by item,
// each decoded as decodeList would decode it in the list, unless lookup
// finds it cached (wire.ReadProtobufList). It reports false, having read
// nothing, when br holds no protobuf list of lw's kind.
func (lw *restListerWatcher[T]) readProtobufList(br *bufio.Reader, lookup cachedLookup[T]) (*ListResult[T], bool, error) {
	list, err := lw.scheme.New(lw.listKind)
	if err != nil {
		return nil, false, nil
	}
	field, ok := reflect.TypeOf(list).Elem().FieldByName("Items")
	if !ok {
		return nil, false, nil
	}
	elem := field.Type.Elem()
	decode := func(b []byte) (T, error) {
		obj, ok := reflect.New(elem).Interface().(T)
		msg, isMsg := any(obj).(wire.ProtobufMessage)
		if !ok || !isMsg {
			var zero T
			return zero, fmt.Errorf("list item is a %s, not a protobuf %s", elem, reflect.TypeFor[T]())
		}
		if err := wire.Unmarshal(lw.interns, b, msg); err != nil {
			var zero T
			return zero, err
		}
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return obj, nil
	}
	var wireLookup wire.CachedLookup[T]
	if lookup != nil {
		wireLookup = lookup
	}
	items, metaBytes, ok, err := wire.ReadProtobufList(br, lw.listKind.Kind, lw.cachedItems, wireLookup, decode)
	if !ok || err != nil {
		return nil, ok, err
	}
	var listMeta metav1.ListMeta
	if err := listMeta.Unmarshal(metaBytes); err != nil {
		return nil, true, fmt.Errorf("%w: its metadata: %w", wire.ErrListStream, err)
	}
	if items == nil {
		items = []T{}
	}
	return &ListResult[T]{Items: items, ResourceVersion: listMeta.ResourceVersion, Continue: listMeta.Continue, ShardSelector: appliedShardSelector(&listMeta)}, true, nil
}

// listReaders holds the readers list responses are read through.
var listReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// maxListRetries and listRetryWait are how often and after how long
// readList tries a list again whose connection was reset or lost: as the
// REST client's Do retries a GET (its default maximum, and the Retry-After
// it makes up for such errors).
const (
	maxListRetries = 10
	listRetryWait  = time.Second
)

// readList sends the list request that newRequest builds and reads the
// response body into a buffer of listBodies, which the caller puts back
// with putListBody.
func readList(ctx context.Context, newRequest func() *rest.Request) (*bytes.Buffer, error) {
	stream, err := openList(ctx, newRequest)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	return readListBody(stream)
}

// readListBody reads a list response body from r into a buffer of
// listBodies, which the caller puts back with putListBody. On error the
// buffer is put back already.
func readListBody(r io.Reader) (*bytes.Buffer, error) {
	body := listBodies.Get().(*bytes.Buffer)
	body.Reset()
	if _, err := body.ReadFrom(r); err != nil {
		putListBody(body)
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	return body, nil
}

// openList sends the list request that newRequest builds and returns the
// response body, unread. The REST client's Stream, which hands over the
// body unread, does not retry a request whose connection was reset or
// lost, as its Do does for a GET: openList does.
func openList(ctx context.Context, newRequest func() *rest.Request) (io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		stream, err := newRequest().Stream(ctx)
		if err == nil {
			return stream, nil
		}
		if attempt == maxListRetries || !(utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)) {
			return nil, err
		}
		timer := time.NewTimer(listRetryWait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, err
		case <-timer.C:
		}
	}
}

// listBodies holds the buffers list responses are read into.
var listBodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledListBody is the largest buffer kept for later lists: a page of
// 500 production-like pods is 4.7 MiB; a list that is not paginated may be
// a hundred times that, and is let go rather than held until the pool
// drops it.
const maxPooledListBody = 32 << 20

// putListBody returns body to listBodies unless it is too large to keep.
func putListBody(body *bytes.Buffer) {
	if body.Cap() <= maxPooledListBody {
		listBodies.Put(body)
	}
}

// decodeList decodes a list response body into a new list object. The
// items that lookup (if not nil) finds cached are cut from body before
// decoding: slots then holds, for each item in list order,
// its cached object, or the zero T for one decoded into the list.
func (lw *restListerWatcher[T]) decodeList(body []byte, lookup cachedLookup[T]) (list runtime.Object, slots []T, err error) {
	list, err = lw.scheme.New(lw.listKind)
	if err != nil {
		return nil, nil, err
	}
	isProtobuf := bytes.HasPrefix(body, []byte(wire.ProtobufMagic))
	if msg, ok := wire.ProtobufListMessage(body, lw.listKind.Kind); ok {
		if lookup != nil {
			msg, slots = wire.CutCachedItems(msg, lw.cachedItems, lookup)
		}
		if slots != nil || lw.interns != nil {
			// What the protobuf decoder does with the list message.
			if err := wire.Unmarshal(lw.interns, msg, list.(wire.ProtobufMessage)); err != nil {
				return nil, nil, err
			}
			return list, slots, nil
		}
	}
	if !isProtobuf && lw.cachedJSON && lookup != nil {
		body, slots = wire.CutCachedJSONItems(body, lw.listKind.Kind, lookup)
	}
	mediaType := string(ContentTypeJSON)
	if isProtobuf {
		mediaType = string(ContentTypeProtobuf)
	}
	decoder, err := lw.decoders.Decoder(mediaType, nil)
	if err != nil {
		return nil, nil, err
	}
	out, _, err := decoder.Decode(body, nil, list)
	if err != nil {
		return nil, nil, err
	}
	// As the REST client's Result.Into: a Status in a successful response
	// is an error unless it says success.
	if status, ok := out.(*metav1.Status); ok && out != list && status.Status != metav1.StatusSuccess {
		return nil, nil, apierrors.FromObject(status)
	}
	if out != list && slots != nil {
		// Items were cut from a body that did not decode into the list.
		return nil, nil, fmt.Errorf("%w: the body decoded as a %T", wire.ErrCutItems, out)
	}
	return list, slots, nil
}

// Watch starts a watch. For a streaming list in protobuf, the initial
// objects that the cache of the calling informer holds at the same
// resource version are not decoded: the watch carries the cached objects
// (see cachedLookup and wire.WatchReuse).
func (lw *restListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	options.Watch = true
	client := lw.client
	if lookup := cachedLookupFrom[T](ctx); lookup != nil && options.SendInitialEvents != nil && *options.SendInitialEvents && lw.cachedItems != (wire.CachedItemsLayout{}) {
		// A client of its own, whose decoders hold this watch's state.
		reuse := wire.NewWatchReuse(lw.cachedItems, func(name ObjectName, resourceVersion string) (runtime.Object, bool) {
			return lookup(name, resourceVersion)
		})
		var err error
		if client, err = lw.newClient(wire.NewRESTCodecsReusing(lw.scheme, lw.interns, lw.typed, reuse)); err != nil {
			return nil, fmt.Errorf("watch %s: %w", lw.resource.GroupResource(), err)
		}
	}
	w, err := client.Get().
		NamespaceIfScoped(lw.namespace, lw.namespace != "").
		Resource(lw.resource.Resource).
		SpecificallyVersionedParams(&options, restParameterCodec, metaV1).
		Timeout(watchTimeout(options)).
		Watch(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", lw.resource.GroupResource(), err)
	}
	return w, nil
}

// kindOf finds the group, version and kind of T in userScheme, then in
// client-go's scheme, and returns the scheme that knows it.
func kindOf[T Object](userScheme *runtime.Scheme) (*runtime.Scheme, schema.GroupVersionKind, error) {
	return kindOfType[T](reflect.TypeFor[T](), userScheme)
}

// kindOfType is kindOf for typ, a type that must implement T.
func kindOfType[T Object](typ reflect.Type, userScheme *runtime.Scheme) (*runtime.Scheme, schema.GroupVersionKind, error) {
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("the type must be a pointer to a struct")
	}
	obj, ok := reflect.New(typ.Elem()).Interface().(T)
	if !ok {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s does not implement %s", typ, reflect.TypeFor[T]())
	}
	switch any(obj).(type) {
	case *metav1.PartialObjectMetadata:
		return nil, schema.GroupVersionKind{}, fmt.Errorf("metadata-only objects need a GroupVersionResource: use NewMetadataListerWatcher, or For with InformerOptions.Resource")
	case *unstructured.Unstructured:
		return nil, schema.GroupVersionKind{}, fmt.Errorf("unstructured objects need a GroupVersionResource: use NewDynamicListerWatcher, or For with InformerOptions.Resource")
	}
	for _, s := range []*runtime.Scheme{userScheme, clientgoscheme.Scheme} {
		if s == nil {
			continue
		}
		kinds, unversioned, err := s.ObjectKinds(obj)
		if err != nil || unversioned {
			continue
		}
		for _, gvk := range kinds {
			if gvk.Version != runtime.APIVersionInternal {
				return s, gvk, nil
			}
		}
	}
	return nil, schema.GroupVersionKind{}, fmt.Errorf("the type is not registered in the scheme (for a CRD type, register it in a runtime.Scheme with its list type and pass that scheme)")
}

// typedContentType resolves the requested content type for a kind whose
// list type is list.
func typedContentType(requested ContentType, gvk schema.GroupVersionKind, list runtime.Object) (ContentType, error) {
	switch requested {
	case ContentTypeDefault:
		if clientgoscheme.Scheme.Recognizes(gvk) && decodesProtobuf(list) {
			return ContentTypeProtobuf, nil
		}
		return ContentTypeJSON, nil
	case ContentTypeJSON:
		return ContentTypeJSON, nil
	case ContentTypeProtobuf:
		if !decodesProtobuf(list) {
			return "", fmt.Errorf("content type %s: %T cannot be decoded from protobuf", requested, list)
		}
		return ContentTypeProtobuf, nil
	default:
		return "", fmt.Errorf("unsupported content type %q (use %q or %q)", requested, ContentTypeJSON, ContentTypeProtobuf)
	}
}

// decodesProtobuf tells whether apimachinery's protobuf serializer can
// decode into obj: it needs the generated Reset and Unmarshal methods.
func decodesProtobuf(obj runtime.Object) bool {
	_, ok := obj.(wire.ProtobufMessage)
	return ok
}

// newTypedRESTClient returns a REST client for one group version that
// decodes with codecs (wire.NewRESTCodecs), negotiates contentType and
// sends its requests through httpClient.
func newTypedRESTClient(config *rest.Config, gv schema.GroupVersion, codecs runtime.NegotiatedSerializer, contentType ContentType, httpClient *http.Client) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = codecs
	cfg.ContentType = string(contentType)
	cfg.AcceptContentTypes = string(contentType)
	if contentType == ContentTypeProtobuf {
		cfg.AcceptContentTypes = string(ContentTypeProtobuf) + "," + string(ContentTypeJSON)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(cfg, httpClient)
}

// watchTimeout is the client-side timeout matching the server-side one the
// reflector asks for, so that a silent connection cannot hang a watch.
func watchTimeout(options metav1.ListOptions) time.Duration {
	if options.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*options.TimeoutSeconds) * time.Second
}

// validateNamespace rejects a namespace that cannot be a URL path segment.
func validateNamespace(namespace string) error {
	if namespace == "" {
		return nil
	}
	if msgs := rest.IsValidPathSegmentName(namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid namespace %q: %v", namespace, msgs)
	}
	return nil
}
