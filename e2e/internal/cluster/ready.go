package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// readyPollInterval is how often waitUntil asks a starting server whether it
// is ready.
const readyPollInterval = 100 * time.Millisecond

// waitUntil calls check until it succeeds, failing early when p exits and
// late when ctx is done; errors carry the end of p's log.
func waitUntil(ctx context.Context, p *process, check func(context.Context) error) error {
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	var last error
	for {
		if done, exitErr := p.exited(); done {
			err := fmt.Errorf("%s exited while starting (%v); end of %s:\n%s", p.name, exitErr, p.logPath, p.logTail(30))
			if p.logContains("address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(checkCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v); end of %s:\n%s", p.name, context.Cause(ctx), last, p.logPath, p.logTail(30))
		case <-ticker.C:
		}
	}
}

// etcdHealthy returns a check, through client, that etcd at url serves and
// has a leader.
func etcdHealthy(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := get(ctx, client, url+"/health", "")
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"health":"true"`) {
			return fmt.Errorf("etcd /health: %s", body)
		}
		return nil
	}
}

// apiserverReady checks the API server's /readyz. It trusts the self-signed
// certificate the server generates at start, once that has been written, and
// keeps its CA for the clients' configuration.
type apiserverReady struct {
	host, token, caFile string
	ca                  []byte
	client              *http.Client
}

func (r *apiserverReady) check(ctx context.Context) error {
	if r.client == nil {
		ca, err := os.ReadFile(r.caFile)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no serving certificate yet")
		}
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			// Caught mid-write; the next check reads it again.
			return fmt.Errorf("serving certificate %s is not PEM yet", r.caFile)
		}
		r.ca = ca
		r.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	body, err := get(ctx, r.client, r.host+"/readyz", r.token)
	if err != nil {
		return err
	}
	if strings.TrimSpace(body) != "ok" {
		return fmt.Errorf("/readyz: %s", body)
	}
	return nil
}

// close closes the idle connections of the checks, so that no connection
// outlives the wait.
func (r *apiserverReady) close() {
	if r.client != nil {
		r.client.CloseIdleConnections()
	}
}

// get returns the body of a successful GET, sending token as a bearer token
// if it is not empty.
func get(ctx context.Context, client *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
