package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// CompactEtcd compacts etcd's history at its current revision, through its
// JSON gateway, and returns that revision: a watch or list of any of the
// cluster's API servers from an older resource version that etcd serves is
// refused with "410 Gone" from now on. (A server's watch cache may still
// serve what it holds.)
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	// A range read of any key answers with the current revision.
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := c.etcdPost(ctx, "/v3/kv/range", `{"key":"L2NvbXBhY3Q=","count_only":true}`, &status); err != nil {
		return 0, err
	}
	revision, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd's revision %q: %w", status.Header.Revision, err)
	}
	body := fmt.Sprintf(`{"revision":"%d","physical":true}`, revision)
	if err := c.etcdPost(ctx, "/v3/kv/compaction", body, nil); err != nil {
		return 0, fmt.Errorf("compacting at revision %d: %w", revision, err)
	}
	return revision, nil
}

// etcdPost posts body to path of etcd's JSON gateway and decodes the
// response into out, unless nil.
func (c *Cluster) etcdPost(ctx context.Context, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	client := &http.Client{}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("etcd %s: %w: %s", path, err, data)
		}
	}
	return nil
}
