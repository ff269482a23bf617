package informer_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// idxKeys returns the sorted keys of objs, which must be pods.
func idxKeys(t *testing.T, objs []any) []string {
	t.Helper()
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			t.Fatalf("got a %T, want a *v1.Pod", obj)
		}
		keys = append(keys, informer.KeyOf(pod))
	}
	slices.Sort(keys)
	return keys
}

// newAdaptedIndexer returns an Indexer with a namespace index, its
// cache.Indexer view, and three stored pods.
func newAdaptedIndexer(t *testing.T) (*informer.Indexer[*corev1.Pod], cache.Indexer) {
	t.Helper()
	idx := informer.NewIndexer(map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]})
	ci := informer.AsIndexer(idx)
	for _, p := range []*corev1.Pod{informer.NewPod("ns", "a", "1", informer.PodLabels(map[string]string{"app": "a"}), informer.PodNode("n1")), informer.NewPod("ns", "b", "2", informer.PodLabels(map[string]string{"app": "b"}), informer.PodNode("n2")), informer.NewPod("other", "c", "3", informer.PodLabels(map[string]string{"app": "c"}), informer.PodNode("n1"))} {
		if err := ci.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return idx, ci
}

func TestAsIndexerReads(t *testing.T) {
	idx, ci := newAdaptedIndexer(t)
	stored, _, _ := idx.GetByKey("ns/a")

	type lookup struct {
		Value  any
		Exists bool
		Err    bool
	}
	get := func(item any, exists bool, err error) lookup { return lookup{item, exists, err != nil} }
	got := map[string]lookup{
		"pod":          get(ci.Get(informer.NewPod("ns", "a", "9", informer.PodLabels(map[string]string{"app": "a"})))),
		"metadata":     get(ci.Get(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})),
		"explicit key": get(ci.Get(cache.ExplicitKey("ns/a"))),
		"tombstone":    get(ci.Get(cache.DeletedFinalStateUnknown{Key: "ns/a"})),
		"by key":       get(ci.GetByKey("ns/a")),
		"missing":      get(ci.GetByKey("ns/zz")),
		"missing pod":  get(ci.Get(informer.NewPod("ns", "zz", "1", informer.PodLabels(map[string]string{"app": "zz"})))),
		"not keyable":  get(ci.Get(42)),
	}
	want := map[string]lookup{
		"pod":          {stored, true, false},
		"metadata":     {stored, true, false},
		"explicit key": {stored, true, false},
		"tombstone":    {stored, true, false},
		"by key":       {stored, true, false},
		"missing":      {nil, false, false},
		"missing pod":  {nil, false, false},
		"not keyable":  {nil, false, true},
	}
	// Compare identities: the values must be the stored objects themselves.
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *corev1.Pod) bool { return a == b })); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}

	ns, err := ci.ByIndex(informer.NamespaceIndex, "ns")
	if err != nil {
		t.Fatal(err)
	}
	sameNS, err := ci.Index(informer.NamespaceIndex, informer.NewPod("other", "x", "1", informer.PodLabels(map[string]string{"app": "x"})))
	if err != nil {
		t.Fatal(err)
	}
	indexKeys, err := ci.IndexKeys(informer.NamespaceIndex, "ns")
	if err != nil {
		t.Fatal(err)
	}
	values := ci.ListIndexFuncValues(informer.NamespaceIndex)
	slices.Sort(values)
	listKeys := ci.ListKeys()
	slices.Sort(listKeys)
	gotLists := map[string][]string{
		"List":                idxKeys(t, ci.List()),
		"ListKeys":            listKeys,
		"ByIndex":             idxKeys(t, ns),
		"Index":               idxKeys(t, sameNS),
		"IndexKeys":           indexKeys,
		"ListIndexFuncValues": values,
	}
	wantLists := map[string][]string{
		"List":                {"ns/a", "ns/b", "other/c"},
		"ListKeys":            {"ns/a", "ns/b", "other/c"},
		"ByIndex":             {"ns/a", "ns/b"},
		"Index":               {"other/c"},
		"IndexKeys":           {"ns/a", "ns/b"},
		"ListIndexFuncValues": {"ns", "other"},
	}
	if diff := cmp.Diff(wantLists, gotLists); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
	// Generated listers look namespaces up with a *metav1.ObjectMeta.
	byMeta, err := ci.Index(informer.NamespaceIndex, &metav1.ObjectMeta{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/b"}, idxKeys(t, byMeta)); diff != "" {
		t.Errorf("Index(namespace, ObjectMeta) (-want +got):\n%s", diff)
	}
	if err := ci.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []any{&metav1.ObjectMeta{Namespace: "ns"}, &corev1.ConfigMap{}, nil} {
		if _, err := ci.Index("node", obj); err == nil {
			t.Errorf("Index(node, %T) succeeded, want an error (not a pod)", obj)
		}
	}
	if _, err := ci.ByIndex("unknown", "x"); err == nil {
		t.Error("ByIndex of an unknown index succeeded")
	}
}

func TestAsIndexerWrites(t *testing.T) {
	idx, ci := newAdaptedIndexer(t)
	wrong := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	errs := map[string]error{
		"add":               ci.Add(wrong),
		"update":            ci.Update(wrong),
		"delete":            ci.Delete(wrong),
		"delete tombstone":  ci.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: wrong}),
		"delete nil":        ci.Delete(nil),
		"replace":           ci.Replace([]any{informer.NewPod("ns", "new", "9", informer.PodLabels(map[string]string{"app": "new"})), wrong}, "9"),
		"add nil pod":       ci.Add((*corev1.Pod)(nil)),
		"add with no value": ci.Add(nil),
	}
	for op, err := range errs {
		if err == nil {
			t.Errorf("%s: succeeded, want an error", op)
		}
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "other/c"}, idxKeys(t, ci.List())); diff != "" {
		t.Fatalf("failed writes changed the store (-want +got):\n%s", diff)
	}

	if err := ci.Update(informer.NewPod("ns", "a", "4", informer.PodLabels(map[string]string{"app": "a"}), informer.PodNode("n2"))); err != nil {
		t.Fatal(err)
	}
	if err := ci.Delete(informer.NewPod("ns", "b", "5", informer.PodLabels(map[string]string{"app": "b"}))); err != nil {
		t.Fatal(err)
	}
	if err := ci.Delete(cache.DeletedFinalStateUnknown{Key: "other/c", Obj: informer.NewPod("other", "c", "3", informer.PodLabels(map[string]string{"app": "c"}))}); err != nil {
		t.Fatal(err)
	}
	a, _, _ := idx.GetByKey("ns/a")
	if diff := cmp.Diff([]string{"ns/a"}, idxKeys(t, ci.List())); diff != "" {
		t.Errorf("keys after update and deletes (-want +got):\n%s", diff)
	}
	if a.ResourceVersion != "4" {
		t.Errorf("ns/a at resource version %s, want 4", a.ResourceVersion)
	}

	if err := ci.Replace([]any{informer.NewPod("x", "p", "7", informer.PodLabels(map[string]string{"app": "p"})), informer.NewPod("x", "q", "8", informer.PodLabels(map[string]string{"app": "q"}))}, "10"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"x/p", "x/q"}, idxKeys(t, ci.List())); diff != "" {
		t.Errorf("keys after Replace (-want +got):\n%s", diff)
	}
	ci.Bookmark("11")
	if got := ci.LastStoreSyncResourceVersion(); got != "11" {
		t.Errorf("LastStoreSyncResourceVersion() = %q, want 11", got)
	}
	if err := ci.Resync(); err != nil {
		t.Errorf("Resync() = %v", err)
	}
}

func TestAsIndexerIndexFunctions(t *testing.T) {
	idx, ci := newAdaptedIndexer(t)
	err := ci.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	onN1, err := ci.ByIndex("node", "n1")
	if err != nil {
		t.Fatal(err)
	}
	// The typed Indexer sees the index too.
	typedOnN1, err := idx.ByIndex("node", "n1")
	if err != nil {
		t.Fatal(err)
	}
	typedKeys := make([]string, 0, len(typedOnN1))
	for _, p := range typedOnN1 {
		typedKeys = append(typedKeys, informer.KeyOf(p))
	}
	slices.Sort(typedKeys)
	if diff := cmp.Diff(map[string][]string{"adapter": {"ns/a", "other/c"}, "typed": {"ns/a", "other/c"}},
		map[string][]string{"adapter": idxKeys(t, onN1), "typed": typedKeys}); diff != "" {
		t.Errorf("ByIndex(node, n1) (-want +got):\n%s", diff)
	}
	if err := ci.AddIndexers(cache.Indexers{"nil": nil}); err == nil {
		t.Error("adding a nil index function succeeded")
	}

	// GetIndexers returns functions that work on pods and fail on others.
	funcs := ci.GetIndexers()
	values, err := funcs["node"](informer.NewPod("ns", "z", "1", informer.PodLabels(map[string]string{"app": "z"}), informer.PodNode("n7")))
	if err != nil {
		t.Fatal(err)
	}
	nsValues, err := funcs[informer.NamespaceIndex](informer.NewPod("ns7", "z", "1", informer.PodLabels(map[string]string{"app": "z"})))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"n7"}, {"ns7"}}, [][]string{values, nsValues}); diff != "" {
		t.Errorf("GetIndexers functions (-want +got):\n%s", diff)
	}
	if _, err := funcs["node"](&corev1.ConfigMap{}); err == nil {
		t.Error("an index function returned by GetIndexers accepted a ConfigMap")
	}
}

func TestAsIndexerServesGeneratedListers(t *testing.T) {
	_, ci := newAdaptedIndexer(t)
	lister := corelisters.NewPodLister(ci)
	all, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	inNS, err := lister.Pods("ns").List(labels.SelectorFromSet(labels.Set{"app": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{"all": idxPodKeys(all), "ns, app=b": idxPodKeys(inNS)}
	want := map[string][]string{"all": {"ns/a", "ns/b", "other/c"}, "ns, app=b": {"ns/b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lister results (-want +got):\n%s", diff)
	}
	if _, err := lister.Pods("ns").Get("zz"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing pod: %v, want NotFound", err)
	}

	// Without a namespace index, the generated lister falls back to
	// filtering every object, as with client-go's indexers.
	plain := informer.AsIndexer(informer.NewIndexer[*corev1.Pod](nil))
	for _, p := range []*corev1.Pod{informer.NewPod("ns", "a", "1", informer.PodLabels(map[string]string{"app": "a"})), informer.NewPod("other", "c", "2", informer.PodLabels(map[string]string{"app": "c"}))} {
		if err := plain.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plain.Index(informer.NamespaceIndex, &metav1.ObjectMeta{Namespace: "ns"}); err == nil {
		t.Error("Index of a missing namespace index succeeded")
	}
	inNS, err = corelisters.NewPodLister(plain).Pods("ns").List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a"}, idxPodKeys(inNS)); diff != "" {
		t.Errorf("lister without a namespace index (-want +got):\n%s", diff)
	}
}

func idxPodKeys(pods []*corev1.Pod) []string {
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, informer.KeyOf(p))
	}
	slices.Sort(keys)
	return keys
}
