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
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A snapshot's scope: what must be equal for two informers' caches to hold
// the same objects, built in one place (newSnapshotScope) from the
// informer's configuration and what its ListerWatcher lists and from
// where (listedScope, from the describedListerWatcher contract).

// snapshotScope is what must be equal for two informers' caches to hold
// the same objects: a snapshot is only restored into an informer of the
// same scope.
type snapshotScope struct {
	Type          string   `json:"type"`
	Resource      string   `json:"resource"`
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	FieldSelector string   `json:"fieldSelector,omitempty"`
	Shard         string   `json:"shard,omitempty"`
	DropFields    []string `json:"dropFields,omitempty"`
	TransformID   string   `json:"transformID,omitempty"`
	ScopeID       string   `json:"scopeID,omitempty"`
	// Server names the API server the objects were listed from; zero for
	// a ListerWatcher that does not say (see describedListerWatcher).
	Server serverIdentity `json:"server,omitzero"`
}

// differences names the fields in which s and o differ.
func (s snapshotScope) differences(o snapshotScope) []string {
	var diff []string
	for _, f := range []struct {
		name string
		a, b string
	}{
		{"type", s.Type, o.Type},
		{"resource", s.Resource, o.Resource},
		{"name", s.Name, o.Name},
		{"namespace", s.Namespace, o.Namespace},
		{"label selector", s.LabelSelector, o.LabelSelector},
		{"field selector", s.FieldSelector, o.FieldSelector},
		{"shard", s.Shard, o.Shard},
		{"transform", s.TransformID, o.TransformID},
		{"scope id", s.ScopeID, o.ScopeID},
		{"server", s.Server.Host, o.Server.Host},
		{"server CA", s.Server.CA, o.Server.CA},
		{"cluster", s.Server.Cluster, o.Server.Cluster},
	} {
		if f.a != f.b {
			diff = append(diff, fmt.Sprintf("%s %q (want %q)", f.name, f.a, f.b))
		}
	}
	if !slices.Equal(s.DropFields, o.DropFields) {
		diff = append(diff, fmt.Sprintf("dropped fields %q (want %q)", s.DropFields, o.DropFields))
	}
	return diff
}

// serverIdentity names the API server a ListerWatcher lists from: a
// snapshot written from one server is never restored from another. The
// cluster behind a server can change while its address and CA stay (a
// cluster re-created, etcd restored from a backup): the UID of its
// kube-system namespace, read at start (snapshotHeader.ClusterUID), and
// the snapshot's resource version, which must not be ahead of the
// server's, tell those apart.
type serverIdentity struct {
	// Host is the server's URL as the client reaches it: the config's
	// Host and APIPath.
	Host string `json:"host,omitempty"`
	// CA is a digest of the certificate authorities the client trusts
	// (the config's CAData or CAFile); empty when it uses the system's.
	CA string `json:"ca,omitempty"`
	// Cluster is the name a fleet gives the cluster; empty outside one.
	Cluster string `json:"cluster,omitempty"`
}

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

// listedScope is what a ListerWatcher lists and from where: its part of
// a snapshot's scope, and how to read the cluster's UID.
type listedScope struct {
	resource                     schema.GroupVersionResource
	namespace                    string
	labelSelector, fieldSelector string
	// dropFields are its DropFields, sorted.
	dropFields []string
	server     serverIdentity
	// clusterUID, if set, reads the UID of the server's kube-system
	// namespace (see readClusterUID).
	clusterUID func(ctx context.Context) (string, error)
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

// newSnapshotScope builds the snapshot scope of an informer of the
// resolved configuration cfg, whose objects are of itemType (see
// snapshotItemType), over lw: the one place a scope is built. What lw
// lists (resource, namespace, selectors, dropped fields, server) comes
// from lw itself if it describes itself (describedListerWatcher), so that
// it is right however the informer was made; otherwise the resource is
// cfg's and the rest is for Snapshot.ScopeID to name. It also returns
// what lw lists, with the resource so resolved.
func newSnapshotScope[T Object](cfg config[T], itemType reflect.Type, lw ListerWatcher[T]) (snapshotScope, listedScope) {
	scope := snapshotScope{Type: snapshotTypeName(itemType), Name: cfg.Name, TransformID: cfg.Snapshot.TransformID, ScopeID: cfg.Snapshot.ScopeID}
	var listed listedScope
	if d, ok := describe(lw); ok {
		listed = d.listed
		scope.Namespace, scope.LabelSelector, scope.FieldSelector = listed.namespace, listed.labelSelector, listed.fieldSelector
		scope.DropFields, scope.Server = listed.dropFields, listed.server
	}
	if listed.resource.Empty() {
		listed.resource = cfg.Resource
	}
	scope.Resource = listed.resource.String()
	if cfg.Shard != nil {
		scope.Shard = fmt.Sprintf("%s %d/%d", cfg.Shard.key(), cfg.Shard.Index, cfg.Shard.Count)
	}
	return scope, listed
}

// snapshotTypeName names typ in a scope: its package path and name.
func snapshotTypeName(typ reflect.Type) string {
	if typ.Kind() == reflect.Pointer {
		return "*" + typ.Elem().PkgPath() + "." + typ.Elem().Name()
	}
	return typ.String()
}

// snapshotItemType returns the type of the objects of an informer of T: T
// itself, or example's type if T is an interface type; an error if
// example is no pointer to a struct implementing T.
func snapshotItemType[T Object](example any) (reflect.Type, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Interface {
		return typ, nil
	}
	if example == nil {
		return nil, fmt.Errorf("the informer's objects are of the interface type %v and Snapshot.Example does not name their concrete type", typ)
	}
	ex := reflect.TypeOf(example)
	if ex.Kind() != reflect.Pointer || ex.Elem().Kind() != reflect.Struct || !ex.Implements(typ) {
		return nil, fmt.Errorf("Snapshot.Example is a %v, not a pointer to a struct implementing %v", ex, typ)
	}
	return ex, nil
}

// sensitivity returns why objects of itemType listed from resource may
// not be written without AllowSensitive, or "": Secrets, typed or as
// metadata-only or unstructured objects of the resource; objects marked
// Sensitive; and metadata-only or unstructured objects of a resource
// nobody named, which could be Secrets.
func sensitivity(itemType reflect.Type, resource schema.GroupVersionResource, opts SnapshotOptions) string {
	switch {
	case opts.AllowSensitive:
		return ""
	case opts.Sensitive:
		return "Snapshot.Sensitive is set and Snapshot.AllowSensitive is not"
	case itemType == reflect.TypeFor[*corev1.Secret](), resource.Group == "" && resource.Resource == "secrets":
		return "the objects are Secrets and Snapshot.AllowSensitive is not set"
	case resource.Empty() && (itemType == reflect.TypeFor[*unstructured.Unstructured]() || itemType == reflect.TypeFor[*metav1.PartialObjectMetadata]()):
		return "the resource of these metadata-only or unstructured objects is not known (they could be Secrets): set InformerOptions.Resource"
	}
	return ""
}
