package informer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// What the ListerWatchers built from a *rest.Config list and from which
// server (listedScope, serverIdentity: listwatch.go), as they tell the
// informer (describedListerWatcher) for a snapshot's scope.

// serverIdentityOf returns the identity of the server config points to.
func serverIdentityOf(config *rest.Config) serverIdentity {
	id := serverIdentity{Host: strings.TrimSuffix(config.Host, "/")}
	if path := strings.Trim(config.APIPath, "/"); path != "" {
		id.Host += "/" + path
	}
	ca := config.CAData
	if len(ca) == 0 && config.CAFile != "" {
		// Read now, as the client reads it when it is built; a file that
		// cannot be read makes the client fail anyway.
		ca, _ = os.ReadFile(config.CAFile)
	}
	if len(ca) > 0 {
		sum := sha256.Sum256(ca)
		id.CA = hex.EncodeToString(sum[:16])
	}
	return id
}

// listedScopeOf is the listedScope of a ListerWatcher built from config
// and opts listing resource, whose requests go through client (without
// its DropFields transport).
func listedScopeOf(config *rest.Config, opts RESTOptions, resource schema.GroupVersionResource, client *http.Client) listedScope {
	l := listedScope{resource: resource, namespace: opts.Namespace, server: serverIdentityOf(config)}
	l.labelSelector, l.fieldSelector = selectorsOf(opts.TweakListOptions)
	l.dropFields = slices.Compact(slices.Sorted(slices.Values(opts.DropFields)))
	if base, _, err := rest.DefaultServerUrlFor(config); err == nil {
		url := base.JoinPath("api", "v1", "namespaces", "kube-system").String()
		l.clusterUID = func(ctx context.Context) (string, error) { return readClusterUID(ctx, client, url) }
		listURL := base.JoinPath(resourceListPath(resource, opts.Namespace)...).String()
		tweak := opts.TweakListOptions
		l.versions = func(ctx context.Context) (listedVersions, error) {
			var options metav1.ListOptions
			if tweak != nil {
				tweak(&options)
			}
			return readListedVersions(ctx, client, listURL, options)
		}
	}
	return l
}

// selectorsOf returns the label and field selectors tweak sets.
func selectorsOf(tweak func(*metav1.ListOptions)) (label, field string) {
	if tweak == nil {
		return "", ""
	}
	var options metav1.ListOptions
	tweak(&options)
	return options.LabelSelector, options.FieldSelector
}

// errClusterUIDUnknown is returned by readClusterUID when the server does
// not let the client read its kube-system namespace (403, 404): the
// cluster cannot be told apart by its UID.
var errClusterUIDUnknown = errors.New("the cluster's kube-system namespace cannot be read")

// readClusterUID reads the UID of the kube-system namespace at url, the
// usual identity of a Kubernetes cluster: a cluster created again gets
// another. It returns errClusterUIDUnknown when the client may not read
// it; any other error is the request's.
func readClusterUID(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading the cluster's identity: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the cluster's identity: %w", err)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized:
		return "", fmt.Errorf("%w: %s", errClusterUIDUnknown, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("reading the cluster's identity: %s", resp.Status)
	}
	var ns struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &ns); err != nil || ns.Metadata.UID == "" {
		return "", fmt.Errorf("%w: the response holds no UID", errClusterUIDUnknown)
	}
	return ns.Metadata.UID, nil
}
