package replayserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// controlPrefix is where a cluster's control endpoints are, beside the API:
//
//	POST /replay/write?count=N    the writer changes N pods; the changes as JSON
//	POST /replay/expire           ends every watch and compacts the history
//	GET  /replay/stats            what the cluster served, as JSON (Stats)
const controlPrefix = "/replay/"

// Stats is what a cluster has served.
type Stats struct {
	// ResourceVersion is the cluster's latest resource version.
	ResourceVersion uint64 `json:"resourceVersion"`
	// Lists counts lists (first pages), Pages every page, Watches every
	// watch and WatchLists the streaming lists among them.
	Lists      int64 `json:"lists"`
	Pages      int64 `json:"pages"`
	Watches    int64 `json:"watches"`
	WatchLists int64 `json:"watchLists"`
	// OpenWatches is the number of watches being served now.
	OpenWatches int64 `json:"openWatches"`
	// Bytes is what lists and watches have written.
	Bytes int64 `json:"bytes"`
}

// writeResponse is the body of a write's response.
type writeResponse struct {
	Writes []Write `json:"writes"`
}

// expireResponse is the body of an expiry's response.
type expireResponse struct {
	ResourceVersion uint64 `json:"resourceVersion"`
}

// serveControl answers the control endpoints.
func (cs *clusterServer) serveControl(w http.ResponseWriter, r *http.Request) {
	var body any
	switch op := r.URL.Path[len(controlPrefix):]; {
	case op == "write" && r.Method == http.MethodPost:
		count, err := strconv.Atoi(r.URL.Query().Get("count"))
		if err != nil || count < 0 {
			http.Error(w, "count must be a number of pods", http.StatusBadRequest)
			return
		}
		body = writeResponse{Writes: cs.history.write(count)}
	case op == "expire" && r.Method == http.MethodPost:
		body = expireResponse{ResourceVersion: cs.history.expire()}
	case op == "stats" && r.Method == http.MethodGet:
		body = cs.snapshotStats()
	default:
		http.Error(w, "unknown control endpoint "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// snapshotStats returns the cluster's counters.
func (cs *clusterServer) snapshotStats() Stats {
	return Stats{
		ResourceVersion: cs.history.current(),
		Lists:           cs.stats.lists.Load(),
		Pages:           cs.stats.pages.Load(),
		Watches:         cs.stats.watches.Load(),
		WatchLists:      cs.stats.watchLists.Load(),
		OpenWatches:     cs.stats.openWatches.Load(),
		Bytes:           cs.stats.bytes.Load(),
	}
}

// Cluster is one cluster of a replay server, as a client sees it: its
// address, for an informer's *rest.Config, and its control endpoints. Its
// methods are safe for concurrent use.
type Cluster struct {
	// URL is the cluster's address, http://127.0.0.1:port.
	URL string `json:"url"`
}

// Config returns a *rest.Config for the cluster: plain HTTP to its
// address, no credentials, and no client-side rate limit (QPS -1), as the
// benchmarks' clients use against a real server. Set ContentType to
// protobuf on a copy for a typed clientset; the server answers only
// protobuf.
func (c Cluster) Config() *rest.Config {
	return &rest.Config{Host: c.URL, QPS: -1}
}

// controlClient is the HTTP client of the control endpoints.
var controlClient = &http.Client{Timeout: 5 * time.Minute}

// Write has the writer change count pods of the cluster (one status update
// each, spread over the cluster) and returns the changes, in order, with
// the server's times.
func (c Cluster) Write(ctx context.Context, count int) ([]Write, error) {
	var out writeResponse
	err := c.control(ctx, http.MethodPost, "write", url.Values{"count": {strconv.Itoa(count)}}, &out)
	return out.Writes, err
}

// Expire ends every watch of the cluster and compacts its history past the
// latest resource version, so that every client must list again (a watch
// resumed from what it has seen gets "410 Gone"). It returns the new latest
// resource version.
func (c Cluster) Expire(ctx context.Context) (uint64, error) {
	var out expireResponse
	err := c.control(ctx, http.MethodPost, "expire", nil, &out)
	return out.ResourceVersion, err
}

// Stats returns what the cluster has served.
func (c Cluster) Stats(ctx context.Context) (Stats, error) {
	var out Stats
	err := c.control(ctx, http.MethodGet, "stats", nil, &out)
	return out, err
}

// control calls endpoint op and decodes its JSON answer into out.
func (c Cluster) control(ctx context.Context, method, op string, query url.Values, out any) error {
	u := c.URL + controlPrefix + op
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := controlClient.Do(req)
	if err != nil {
		return fmt.Errorf("replayserver %s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("replayserver %s: %s: %s", op, resp.Status, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("replayserver %s: decoding the answer: %w", op, err)
	}
	return nil
}
