package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/wire"
)

// metadataListerWatcher lists and watches the metadata of a resource (see
// NewMetadataListerWatcher).
type metadataListerWatcher struct {
	client metadata.ResourceInterface // for watches
	// lists and decoders are the REST client lists are sent through and
	// the metadata client's decoders, and listPath their URL path.
	lists    *rest.RESTClient
	decoders runtime.ClientNegotiator
	listPath []string
	resource schema.GroupVersionResource
	tweak    func(*metav1.ListOptions)
	drop     *wire.DropFieldsTransport // nil without DropFields
	// listed is what it lists and from where (description).
	listed listedScope
}

var (
	_ describedListerWatcher[*metav1.PartialObjectMetadata] = (*metadataListerWatcher)(nil)
	_ describedListerWatcher[*unstructured.Unstructured]    = (*dynamicListerWatcher)(nil)
)

// NewMetadataListerWatcher returns a ListerWatcher of only the metadata of
// opts.Resource, as *metav1.PartialObjectMetadata, as client-go's metadata
// client lists and watches it (lists sent and decoded as it does them,
// watches through it): the server sends metadata only (Accept
// ...;as=PartialObjectMetadata), which saves bandwidth and memory for large
// objects. It always asks for protobuf with a JSON fallback; opts.Scheme and
// opts.ContentType are ignored. Listed items come without apiVersion and
// kind, like the objects of watch events. It is safe for concurrent use. No
// request is made.
func NewMetadataListerWatcher(config *rest.Config, opts RESTOptions) (ListerWatcher[*metav1.PartialObjectMetadata], error) {
	return newMetadataListerWatcher(config, opts)
}

func newMetadataListerWatcher(config *rest.Config, opts RESTOptions) (*metadataListerWatcher, error) {
	resource := opts.Resource
	if err := validateNamedResource(config, resource, opts.Namespace); err != nil {
		return nil, fmt.Errorf("list/watch metadata of %s: %w", resourcePath(resource), err)
	}
	httpClient, err := httpClientFor(config, opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("list/watch metadata of %s: %w", resourcePath(resource), err)
	}
	listed := listedScopeOf(config, opts, resource, httpClient)
	drop, err := wire.NewDropFieldsTransport(opts.DropFields, reflect.TypeFor[*metav1.PartialObjectMetadata](), reflect.TypeFor[*metav1.PartialObjectMetadataList](), true, resourcePath(resource))
	if err != nil {
		return nil, fmt.Errorf("list/watch metadata of %s: DropFields: %w", resourcePath(resource), err)
	}
	if drop != nil {
		httpClient = drop.Wrap(httpClient)
	}
	client, err := metadata.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("list/watch metadata of %s: metadata client: %w", resourcePath(resource), err)
	}
	getter := client.Resource(resource)
	var scoped metadata.ResourceInterface = getter
	if opts.Namespace != "" {
		scoped = getter.Namespace(opts.Namespace)
	}
	lw := &metadataListerWatcher{client: scoped, resource: resource, tweak: opts.TweakListOptions, drop: drop, listed: listed}
	// The metadata client's REST client, as metadata.NewForConfigAndClient
	// makes it.
	cfg := metadata.ConfigFor(config)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/this-value-should-never-be-sent"
	if lw.lists, err = rest.RESTClientForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("list/watch metadata of %s: REST client: %w", resourcePath(resource), err)
	}
	lw.decoders = runtime.NewClientNegotiator(cfg.NegotiatedSerializer, *cfg.GroupVersion)
	lw.listPath = resourceListPath(resource, opts.Namespace)
	return lw, nil
}

// description says that lw interns nothing: it decodes as client-go's
// metadata client does.
func (lw *metadataListerWatcher) description() lwDescription {
	return lwDescription{drop: lw.drop, listed: lw.listed}
}

func (lw *metadataListerWatcher) decodingWith(table *wire.InternTable) (ListerWatcher[*metav1.PartialObjectMetadata], error) {
	return nil, fmt.Errorf("list/watch metadata of %s: %w", lw.resource.GroupResource(), checkDecodingWith(lw.description(), table))
}

// Resource returns the resource this ListerWatcher lists and watches.
func (lw *metadataListerWatcher) Resource() schema.GroupVersionResource {
	return lw.resource
}

// List returns one page of metadata. The items point into the decoded
// list and are owned by the caller, except those that the cache of the
// calling informer holds at the listed resource version: for them, not
// decoded, it returns the cached object (see cachedLookup). As the REST
// ListerWatcher, it reads the response into a buffer that later lists
// reuse.
func (lw *metadataListerWatcher) List(ctx context.Context, options metav1.ListOptions) (*ListResult[*metav1.PartialObjectMetadata], error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	list, slots, err := lw.list(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("list metadata of %s: %w", lw.resource.GroupResource(), err)
	}
	items := make([]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		// As the decoder does for watched objects.
		list.Items[i].TypeMeta = metav1.TypeMeta{}
		items[i] = &list.Items[i]
	}
	if items, err = wire.WithCachedItems(items, slots); err != nil {
		return nil, fmt.Errorf("list metadata of %s: %w", lw.resource.GroupResource(), err)
	}
	return &ListResult[*metav1.PartialObjectMetadata]{Items: items, ResourceVersion: list.ResourceVersion, Continue: list.Continue}, nil
}

// metadataListAccept is what the metadata client's List accepts.
const metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// metadataItemsLayout is where a protobuf PartialObjectMetadataList holds
// its items' metadata.
var metadataItemsLayout = wire.CachedItemsLayoutOf(reflect.TypeFor[*metav1.PartialObjectMetadataList](), reflect.TypeFor[*metav1.PartialObjectMetadata]())

// list sends a list request as the metadata client's List does and decodes
// the response as it does, but for the items the calling informer's cache
// holds (see wire.CutCachedItems, wire.CutCachedJSONItems and wire.WithCachedItems).
func (lw *metadataListerWatcher) list(ctx context.Context, options metav1.ListOptions) (*metav1.PartialObjectMetadataList, []*metav1.PartialObjectMetadata, error) {
	buf, err := readList(ctx, func() *rest.Request {
		return lw.lists.Get().AbsPath(lw.listPath...).SetHeader("Accept", metadataListAccept).SpecificallyVersionedParams(&options, restParameterCodec, metaV1)
	})
	if err != nil {
		return nil, nil, err
	}
	defer putListBody(buf)
	body := buf.Bytes()
	var slots []*metav1.PartialObjectMetadata
	isProtobuf := bytes.HasPrefix(body, []byte(wire.ProtobufMagic))
	if lookup := cachedLookupFrom[*metav1.PartialObjectMetadata](ctx); lookup != nil {
		if !isProtobuf {
			body, slots = wire.CutCachedJSONItems(body, "PartialObjectMetadataList", lookup)
		} else if gvk, msg, ok := wire.ParseProtobufEnvelope(body[len(wire.ProtobufMagic):]); ok && gvk.Kind == "PartialObjectMetadataList" {
			if msg, slots := wire.CutCachedItems(msg, metadataItemsLayout, lookup); slots != nil {
				// What the protobuf decoder does with the list message.
				list := &metav1.PartialObjectMetadataList{}
				if err := list.Unmarshal(msg); err != nil {
					return nil, nil, err
				}
				return list, slots, nil
			}
		}
	}
	mediaType := runtime.ContentTypeJSON
	if isProtobuf {
		mediaType = runtime.ContentTypeProtobuf
	}
	decoder, err := lw.decoders.Decoder(mediaType, nil)
	if err != nil {
		return nil, nil, err
	}
	// As the REST client's Result.Get and the metadata client's List. A
	// body cut is of kind PartialObjectMetadataList: if that is not
	// registered (another apiVersion), the error is returned rather than
	// the cut body read by the fallback, which matches names regardless of
	// case where the cut does not.
	out, _, err := decoder.Decode(body, nil, nil)
	if runtime.IsNotRegisteredError(err) && slots == nil {
		var list metav1.PartialObjectMetadataList
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, nil, fmt.Errorf("unable to decode returned object as PartialObjectMetadataList: %w", err)
		}
		return &list, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if status, ok := out.(*metav1.Status); ok && status.Status != metav1.StatusSuccess {
		return nil, nil, apierrors.FromObject(status)
	}
	list, ok := out.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected object, expected PartialObjectMetadataList but got %T", out)
	}
	return list, slots, nil
}

// Watch starts a watch whose events carry *metav1.PartialObjectMetadata.
func (lw *metadataListerWatcher) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	w, err := lw.client.Watch(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("watch metadata of %s: %w", lw.resource.GroupResource(), err)
	}
	return w, nil
}

// dynamicListerWatcher lists and watches a resource as unstructured objects
// (see NewDynamicListerWatcher).
type dynamicListerWatcher struct {
	// lists and decoder are the REST client lists and watches are sent
	// through and its JSON decoder, and listPath their URL path.
	lists    *rest.RESTClient
	decoder  runtime.Decoder
	listPath []string
	resource schema.GroupVersionResource
	tweak    func(*metav1.ListOptions)
	drop     *wire.DropFieldsTransport // nil without DropFields
	// interns is the table the decoder reads strings into (and shares
	// sub-trees with, if it shares sub-objects); newClient makes lists and
	// decoder decode with a table.
	interns   *wire.InternTable
	newClient func(interns *wire.InternTable) (*rest.RESTClient, runtime.Decoder, error)
	// listed is what it lists and from where (description).
	listed listedScope
}

// NewDynamicListerWatcher returns a ListerWatcher of opts.Resource as
// *unstructured.Unstructured, in JSON: lists and watches as client-go's
// dynamic client sends them, their objects decoded into what it decodes,
// but with member names and string values interned (shared between the
// objects decoded; see docs/semantics.md, "Strings interned on decode").
// It suits custom resources without a Go type. opts.Scheme is ignored;
// opts.ContentType must be the default or JSON. It is safe for concurrent
// use. No request is made.
func NewDynamicListerWatcher(config *rest.Config, opts RESTOptions) (ListerWatcher[*unstructured.Unstructured], error) {
	return newDynamicListerWatcher(config, opts)
}

func newDynamicListerWatcher(config *rest.Config, opts RESTOptions) (*dynamicListerWatcher, error) {
	resource := opts.Resource
	if err := validateNamedResource(config, resource, opts.Namespace); err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", resourcePath(resource), err)
	}
	if opts.ContentType != ContentTypeDefault && opts.ContentType != ContentTypeJSON {
		return nil, fmt.Errorf("list/watch %s: unstructured objects are served only as JSON, not %q", resourcePath(resource), opts.ContentType)
	}
	httpClient, err := httpClientFor(config, opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", resourcePath(resource), err)
	}
	listed := listedScopeOf(config, opts, resource, httpClient)
	drop, err := wire.NewDropFieldsTransport(opts.DropFields, nil, nil, false, resourcePath(resource))
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: DropFields: %w", resourcePath(resource), err)
	}
	if drop != nil {
		httpClient = drop.Wrap(httpClient)
	}
	lw := &dynamicListerWatcher{resource: resource, tweak: opts.TweakListOptions, drop: drop, listed: listed}
	// The dynamic client's configuration, accepting only JSON (even if
	// client-go's CBOR feature gates are on), with its JSON serializer's
	// decoding of unstructured objects done by wire.UnstructuredDecoder.
	cfg := dynamic.ConfigFor(config)
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	codecs := cfg.NegotiatedSerializer
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("list/watch %s: the dynamic client has no JSON decoder", resourcePath(resource))
	}
	lw.newClient = func(interns *wire.InternTable) (*rest.RESTClient, runtime.Decoder, error) {
		decoder := wire.NewUnstructuredDecoder(interns)
		json := info
		json.Serializer = wire.NewUnstructuredSerializer(decoder, info.Serializer)
		json.StreamSerializer = wire.NewJSONWatchStream(info.StreamSerializer, watchEventTyper)
		cfg := rest.CopyConfig(cfg)
		cfg.NegotiatedSerializer = unstructuredCodecs{NegotiatedSerializer: codecs, json: json}
		client, err := rest.UnversionedRESTClientForConfigAndClient(cfg, httpClient)
		return client, json.Serializer, err
	}
	interns, err := decodingTable(opts.DecodingTable, true)
	if err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", resourcePath(resource), err)
	}
	if err := lw.decodeWith(interns); err != nil {
		return nil, fmt.Errorf("list/watch %s: REST client: %w", resourcePath(resource), err)
	}
	lw.listPath = resourceListPath(resource, opts.Namespace)
	return lw, nil
}

// decodeWith makes lw list, watch and decode with interns.
func (lw *dynamicListerWatcher) decodeWith(interns *wire.InternTable) error {
	client, decoder, err := lw.newClient(interns)
	if err != nil {
		return err
	}
	lw.lists, lw.decoder, lw.interns = client, decoder, interns
	return nil
}

func (lw *dynamicListerWatcher) description() lwDescription {
	return lwDescription{interns: lw.interns, sharesOnDecode: true, drop: lw.drop, listed: lw.listed}
}

func (lw *dynamicListerWatcher) decodingWith(table *wire.InternTable) (ListerWatcher[*unstructured.Unstructured], error) {
	if err := checkDecodingWith(lw.description(), table); err != nil {
		return nil, fmt.Errorf("list/watch %s: %w", lw.resource.GroupResource(), err)
	}
	copied := *lw
	if err := copied.decodeWith(table); err != nil {
		return nil, fmt.Errorf("list/watch %s: REST client: %w", lw.resource.GroupResource(), err)
	}
	return &copied, nil
}

// watchEventTyper knows metav1.WatchEvent at version v1, as the scheme of
// the dynamic client's stream serializer does: the kind a watch event is
// decoded with (see wire.NewJSONWatchStream).
var watchEventTyper = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return scheme
}()

// unstructuredCodecs is the dynamic client's codecs with json, its JSON
// serializer decoding through wire.UnstructuredDecoder, in place of its
// own: what a REST client decodes list bodies and watch events' objects
// with.
type unstructuredCodecs struct {
	runtime.NegotiatedSerializer
	json runtime.SerializerInfo
}

// SupportedMediaTypes returns JSON only.
func (c unstructuredCodecs) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{c.json}
}

// resourceListPath is the URL path of a list of resource in namespace (all
// if empty), as the dynamic and metadata clients build it.
func resourceListPath(resource schema.GroupVersionResource, namespace string) []string {
	path := []string{"api"}
	if resource.Group != "" {
		path = []string{"apis", resource.Group}
	}
	path = append(path, resource.Version)
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	return append(path, resource.Resource)
}

// Resource returns the resource this ListerWatcher lists and watches.
func (lw *dynamicListerWatcher) Resource() schema.GroupVersionResource {
	return lw.resource
}

// List returns one page of objects. The items point into the decoded list
// and are owned by the caller, except those that the cache of the calling
// informer holds at the listed resource version: for them, not decoded, it
// returns the cached object (see cachedLookup). As the REST ListerWatcher,
// it reads the response into a buffer that later lists reuse.
func (lw *dynamicListerWatcher) List(ctx context.Context, options metav1.ListOptions) (*ListResult[*unstructured.Unstructured], error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	list, slots, err := lw.list(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	items := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	if items, err = wire.WithCachedItems(items, slots); err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.resource.GroupResource(), err)
	}
	selector, _, _ := unstructured.NestedString(list.Object, "metadata", "shardInfo", "selector")
	return &ListResult[*unstructured.Unstructured]{Items: items, ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue(), ShardSelector: selector}, nil
}

// list sends a list request as the dynamic client's List does and decodes
// the response into what it does (see wire.UnstructuredSerializer), but
// for the items the calling informer's cache holds (see
// wire.CutCachedJSONItems and wire.WithCachedItems).
func (lw *dynamicListerWatcher) list(ctx context.Context, options metav1.ListOptions) (*unstructured.UnstructuredList, []*unstructured.Unstructured, error) {
	buf, err := readList(ctx, func() *rest.Request {
		return lw.lists.Get().AbsPath(lw.listPath...).SpecificallyVersionedParams(&options, restParameterCodec, metaV1)
	})
	if err != nil {
		return nil, nil, err
	}
	defer putListBody(buf)
	body := buf.Bytes()
	if len(body) == 0 {
		// As the REST client's Result.Into.
		return nil, nil, fmt.Errorf("0-length response")
	}
	var slots []*unstructured.Unstructured
	if lookup := cachedLookupFrom[*unstructured.Unstructured](ctx); lookup != nil {
		body, slots = wire.CutCachedJSONItems(body, "", lookup)
	}
	list := &unstructured.UnstructuredList{}
	if _, _, err := lw.decoder.Decode(body, nil, list); err != nil {
		return nil, nil, err
	}
	return list, slots, nil
}

// Watch starts a watch whose events carry *unstructured.Unstructured, as
// the dynamic client's Watch sends it.
func (lw *dynamicListerWatcher) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if lw.tweak != nil {
		lw.tweak(&options)
	}
	options.Watch = true
	w, err := lw.lists.Get().AbsPath(lw.listPath...).SpecificallyVersionedParams(&options, restParameterCodec, metaV1).Watch(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", lw.resource.GroupResource(), err)
	}
	return w, nil
}

// validateNamedResource checks what the metadata and dynamic clients would
// otherwise only reject at the first request.
func validateNamedResource(config *rest.Config, resource schema.GroupVersionResource, namespace string) error {
	if config == nil {
		return fmt.Errorf("rest config is nil")
	}
	if resource.Version == "" || resource.Resource == "" {
		return fmt.Errorf("the GroupVersionResource needs a version and a resource")
	}
	return validateNamespace(namespace)
}

// httpClientFor returns shared if set, else a client built from config.
func httpClientFor(config *rest.Config, shared *http.Client) (*http.Client, error) {
	if shared != nil {
		return shared, nil
	}
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	return client, nil
}

// newResourceListerWatcher returns the ListerWatcher of opts.Resource for a
// T that is *metav1.PartialObjectMetadata or *unstructured.Unstructured.
func newResourceListerWatcher[T Object](config *rest.Config, opts RESTOptions) (ListerWatcher[T], error) {
	var zero T
	var lw any
	var err error
	switch any(zero).(type) {
	case *metav1.PartialObjectMetadata:
		lw, err = newMetadataListerWatcher(config, opts)
	case *unstructured.Unstructured:
		lw, err = newDynamicListerWatcher(config, opts)
	default:
		return nil, fmt.Errorf("list/watch %s as %T: a named resource is served as *v1.PartialObjectMetadata or *unstructured.Unstructured", resourcePath(opts.Resource), zero)
	}
	if err != nil {
		return nil, err
	}
	typed, ok := lw.(ListerWatcher[T])
	if !ok {
		return nil, fmt.Errorf("list/watch %s: %T does not serve %T", resourcePath(opts.Resource), lw, zero)
	}
	return typed, nil
}

// resourcePath describes a resource by its URL path segments:
// "v1/pods", "apps/v1/deployments".
func resourcePath(resource schema.GroupVersionResource) string {
	return resource.GroupVersion().String() + "/" + resource.Resource
}
