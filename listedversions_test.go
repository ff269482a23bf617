package informer

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer/internal/wire"
)

// versionsServer serves pages of PartialObjectMetadataList, in protobuf or
// JSON, one per request in order, and records each request's query and
// headers.
type versionsServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []versionsRequest
}

type versionsRequest struct {
	Query          url.Values
	Accept         string
	AcceptEncoding string
}

func newVersionsServer(t *testing.T, asJSON bool, pages ...*metav1.PartialObjectMetadataList) *versionsServer {
	s := &versionsServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, versionsRequest{Query: req.URL.Query(), Accept: req.Header.Get("Accept"), AcceptEncoding: req.Header.Get("Accept-Encoding")})
		s.mu.Unlock()
		if n >= len(pages) {
			http.Error(rw, "no such page", http.StatusGone)
			return
		}
		page := pages[n].DeepCopy()
		page.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}
		var body bytes.Buffer
		if asJSON {
			rw.Header().Set("Content-Type", "application/json")
			if err := json.NewEncoder(&body).Encode(page); err != nil {
				t.Error(err)
			}
		} else {
			rw.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			if err := protobuf.NewSerializer(metainternalversionscheme.Scheme, metainternalversionscheme.Scheme).Encode(page, &body); err != nil {
				t.Error(err)
			}
		}
		_, _ = rw.Write(body.Bytes())
	}))
	t.Cleanup(s.Close)
	return s
}

func metadataItem(namespace, name, rv string) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
}

// TestReadListedVersions: a versions list is a consistent list of the
// resource's metadata, uncompressed, in pages of versionsPageSize with the
// ListerWatcher's selectors, read page after page (continue tokens) into
// each object's version at the first page's resource version, in
// protobuf without decoding the items and in JSON; a failure is an error
// wrapping errVersionsList.
func TestReadListedVersions(t *testing.T) {
	pages := []*metav1.PartialObjectMetadataList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "40", Continue: "next"}, Items: []metav1.PartialObjectMetadata{metadataItem("default", "a", "5"), metadataItem("kube-system", "b", "39")}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "40"}, Items: []metav1.PartialObjectMetadata{metadataItem("", "node-1", "7")}},
	}
	want := listedVersions{resourceVersion: "40", versions: map[ObjectName]string{
		{Namespace: "default", Name: "a"}: "5", {Namespace: "kube-system", Name: "b"}: "39", {Name: "node-1"}: "7",
	}}
	for _, asJSON := range []bool{false, true} {
		name := "protobuf"
		if asJSON {
			name = "JSON"
		}
		t.Run(name, func(t *testing.T) {
			srv := newVersionsServer(t, asJSON, pages...)
			got, err := readListedVersions(plCtx(t), srv.Client(), srv.URL+"/api/v1/pods", metav1.ListOptions{LabelSelector: "app=x", FieldSelector: "spec.nodeName=n", ResourceVersion: "0", Limit: 3})
			plMust(t, err)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(listedVersions{})); diff != "" {
				t.Errorf("listed versions (-want +got):\n%s", diff)
			}
			query := func(extra ...string) url.Values {
				q := url.Values{"labelSelector": {"app=x"}, "fieldSelector": {"spec.nodeName=n"}, "limit": {"500"}}
				for i := 0; i < len(extra); i += 2 {
					q[extra[i]] = []string{extra[i+1]}
				}
				return q
			}
			wantRequests := []versionsRequest{
				{Query: query(), Accept: versionsAccept, AcceptEncoding: "identity"},
				{Query: query("continue", "next"), Accept: versionsAccept, AcceptEncoding: "identity"},
			}
			if diff := cmp.Diff(wantRequests, srv.requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("failures", func(t *testing.T) {
		noRV := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "40"}, Items: []metav1.PartialObjectMetadata{metadataItem("default", "a", "")}}
		for name, srv := range map[string]*versionsServer{
			"an error status":                     newVersionsServer(t, false),
			"an item without a version, protobuf": newVersionsServer(t, false, noRV),
			"an item without a version, JSON":     newVersionsServer(t, true, noRV),
			"a list without a resource version":   newVersionsServer(t, false, &metav1.PartialObjectMetadataList{}),
			"a continued page that no longer is":  newVersionsServer(t, false, pages[0]),
		} {
			t.Run(name, func(t *testing.T) {
				got, err := readListedVersions(plCtx(t), srv.Client(), srv.URL+"/api/v1/pods", metav1.ListOptions{})
				if !errors.Is(err, errVersionsList) {
					t.Errorf("err = %v, want one wrapping errVersionsList", err)
				}
				if diff := cmp.Diff(listedVersions{}, got, cmp.AllowUnexported(listedVersions{})); diff != "" {
					t.Errorf("listed versions on failure (-want +got):\n%s", diff)
				}
			})
		}
	})
	t.Run("a page cut short", func(t *testing.T) {
		var body bytes.Buffer
		page := pages[1].DeepCopy()
		page.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}
		plMust(t, protobuf.NewSerializer(metainternalversionscheme.Scheme, metainternalversionscheme.Scheme).Encode(page, &body))
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = rw.Write(body.Bytes()[:body.Len()-10])
		}))
		defer srv.Close()
		_, err := readListedVersions(plCtx(t), srv.Client(), srv.URL+"/api/v1/pods", metav1.ListOptions{})
		if !errors.Is(err, errVersionsList) || !errors.Is(err, wire.ErrListStream) {
			t.Errorf("err = %v, want one wrapping errVersionsList and wire.ErrListStream", err)
		}
	})
}

// TestCatchUpSinkComparesListedVersions: the restored objects are caught
// up once every object they hold is at the version a list of the server's
// versions names and they hold nothing it does not, whether that holds
// when the list comes in or after the resumed watch's events; an object
// created and deleted since the snapshot is in neither.
func TestCatchUpSinkComparesListedVersions(t *testing.T) {
	restored := func() []*corev1.Pod {
		return []*corev1.Pod{NewPod("default", "a", "5"), NewPod("default", "b", "6"), NewPod("kube-system", "c", "7")}
	}
	listed := func(versions map[string]string) listedVersions {
		l := listedVersions{resourceVersion: "40", versions: map[ObjectName]string{}}
		for key, rv := range versions {
			name, err := cache.ParseObjectName(key)
			plMust(t, err)
			l.versions[name] = rv
		}
		return l
	}
	type event struct {
		verb string // add, update, delete
		pod  *corev1.Pod
	}
	for _, tc := range []struct {
		name   string
		listed map[string]string
		events []event
		// matchedAfter is how many events it takes to be caught up, -1
		// for never.
		matchedAfter int
	}{
		{"nothing changed", map[string]string{"default/a": "5", "default/b": "6", "kube-system/c": "7"}, nil, 0},
		{"one changed, its event not yet in", map[string]string{"default/a": "9", "default/b": "6", "kube-system/c": "7"}, nil, -1},
		{"changed, created and deleted, then their events", map[string]string{"default/a": "9", "default/d": "11", "kube-system/c": "7"},
			[]event{{"update", NewPod("default", "a", "9")}, {"add", NewPod("default", "d", "10")}, {"delete", NewPod("default", "b", "10")}, {"update", NewPod("default", "d", "11")}}, 4},
		{"created and deleted since: in neither", map[string]string{"default/a": "5", "default/b": "6", "kube-system/c": "7"},
			[]event{{"add", NewPod("default", "x", "8")}, {"delete", NewPod("default", "x", "9")}}, 0},
		{"an object the list does not name", map[string]string{"default/a": "5", "default/b": "6"}, nil, -1},
		{"an object the list names but not held", map[string]string{"default/a": "5", "default/b": "6", "kube-system/c": "7", "default/e": "3"}, nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			collected := newInitialObjects[*corev1.Pod](nil)
			for _, obj := range restored() {
				collected.index[NameOf(obj)] = len(collected.items)
				collected.items = append(collected.items, obj)
			}
			sink := &catchUpSink[*corev1.Pod]{initialObjects: collected, target: "30"}
			sink.compare(listed(tc.listed))
			matchedAfter := -1
			if sink.matched {
				matchedAfter = 0
			}
			for i, ev := range tc.events {
				switch ev.verb {
				case "add":
					plMust(t, sink.Add(ev.pod))
				case "update":
					plMust(t, sink.Update(ev.pod))
				case "delete":
					plMust(t, sink.Delete(ev.pod))
				}
				if sink.matched && matchedAfter < 0 {
					matchedAfter = i + 1
				}
			}
			if matchedAfter != tc.matchedAfter {
				t.Errorf("caught up by the listed versions after %d events, want %d (-1: never)", matchedAfter, tc.matchedAfter)
			}
		})
	}
}
