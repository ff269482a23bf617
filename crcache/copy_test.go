package crcache

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// plainGVK is the kind of plainObject, a type written by hand with
// DeepCopyObject and no DeepCopyInto of its own (ObjectMeta's, promoted,
// copies only the metadata).
var plainGVK = schema.GroupVersionKind{Group: "plain.example.com", Version: "v1", Kind: "Plain"}

type plainObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]string `json:"data,omitempty"`
}

func (p *plainObject) DeepCopyObject() runtime.Object {
	out := &plainObject{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy()}
	if p.Data != nil {
		out.Data = make(map[string]string, len(p.Data))
		for k, v := range p.Data {
			out.Data[k] = v
		}
	}
	return out
}

type plainObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []plainObject `json:"items"`
}

func (l *plainObjectList) DeepCopyObject() runtime.Object {
	out := &plainObjectList{TypeMeta: l.TypeMeta, ListMeta: *l.ListMeta.DeepCopy()}
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*plainObject))
	}
	return out
}

var registerPlain sync.Once

// plainOptions are testOptions with plainObject known to the scheme the
// fake cluster uses and to the mapper.
func plainOptions(t *testing.T) (cluster *fakeCluster, opts cache.Options) {
	registerPlain.Do(func() {
		scheme.Scheme.AddKnownTypeWithName(plainGVK, &plainObject{})
		scheme.Scheme.AddKnownTypeWithName(plainGVK.GroupVersion().WithKind("PlainList"), &plainObjectList{})
	})
	opts = testOptions(t)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(plainGVK, meta.RESTScopeNamespace)
	opts.Mapper = meta.MultiRESTMapper{opts.Mapper, mapper}
	cluster = newFakeCluster()
	for _, name := range []string{"a", "b"} {
		cluster.Create(&plainObject{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": name}})
	}
	return cluster, opts
}

// TestTypeWithoutDeepCopyInto: a type with DeepCopyObject alone is cached
// and read as controller-runtime's cache reads it (which copies every
// object with DeepCopyObject): equal objects, copies that changing leaves
// the cache alone. It was refused ("has no DeepCopyInto method").
func TestTypeWithoutDeepCopyInto(t *testing.T) {
	cluster, opts := plainOptions(t)
	ours := newTestCache(t, cluster, opts)
	theirs := newControllerRuntimeCache(t, cluster, opts)
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "ns", Name: "a"}
	var got, want plainObject
	if err := ours.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if err := theirs.Get(ctx, key, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-controller-runtime +crcache):\n%s", diff)
	}
	got.Data["k"] = "changed"
	got.Labels["app"] = "changed"

	var gotList, wantList plainObjectList
	if err := ours.List(ctx, &gotList, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if err := theirs.List(ctx, &wantList, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	byName := cmp.Transformer("byName", func(items []plainObject) map[string]plainObject {
		m := map[string]plainObject{}
		for _, item := range items {
			m[item.Name] = item
		}
		return m
	})
	if diff := cmp.Diff(wantList, gotList, byName); diff != "" {
		t.Errorf("List after changing a copy (-controller-runtime +crcache):\n%s", diff)
	}
}
