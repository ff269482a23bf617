// Package replayserver is a loopback Kubernetes API server that replays
// production-like pods (internal/prodpods) to informers, for the benchmarks
// that need more pods or more clusters than a real kube-apiserver on this
// machine can hold (E6, many clusters; E7, a million pods; see
// shared/benchmarks.md). It serves what an informer asks of a real one, in
// protobuf: paginated lists (continue tokens; resource version "0", ""
// (consistent), and exact or not-older-than versions, with "410 Gone" for
// versions it no longer holds), watches from a resource version, streaming
// lists (sendInitialEvents, ended by the "k8s.io/initial-events-end"
// bookmark) and bookmarks. A writer changes pods on request (Cluster.Write)
// and a client can be made to relist (Cluster.Expire).
//
// Each cluster has a listener of its own on 127.0.0.1, as clusters of a
// fleet have hosts of their own: a client's connections, its transport's
// per-host limits and its watches are then per cluster as they are against
// real clusters, at the cost of one listening socket per cluster. A pod's
// bytes are built once per Deployment template and its per-pod fields
// written into a copy for each response (prodpods.Cluster.AppendPod), so
// that a million pods cost the server tens of bytes each, not their
// encoding.
//
// The server runs in-process (Start) or, so that its CPU and memory are not
// the measured client's, in a process of its own (StartProcess), which is
// the calling program run again: that program calls RunIfChild first thing
// in main (or TestMain).
package replayserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubetyped/informer/internal/prodpods"
)

// Options says what a replay server serves.
type Options struct {
	// Clusters is the number of clusters (default 1).
	Clusters int `json:"clusters"`
	// Pods is the number of pods of each cluster.
	Pods int `json:"pods"`
	// Common is the fraction (0 to 1) of each cluster's pods from the
	// fleet's common Deployments (prodpods.FleetOptions.Common).
	Common float64 `json:"common"`
	// BookmarkInterval is how often a watch that asked for bookmarks gets
	// one while idle (default 1 minute, about what kube-apiserver does).
	BookmarkInterval time.Duration `json:"bookmarkInterval"`
	// History bounds the events each cluster keeps for lists and watches
	// at older resource versions (default 1,048,576, and at least the
	// pods' creations); past it the older half is compacted.
	History int `json:"history"`
}

// Server is a running replay server.
type Server struct {
	clusters []*clusterServer
	wg       sync.WaitGroup
}

// clusterServer is one cluster: its history, listener and counters.
type clusterServer struct {
	opts     Options
	history  *history
	listener net.Listener
	server   *http.Server
	stats    clusterStats
}

// clusterStats counts what a cluster served.
type clusterStats struct {
	lists, pages, watches, watchLists atomic.Int64
	openWatches                       atomic.Int64
	bytes                             atomic.Int64
}

// Start builds the clusters' pods and starts serving them. Close stops it.
func Start(opts Options) (*Server, error) {
	if opts.Clusters == 0 {
		opts.Clusters = 1
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Minute
	}
	if opts.History <= 0 {
		opts.History = 1 << 20
	}
	if opts.Clusters < 0 || opts.Pods < 0 {
		return nil, fmt.Errorf("replayserver: Clusters and Pods must not be negative: %d, %d", opts.Clusters, opts.Pods)
	}
	if uint64(opts.Pods)+uint64(opts.History) > prodpods.MaxResourceVersion-prodpods.MinResourceVersion {
		return nil, fmt.Errorf("replayserver: %d pods and a history of %d do not fit the resource versions", opts.Pods, opts.History)
	}
	fleet, err := prodpods.NewFleet(prodpods.FleetOptions{Pods: opts.Pods, Common: opts.Common})
	if err != nil {
		return nil, err
	}
	s := &Server{clusters: make([]*clusterServer, opts.Clusters)}
	for c := range s.clusters {
		pods, err := fleet.Cluster(c)
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("replayserver: cluster %d: %w", c, err)
		}
		cs := &clusterServer{opts: opts, history: newHistory(pods, prodpods.MinResourceVersion, opts.History), listener: l}
		cs.server = &http.Server{Handler: cs, ReadHeaderTimeout: time.Minute}
		s.clusters[c] = cs
		s.wg.Go(func() { _ = cs.server.Serve(l) })
	}
	return s, nil
}

// Clusters returns the clusters, in order.
func (s *Server) Clusters() []Cluster {
	out := make([]Cluster, len(s.clusters))
	for c, cs := range s.clusters {
		out[c] = Cluster{URL: "http://" + cs.listener.Addr().String()}
	}
	return out
}

// Close stops serving: listeners close, and open lists and watches end.
func (s *Server) Close() error {
	var errs []error
	for _, cs := range s.clusters {
		if cs == nil {
			continue
		}
		errs = append(errs, cs.server.Close())
		cs.history.mu.Lock()
		cs.history.generation++
		cs.history.notifyLocked()
		cs.history.mu.Unlock()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// podsPath and namespacedPods are the paths of the pods resource.
const (
	podsPath       = "/api/v1/pods"
	namespacesPath = "/api/v1/namespaces/"
)

// ServeHTTP routes a request: the pods resource (cluster-wide or in a
// namespace), or the replay server's own control endpoints (control.go).
func (cs *clusterServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		cs.serveControl(w, r)
		return
	}
	ns, ok := podsNamespace(r.URL.Path)
	if !ok {
		writeStatus(w, notFound(r.URL.Path))
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, methodNotAllowed(r.Method))
		return
	}
	if !acceptsProtobuf(r.Header.Get("Accept")) {
		writeStatus(w, notAcceptable())
		return
	}
	opts, st := parseListOptions(r.URL.Query())
	if st != nil {
		writeStatus(w, st)
		return
	}
	if opts.watch {
		cs.serveWatch(w, r, ns, opts)
		return
	}
	cs.serveList(w, ns, opts)
}

// podsNamespace returns the namespace of a pods path ("" for all).
func podsNamespace(path string) (string, bool) {
	if path == podsPath {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, namespacesPath)
	if !ok {
		return "", false
	}
	ns, resource, ok := strings.Cut(rest, "/")
	return ns, ok && ns != "" && resource == "pods"
}

// acceptsProtobuf reports whether an Accept header admits protobuf.
func acceptsProtobuf(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch mediaType {
		case contentTypeProtobuf, "*/*", "application/*":
			return true
		}
	}
	return false
}
