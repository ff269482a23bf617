package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// podServer stands in for the API server's pod endpoint, reached through
// an http.RoundTripper (no sockets), so that both caches are built by their
// public constructors exactly as a manager builds them, and each decodes
// what it caches itself. A list returns every pod, encoded once in
// protobuf (what both caches ask for, as for every built-in type); a watch
// stays open and silent until its request ends. A streaming list
// (sendInitialEvents) is refused, so that both informers fall back to list
// and watch.
type podServer struct {
	codecs   serializer.CodecFactory
	protobuf runtime.SerializerInfo
	json     runtime.SerializerInfo
	list     []byte // the pods, as a PodList in protobuf
}

// newPodServer encodes pods (resource version "1"); they are not kept.
func newPodServer(pods []corev1.Pod) (*podServer, error) {
	s := &podServer{codecs: serializer.NewCodecFactory(scheme.Scheme)}
	s.protobuf, _ = runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	s.json, _ = runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	l := &corev1.PodList{Items: pods}
	l.ResourceVersion = "1"
	b, err := runtime.Encode(s.codecs.EncoderForVersion(s.protobuf.Serializer, corev1.SchemeGroupVersion), l)
	if err != nil {
		return nil, fmt.Errorf("encoding %d pods: %w", len(pods), err)
	}
	s.list = b
	return s, nil
}

// RoundTrip answers one request.
func (s *podServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != "/api/v1/pods" {
		return s.status(req, apierrors.NewNotFound(corev1.Resource("pods"), req.URL.Path))
	}
	if !strings.Contains(req.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		return s.status(req, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "get", corev1.Resource("pods"), "", "this benchmark's server answers in protobuf only", 0, false))
	}
	q := req.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		return response(req, http.StatusOK, s.protobuf.MediaType, io.NopCloser(bytes.NewReader(s.list))), nil
	}
	if q.Get("sendInitialEvents") == "true" {
		return s.status(req, apierrors.NewBadRequest("streaming lists are not served by this benchmark's server"))
	}
	return response(req, http.StatusOK, s.protobuf.MediaType+";stream=watch", newIdleBody(req.Context())), nil
}

// status answers with err's status, in JSON.
func (s *podServer) status(req *http.Request, err *apierrors.StatusError) (*http.Response, error) {
	st := err.Status()
	body, encErr := runtime.Encode(s.codecs.EncoderForVersion(s.json.Serializer, corev1.SchemeGroupVersion), &st)
	if encErr != nil {
		return nil, encErr
	}
	return response(req, int(st.Code), s.json.MediaType, io.NopCloser(bytes.NewReader(body))), nil
}

func response(req *http.Request, code int, contentType string, body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: code,
		Status:     http.StatusText(code),
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{"Content-Type": []string{contentType}},
		Body:       body,
		Request:    req,
	}
}

// idleBody is the body of a watch with no events: a read waits until the
// request's context ends or the body is closed, then reports the end of
// the stream.
type idleBody struct {
	ctx       context.Context
	closed    chan struct{}
	closeOnce sync.Once
}

func newIdleBody(ctx context.Context) *idleBody {
	return &idleBody{ctx: ctx, closed: make(chan struct{})}
}

func (b *idleBody) Read([]byte) (int, error) {
	select {
	case <-b.ctx.Done():
	case <-b.closed:
	}
	return 0, io.EOF
}

func (b *idleBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}
