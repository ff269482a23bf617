package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// This file serves W6's protobuf bytes over HTTP to an informer built with
// informer.NewRESTListerWatcher, so that the fields it drops on the wire
// (informer.RESTOptions.DropFields) are dropped where they would be from a
// real server's responses: before the REST client decodes them.

// typicalControllerDropFields is W6(c)'s declared projection, the one of
// ExampleInformerOptions_dropFields: what a controller that follows pods'
// identity, labels, owners, node, phase and IPs does not read (a
// network-policy agent, a per-node or per-owner accounting controller).
// Keeping the containers (without their resources, env, mounts, probes)
// and the conditions too costs about 1.3 KB more per pod (20,000 pods,
// measured once at 22:50 UTC).
var typicalControllerDropFields = []string{
	informer.ManagedFields,
	"metadata.annotations",
	"spec.volumes",
	"spec.initContainers",
	"spec.containers",
	"spec.tolerations",
	"spec.securityContext",
	"spec.affinity",
	"status.conditions",
	"status.containerStatuses",
	"status.initContainerStatuses",
}

// newOurWireProdInformer returns a newProdInformerFunc building our
// informer over the REST ListerWatcher, served src's bytes by a
// prodTransport, with dropFields dropped on the wire (strip adds managed
// fields to them), deduplicating (Deduplicate) if dedup is set.
func newOurWireProdInformer(dropFields []string, dedup bool) newProdInformerFunc {
	return func(src *prodSource, strip bool, handlers []*countingHandler) (*informerUnderTest, error) {
		drop := dropFields
		if strip {
			drop = append([]string{informer.ManagedFields}, drop...)
		}
		lw, err := informer.NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://w6.invalid"}, informer.RESTOptions{
			ContentType: informer.ContentTypeProtobuf,
			HTTPClient:  &http.Client{Transport: &prodTransport{src: src}},
			DropFields:  drop,
		})
		if err != nil {
			return nil, err
		}
		return buildOurInformer(listThenWatch{lw}, src.watches, nil, dedup, handlers)
	}
}

// listThenWatch makes the reflector list and then watch, as the other W6
// informers do, instead of asking for a streaming list.
type listThenWatch struct {
	informer.ListerWatcher[*corev1.Pod]
}

// IsWatchListSemanticsUnSupported makes our reflector list and then watch.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// prodTransport answers a REST client's list requests with src's pages (by
// their continue tokens, whatever the limit: a client follows the token) and
// its first watch request, once the harness releases src.watches, with
// src.stream; later watches, and the first after its stream, stay idle.
type prodTransport struct {
	src     *prodSource
	watched atomic.Bool
}

// RoundTrip implements http.RoundTripper.
func (t *prodTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL.Query().Get("watch") != "true" {
		body, err := t.src.page(req.URL.Query().Get("continue"))
		if err != nil {
			return nil, err
		}
		return prodResponse(req, protoContentType, bytes.NewReader(body), int64(len(body))), nil
	}
	select {
	case <-t.src.watches.released:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idle := &idleBody{ctx: ctx, closed: make(chan struct{})}
	var body io.Reader = idle
	if !t.watched.Swap(true) && t.src.stream != nil {
		body = io.MultiReader(bytes.NewReader(t.src.stream), idle)
	}
	return prodResponse(req, protoContentType+";stream=watch", struct {
		io.Reader
		io.Closer
	}{body, idle}, -1), nil
}

// prodResponse is a 200 response to req.
func prodResponse(req *http.Request, contentType string, body io.Reader, length int64) *http.Response {
	header := http.Header{"Content-Type": {contentType}}
	if length >= 0 {
		header.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	rc, ok := body.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(body)
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: rc, ContentLength: length, Request: req}
}

// idleBody is the body of a watch with nothing more to say: Read blocks
// until the request ends or the body is closed.
type idleBody struct {
	ctx    context.Context
	closed chan struct{}
	once   atomic.Bool
}

func (b *idleBody) Read([]byte) (int, error) {
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-b.closed:
		return 0, io.EOF
	}
}

func (b *idleBody) Close() error {
	if !b.once.Swap(true) {
		close(b.closed)
	}
	return nil
}
