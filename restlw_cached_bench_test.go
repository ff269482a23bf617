package informer

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/testkit"
)

// BenchmarkRelistUnchanged lists a page of 500 pods (or their metadata)
// from an HTTP server through each list path, with a cache holding every item at the listed
// version (cache=all: a relist of an unchanged cache), with an empty cache
// (cache=empty: a first list, or a relist of items all changed, which
// read the bytes for nothing) and without one (cache=none: what each path
// decoded before it skipped cached items). Beside allocations it reports the heap
// the listed page holds once listed (retained-B/item), measured once:
//
//	go test -run '^$' -bench RelistUnchanged -count 3 .
func BenchmarkRelistUnchanged(b *testing.B) {
	const n = 500
	pods := randomListedPods(rand.New(rand.NewPCG(1, 17)), n)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: pods}
	jsonBody, err := kruntime.Encode(clientgoscheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), list)
	if err != nil {
		b.Fatal(err)
	}
	metadataList := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: list.ListMeta}
	for i := range pods {
		metadataList.Items = append(metadataList.Items, metav1.PartialObjectMetadata{ObjectMeta: pods[i].ObjectMeta})
	}
	var metadataBody bytes.Buffer
	if err := protobuf.NewSerializer(metainternalversionscheme.Scheme, metainternalversionscheme.Scheme).Encode(metadataList, &metadataBody); err != nil {
		b.Fatal(err)
	}
	protobufBody := testkit.EncodeProtobuf(b, list)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		accept := req.Header.Get("Accept")
		body, contentType := jsonBody, ContentTypeJSON
		switch {
		case strings.Contains(accept, "as=PartialObjectMetadataList"):
			body, contentType = metadataBody.Bytes(), ContentTypeProtobuf
		case strings.HasPrefix(accept, string(ContentTypeProtobuf)):
			body, contentType = protobufBody, ContentTypeProtobuf
		}
		w.Header().Set("Content-Type", string(contentType))
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	config := &rest.Config{Host: srv.URL, QPS: -1} // no client-side rate limit
	resource := corev1.SchemeGroupVersion.WithResource("pods")

	typedCache := map[ObjectName]*corev1.Pod{}
	for i := range pods {
		typedCache[NameOf(&pods[i])] = &pods[i]
	}
	dynamicCache := map[ObjectName]*unstructured.Unstructured{}
	for i := range pods {
		content, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(&pods[i])
		if err != nil {
			b.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: content}
		obj.SetAPIVersion("v1")
		obj.SetKind("Pod")
		dynamicCache[NameOf(obj)] = obj
	}
	metadataCache := map[ObjectName]*metav1.PartialObjectMetadata{}
	for i := range metadataList.Items {
		metadataCache[NameOf(&metadataList.Items[i])] = &metadataList.Items[i]
	}
	protobufLW, err := newRESTListerWatcher[*corev1.Pod](config, RESTOptions{ContentType: ContentTypeProtobuf})
	if err != nil {
		b.Fatal(err)
	}
	jsonLW, err := newRESTListerWatcher[*corev1.Pod](config, RESTOptions{ContentType: ContentTypeJSON})
	if err != nil {
		b.Fatal(err)
	}
	dynamicLW, err := newDynamicListerWatcher(config, RESTOptions{Resource: resource})
	if err != nil {
		b.Fatal(err)
	}
	metadataLW, err := newMetadataListerWatcher(config, RESTOptions{Resource: resource})
	if err != nil {
		b.Fatal(err)
	}
	dynamicClient, err := dynamic.NewForConfig(config)
	if err != nil {
		b.Fatal(err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []struct {
		name string
		list func(cache string) benchListFunc
	}{
		{"path=typed-protobuf", benchLister(protobufLW, typedCache)},
		{"path=typed-json", benchLister(jsonLW, typedCache)},
		{"path=dynamic", benchLister(dynamicLW, dynamicCache)},
		{"path=metadata-protobuf", benchLister(metadataLW, metadataCache)},
		// What the metadata and dynamic ListerWatchers' List called before
		// they skipped cached items.
		{"path=metadata-client-go", func(string) benchListFunc {
			return func(ctx context.Context) (any, int, error) {
				got, err := metadataClient.Resource(resource).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, 0, err
				}
				return got, len(got.Items), nil
			}
		}},
		{"path=dynamic-client-go", func(string) benchListFunc {
			return func(ctx context.Context) (any, int, error) {
				got, err := dynamicClient.Resource(resource).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, 0, err
				}
				return got, len(got.Items), nil
			}
		}},
	} {
		for _, cache := range []string{"none", "empty", "all"} {
			if cache != "none" && strings.HasSuffix(path.name, "-client-go") {
				continue
			}
			list := path.list(cache)
			b.Run(path.name+"/cache="+cache, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, got, err := list(b.Context()); err != nil || got != n {
						b.Fatalf("listed %d items, %v", got, err)
					}
				}
				b.StopTimer()
				// Twice, so that the pooled list buffer survives both.
				var before, after runtime.MemStats
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&before)
				got, _, err := list(b.Context())
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				if err != nil {
					b.Fatal(err)
				}
				runtime.KeepAlive(got)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "retained-B/item")
			})
		}
	}
}

// benchListFunc lists once and returns the result and its length.
type benchListFunc func(ctx context.Context) (any, int, error)

// benchLister returns, for a cache of BenchmarkRelistUnchanged, a
// benchListFunc listing through lw with a lookup over all (cache=all),
// over an empty cache (cache=empty) or none (cache=none).
func benchLister[T Object](lw ListerWatcher[T], all map[ObjectName]T) func(cache string) benchListFunc {
	return func(cache string) benchListFunc {
		var lookup cachedLookup[T]
		switch cache {
		case "all":
			lookup = func(name ObjectName, rv string) (T, bool) {
				obj, ok := all[name]
				return obj, ok && obj.GetResourceVersion() == rv
			}
		case "empty":
			lookup = func(ObjectName, string) (T, bool) {
				var zero T
				return zero, false
			}
		}
		return func(ctx context.Context) (any, int, error) {
			if lookup != nil {
				ctx = withCachedLookup(ctx, lookup)
			}
			got, err := lw.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, 0, err
			}
			return got, len(got.Items), nil
		}
	}
}
