package informer_test

import (
	"mime"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// The request side of fakeAPIServer: paths, content negotiation, selectors.

func (w *fakeWatch) matches(m metav1.Object) bool {
	if w.namespace != "" && m.GetNamespace() != w.namespace {
		return false
	}
	return w.labels.Matches(labels.Set(m.GetLabels())) &&
		w.fields.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()})
}

// matching returns copies of the objects w selects, sorted by key. Call with
// s.mu held.
func (c *fakeCollection) matching(w *fakeWatch) []k8sruntime.Object {
	keys := make([]string, 0, len(c.objects))
	for key := range c.objects {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var out []k8sruntime.Object
	for _, key := range keys {
		m, _ := meta.Accessor(c.objects[key])
		if w.matches(m) {
			out = append(out, c.objects[key].DeepCopyObject())
		}
	}
	return out
}

// changesAfter returns copies of the changes w selects made after
// resourceVersion, none for "" or "0" (which ask for the latest state), or
// expired if some of those changes are no longer in the history (see
// LimitHistory). Call with s.mu held.
func (c *fakeCollection) changesAfter(w *fakeWatch, resourceVersion string) (out []watch.Event, expired bool) {
	after, err := strconv.Atoi(resourceVersion)
	if err != nil || after == 0 {
		return nil, false
	}
	if after < c.compacted {
		return nil, true
	}
	for _, ev := range c.history {
		m, _ := meta.Accessor(ev.Object)
		if rv, _ := strconv.Atoi(m.GetResourceVersion()); rv > after && w.matches(m) {
			out = append(out, watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()})
		}
	}
	return out, false
}

func newFakeWatch(namespace string, query map[string][]string) (*fakeWatch, error) {
	get := func(k string) string {
		if v := query[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ls, err := labels.Parse(get("labelSelector"))
	if err != nil {
		return nil, err
	}
	fs, err := fields.ParseSelector(get("fieldSelector"))
	if err != nil {
		return nil, err
	}
	return &fakeWatch{namespace: namespace, labels: ls, fields: fs, events: make(chan watch.Event, 1000)}, nil
}

// negotiate picks the response media type from an Accept header the way the
// API server does: the first acceptable entry wins. It reports whether the
// client asked for metadata only.
func negotiate(accept string, protobuf bool) (mediaType string, asMetadata, ok bool) {
	for _, entry := range strings.Split(accept, ",") {
		typ, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
		if err != nil {
			continue
		}
		as := params["as"]
		isMeta := as == "PartialObjectMetadata" || as == "PartialObjectMetadataList"
		if as != "" && (!isMeta || params["g"] != metav1.GroupName || params["v"] != "v1") {
			continue
		}
		switch {
		case typ == k8sruntime.ContentTypeProtobuf && (protobuf || isMeta):
			return typ, isMeta, true
		case typ == k8sruntime.ContentTypeJSON, typ == "*/*":
			return k8sruntime.ContentTypeJSON, isMeta, true
		}
	}
	return "", false, false
}

// toPartial returns the metadata of obj, as the server sends it for
// as=PartialObjectMetadata.
func toPartial(obj k8sruntime.Object) *metav1.PartialObjectMetadata {
	m, _ := meta.Accessor(obj)
	return meta.AsPartialObjectMetadata(m)
}

func selectedQuery(query map[string][]string) string {
	var parts []string
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := query[k]; len(v) > 0 {
			parts = append(parts, k+"="+v[0])
		}
	}
	return strings.Join(parts, "&")
}

func parseCollectionPath(path string) (schema.GroupVersionResource, string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gvr schema.GroupVersionResource
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gvr.Group, gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return gvr, "", false
	}
	namespace := ""
	if len(parts) == 3 && parts[0] == "namespaces" {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) != 1 {
		return gvr, "", false
	}
	gvr.Resource = parts[0]
	return gvr, namespace, true
}
