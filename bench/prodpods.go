package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/kubetyped/informer/internal/prodpods"
)

// This file holds the codec plumbing of the production-like pods of
// shared/benchmarks.md (W6), which internal/prodpods builds: they are stored
// as protobuf bytes and decoded through the codec a typed client-go client
// uses, so that every list or watch pays what a real one costs.

// newProdPods returns n production-like pods (prodpods.New).
var newProdPods = prodpods.New

// protoContentType is the media type of Kubernetes' protobuf encoding.
const protoContentType = runtime.ContentTypeProtobuf

// protoNegotiator picks encoders and decoders exactly as a typed client-go
// client of core/v1 does (rest.Config with scheme.Codecs.WithoutConversion()).
var protoNegotiator = runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion)

// encodeProto returns obj in Kubernetes' protobuf encoding (the "k8s\0"
// envelope around the generated Marshal's bytes), as the server sends it.
func encodeProto(obj runtime.Object) ([]byte, error) {
	enc, err := protoNegotiator.Encoder(protoContentType, nil)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return buf.Bytes(), nil
}

// encodeProdPodList returns pods as one PodList at resourceVersion, the
// body of a LIST response.
func encodeProdPodList(pods []corev1.Pod, resourceVersion string) ([]byte, error) {
	return encodeProto(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: resourceVersion}, Items: pods})
}

// decodeProdPodList decodes the body of a LIST response through client-go's
// protobuf decoder, as a typed client's List does: every call returns new
// objects.
func decodeProdPodList(data []byte) (*corev1.PodList, error) {
	dec, err := protoNegotiator.Decoder(protoContentType, nil)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{}
	if _, _, err := dec.Decode(data, nil, list); err != nil {
		return nil, fmt.Errorf("decoding a PodList: %w", err)
	}
	return list, nil
}

// encodeProdWatch returns a watch response body: one framed watch event of
// type eventType per pod, each embedding the pod's protobuf encoding, as
// the server streams them.
func encodeProdWatch(pods []corev1.Pod, eventType watch.EventType) ([]byte, error) {
	objs := make([]runtime.Object, len(pods))
	for i := range pods {
		objs[i] = &pods[i]
	}
	return encodeWatchEvents(eventType, objs...)
}

// encodeWatchEvents returns a watch response body: one framed watch event
// of type eventType per object, as the server streams them.
func encodeWatchEvents(eventType watch.EventType, objs ...runtime.Object) ([]byte, error) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), protoContentType)
	if !ok || info.StreamSerializer == nil {
		return nil, fmt.Errorf("no streaming serializer for %s", protoContentType)
	}
	var buf bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	for i, obj := range objs {
		raw, err := encodeProto(obj)
		if err != nil {
			return nil, err
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return nil, fmt.Errorf("encoding watch event %d: %w", i, err)
		}
	}
	return buf.Bytes(), nil
}

// newProdWatch returns a watch that decodes body (from encodeProdWatch)
// event by event as it is read, with the decoders client-go's REST client
// puts behind a protobuf watch. Its channel closes at the end of body.
func newProdWatch(body []byte) (watch.Interface, error) {
	objectDecoder, streamSerializer, framer, err := protoNegotiator.StreamDecoder(protoContentType, nil)
	if err != nil {
		return nil, err
	}
	events := streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(body))), streamSerializer)
	return watch.NewStreamWatcher(
		restclientwatch.NewDecoder(events, objectDecoder),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"),
	), nil
}

// prodPodSizes reports the mean protobuf size of the first sample fixture
// pods (each encoded alone, envelope included, as in a watch event) and the
// mean heap a decoded pod of a PodList of them takes.
func prodPodSizes(sample int) (protoBytes, heapBytes float64, err error) {
	pods := newProdPods(sample)
	total := 0
	for i := range pods {
		data, err := encodeProto(&pods[i])
		if err != nil {
			return 0, 0, err
		}
		total += len(data)
	}
	data, err := encodeProdPodList(pods, "1")
	if err != nil {
		return 0, 0, err
	}
	pods = nil
	before := liveHeap()
	list, err := decodeProdPodList(data)
	if err != nil {
		return 0, 0, err
	}
	after := liveHeap()
	goruntime.KeepAlive(list)
	goruntime.KeepAlive(data) // or its bytes would count against the pods
	return float64(total) / float64(sample), float64(after-before) / float64(sample), nil
}
