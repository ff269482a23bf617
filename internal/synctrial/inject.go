package synctrial

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// GoneInjector makes a client relist from a real server, which cannot be
// told to end its watches: wrapped around the client's transport, once
// triggered it ends the watches open then and answers the next watch
// request with "410 Gone", as a server does to a watch resumed from a
// compacted resource version. The relist that follows goes to the server.
type GoneInjector struct {
	mu      sync.Mutex
	open    map[*watchBody]struct{}
	pending bool
}

// InjectGone wraps config's transport (it changes config) in a
// GoneInjector.
func InjectGone(config *rest.Config) *GoneInjector {
	g := &GoneInjector{open: map[*watchBody]struct{}{}}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) { return g.roundTrip(rt, req) })
	})
	return g
}

// Trigger ends the open watches and makes the next watch request fail with
// "410 Gone".
func (g *GoneInjector) Trigger() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = true
	for b := range g.open {
		b.end()
	}
	clear(g.open)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// roundTrip passes req to rt, answering a watch with "410 Gone" when
// pending, and tracking the watches' bodies.
func (g *GoneInjector) roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	watching := req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"
	if watching {
		g.mu.Lock()
		gone := g.pending
		g.pending = false
		g.mu.Unlock()
		if gone {
			return goneResponse(req)
		}
	}
	resp, err := rt.RoundTrip(req)
	if err != nil || !watching {
		return resp, err
	}
	b := &watchBody{ReadCloser: resp.Body}
	g.mu.Lock()
	g.open[b] = struct{}{}
	g.mu.Unlock()
	resp.Body = b
	return resp, nil
}

// watchBody is a watch response's body that Trigger can end.
type watchBody struct {
	io.ReadCloser
	once sync.Once
}

// end closes the body: the watch's reader sees an error and the watch ends.
func (b *watchBody) end() { b.once.Do(func() { b.ReadCloser.Close() }) }

// Close closes the body once.
func (b *watchBody) Close() error {
	b.end()
	return nil
}

// goneResponse is a "410 Gone" answer to req, in protobuf as kube-apiserver
// writes it.
func goneResponse(req *http.Request) (*http.Response, error) {
	st := apierrors.NewResourceExpired("too old resource version (injected by the benchmark to force a relist)").ErrStatus
	st.APIVersion, st.Kind = "v1", "Status"
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(&st, &buf); err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: http.StatusGone, Status: "410 Gone", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {runtime.ContentTypeProtobuf}, "Content-Length": {strconv.Itoa(buf.Len())}},
		Body:   io.NopCloser(&buf), ContentLength: int64(buf.Len()), Request: req,
	}, nil
}
