package informer_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/testkit"
)

// podDropFields are the paths the projection tests drop from pods: one of
// each kind (a field, a map entry, a field of each element of a list, a
// list).
var podDropFields = []string{
	informer.ManagedFields,
	"metadata.annotations[" + lastApplied + "]",
	"spec.containers.env",
	"status.conditions",
}

// clearPodDropFields clears from a copy of pod what podDropFields drops.
func clearPodDropFields(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.ManagedFields = nil
	delete(pod.Annotations, lastApplied)
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = nil
	}
	pod.Status.Conditions = nil
	return pod
}

// randomPod returns a pod with random contents in the fields the
// projection tests drop and around them: each of them is sometimes absent,
// sometimes empty, sometimes full.
func randomPod(rng *rand.Rand, i int) *corev1.Pod {
	pick := func(n int) int { return rng.IntN(n) }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%3), Name: fmt.Sprintf("pod-%d", i)}}
	if pick(4) > 0 {
		pod.Labels = map[string]string{}
		for j := range pick(4) {
			pod.Labels[fmt.Sprintf("l%d.example.com/k", j)] = fmt.Sprintf("v-%d", pick(100))
		}
	}
	if pick(4) > 0 {
		pod.Annotations = map[string]string{}
		if pick(2) == 0 {
			pod.Annotations[lastApplied] = strings.Repeat(`{"a":"\"b\""}`, pick(50))
		}
		for j := range pick(4) {
			pod.Annotations[fmt.Sprintf("a%d", j)] = fmt.Sprintf("v\n%d", pick(100))
		}
	}
	for j := range pick(4) {
		pod.ManagedFields = append(pod.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: fmt.Sprintf("m%d", j), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fmt.Sprintf(`{"f:metadata":{"f:labels":{"f:l%d":{}}}}`, pick(9)))},
		})
	}
	if pick(5) > 0 {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-1"}}
	}
	for j := range 1 + pick(3) {
		c := corev1.Container{Name: fmt.Sprintf("c%d", j), Image: fmt.Sprintf("registry.example.com/img:%d", pick(9))}
		for k := range pick(5) {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("E%d", k), Value: strings.Repeat("x", pick(30))})
		}
		if pick(2) == 0 {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 1+pick(900)))}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	pod.Spec.NodeName = fmt.Sprintf("node-%d", pick(5))
	pod.Status.Phase = corev1.PodRunning
	for j := range pick(5) {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(fmt.Sprintf("C%d", j)), Status: corev1.ConditionTrue})
	}
	if pick(2) == 0 {
		pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", pick(250))
	}
	return pod
}

// projectionOpts compare a projected decode with a full one: the
// protobuf and JSON decoders differ in empty against nil maps and slices.
var projectionOpts = cmpopts.EquateEmpty()

// checkProjectedList builds two ListerWatchers with newLW, full with opts
// and projected with opts and drop, and checks that projected lists what
// full lists with clear applied to each item (compared with cmpOpts). It
// returns both and the list's resource version.
func checkProjectedList[T informer.Object](t *testing.T, newLW func(*rest.Config, informer.RESTOptions) (informer.ListerWatcher[T], error),
	config *rest.Config, opts informer.RESTOptions, drop []string, clear func(T) T, cmpOpts ...cmp.Option,
) (full, projected informer.ListerWatcher[T], resourceVersion string) {
	t.Helper()
	full, err := newLW(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.DropFields = drop
	projected, err = newLW(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	fullList, err := full.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	projectedList, err := projected.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, obj := range fullList.Items {
		fullList.Items[i] = clear(obj)
	}
	if diff := cmp.Diff(fullList, projectedList, cmpOpts...); diff != "" {
		t.Errorf("projected list (-full with the fields cleared +projected):\n%s", diff)
	}
	return full, projected, fullList.ResourceVersion
}

func TestDropFieldsTypedPods(t *testing.T) {
	for _, contentType := range []informer.ContentType{informer.ContentTypeProtobuf, informer.ContentTypeJSON} {
		t.Run(string(contentType), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(contentType))))
			srv := newFakeAPIServer(t)
			srv.Serve(podsResource, podKind, true)
			for i := range 40 {
				srv.Create(podsResource, randomPod(rng, i))
			}
			full, projected, rv := checkProjectedList(t, informer.NewRESTListerWatcher[*corev1.Pod], srv.Config(),
				informer.RESTOptions{ContentType: contentType}, podDropFields, clearPodDropFields, projectionOpts)
			ctx := t.Context()
			fullWatch, err := full.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer fullWatch.Stop()
			projectedWatch, err := projected.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer projectedWatch.Stop()
			srv.WaitForWatches(t, podsResource, 2)
			for i := range 40 {
				srv.Create(podsResource, randomPod(rng, 100+i))
			}
			status := &metav1.Status{Status: metav1.StatusFailure, Message: "too old", Reason: metav1.StatusReasonExpired, Code: 410}
			srv.SendError(podsResource, status)
			for i := range 41 {
				want, got := nextEvent(t, fullWatch), nextEvent(t, projectedWatch)
				if pod, ok := want.Object.(*corev1.Pod); ok {
					want.Object = clearPodDropFields(pod)
				} else if i < 40 {
					t.Fatalf("event %d carries a %T", i, want.Object)
				}
				if diff := cmp.Diff(want, got, projectionOpts); diff != "" {
					t.Errorf("projected watch event %d (-full with the fields cleared +projected):\n%s", i, diff)
				}
			}
		})
	}
}

// TestDropFieldsOfAnInlinedField drops a field of a struct embedded
// inline (Volume's VolumeSource) from JSON. In protobuf the embedded struct
// is a field of its own, and the number of hostPath in it (1) is that of
// the volume's name: it dropped the names and kept hostPath; now protobuf
// is refused (see TestDropFieldsRejectsUnknownPaths).
func TestDropFieldsOfAnInlinedField(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	pod := randomPod(rand.New(rand.NewPCG(4, 4)), 1)
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
		{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	srv.Create(podsResource, pod)
	checkProjectedList(t, informer.NewRESTListerWatcher[*corev1.Pod], srv.Config(), informer.RESTOptions{ContentType: informer.ContentTypeJSON},
		[]string{"spec.volumes.hostPath"}, func(pod *corev1.Pod) *corev1.Pod {
			pod = pod.DeepCopy()
			for i := range pod.Spec.Volumes {
				pod.Spec.Volumes[i].HostPath = nil
			}
			return pod
		}, projectionOpts)
}

func TestDropFieldsMetadata(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	for i := range 20 {
		srv.Create(podsResource, randomPod(rng, i))
	}
	clear := func(obj *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		obj = obj.DeepCopy()
		obj.ManagedFields = nil
		delete(obj.Annotations, lastApplied)
		return obj
	}
	_, projected, rv := checkProjectedList(t, informer.NewMetadataListerWatcher, srv.Config(), informer.RESTOptions{Resource: podsResource},
		[]string{informer.ManagedFields, "metadata.annotations[" + lastApplied + "]"}, clear, projectionOpts)
	w, err := projected.Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	srv.WaitForWatches(t, podsResource, 1)
	created := srv.Create(podsResource, withManagedFields(randomPod(rng, 99))).(*corev1.Pod)
	want := clear(&metav1.PartialObjectMetadata{ObjectMeta: created.ObjectMeta})
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: want}, nextEvent(t, w), projectionOpts); diff != "" {
		t.Errorf("projected watch event (-want +got):\n%s", diff)
	}
}

func TestDropFieldsUnstructured(t *testing.T) {
	srv := newFakeAPIServer(t, addWidgetTypes)
	srv.Serve(widgetsResource, widgetKind, false)
	for i := range 5 {
		widget := withManagedFields(newWidget("a", fmt.Sprintf("w-%d", i), i))
		widget.Annotations = map[string]string{lastApplied: "{}", "keep": "me"}
		srv.Create(widgetsResource, widget)
	}
	clear := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		obj = obj.DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", lastApplied)
		unstructured.RemoveNestedField(obj.Object, "spec", "size")
		return obj
	}
	_, projected, rv := checkProjectedList(t, informer.NewDynamicListerWatcher, srv.Config(), informer.RESTOptions{Resource: widgetsResource},
		[]string{informer.ManagedFields, "metadata.annotations[" + lastApplied + "]", "spec.size"}, clear)
	w, err := projected.Watch(t.Context(), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	srv.WaitForWatches(t, widgetsResource, 1)
	want := clear(toUnstructured(t, srv.Create(widgetsResource, withManagedFields(newWidget("b", "w-9", 9)))))
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: want}, nextEvent(t, w)); diff != "" {
		t.Errorf("projected watch event (-want +got):\n%s", diff)
	}
}

func TestDropFieldsRejectsUnknownPaths(t *testing.T) {
	srv := newFakeAPIServer(t, addWidgetTypes)
	for _, tc := range []struct {
		name string
		new  func() error
		want string
	}{
		{"unknown field", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"metadata.managedField"}}),
			`list/watch *v1.Pod: DropFields: field path "metadata.managedField": v1.ObjectMeta has no field "managedField" (it has name, generateName, namespace, selfLink, uid, resourceVersion, generation, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, labels, annotations, ownerReferences, finalizers, managedFields)`},
		{"into a string", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"spec.nodeName.x"}}),
			`list/watch *v1.Pod: DropFields: field path "spec.nodeName.x": v1.PodSpec.NodeName has no fields to name`},
		{"key of a list", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"status.conditions[Ready]"}}),
			`list/watch *v1.Pod: DropFields: field path "status.conditions[Ready]": v1.PodStatus.Conditions is not a map with string keys`},
		{"empty name", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"metadata..labels"}}),
			`list/watch *v1.Pod: DropFields: field path "metadata..labels": field names are separated by single dots, as in status.conditions`},
		{"unclosed key", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"metadata.labels[app"}}),
			`list/watch *v1.Pod: DropFields: field path "metadata.labels[app": a map key goes in one pair of brackets at the end, not empty and without brackets inside, as in metadata.annotations[example.com/key]`},
		{"inlined field with protobuf", newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{"spec.volumes.hostPath"}}),
			`list/watch *v1.Pod: DropFields: field path "spec.volumes.hostPath": v1.Volume.HostPath is inlined from an embedded struct, which protobuf encodes as a field of its own: drop it from JSON (ContentTypeJSON)`},
		{"CRD field without protobuf", newRESTLW[*Widget](srv.Config(), informer.RESTOptions{Scheme: widgetScheme(t), ContentType: informer.ContentTypeJSON, DropFields: []string{"spec.color"}}),
			`list/watch *informer_test.Widget: DropFields: field path "spec.color": informer_test.WidgetSpec has no field "color" (it has size)`},
		{"metadata only", func() error {
			_, err := informer.NewMetadataListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource, DropFields: []string{"status.conditions"}})
			return err
		}, `list/watch metadata of v1/pods: DropFields: field path "status.conditions": v1.PartialObjectMetadata has no field "status" (it has kind, apiVersion, metadata)`},
		{"unstructured syntax", func() error {
			_, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: widgetsResource, DropFields: []string{"[x]"}})
			return err
		}, `list/watch example.com/v1/widgets: DropFields: field path "[x]": no field name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.new()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestDropFieldsRejectsKeptFieldsAndMalformedKeys checks that every
// constructor taking DropFields rejects the fields the informer needs
// (which, dropped, left a cache empty yet synced, or consistency checks
// blind) and malformed keys in brackets (metadata.annotations[a][b] was
// taken as the key "a][b" and dropped nothing), saying why.
func TestDropFieldsRejectsKeptFieldsAndMalformedKeys(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	kept := map[string]string{
		"kind":                     "the decoders need it to know the type of a watched object (and in protobuf it is not a field of the object)",
		"apiVersion":               "the decoders need it to know the type of a watched object (and in protobuf it is not a field of the object)",
		"metadata":                 "it holds the name, namespace, resourceVersion and uid the informer needs",
		"metadata.name":            "the cache keys objects by namespace and name, and drops events of nameless objects",
		"metadata.namespace":       "the cache keys objects by namespace and name",
		"metadata.resourceVersion": "the informer resumes its watches from it, and consistency checks compare it",
		"metadata.uid":             "shards by UID assign objects by it, and it tells an object from one re-created under its name",
	}
	const syntax = "a map key goes in one pair of brackets at the end, not empty and without brackets inside, as in metadata.annotations[example.com/key]"
	type rejected struct{ path, why string }
	cases := []rejected{
		{"metadata.annotations[a][b]", syntax},
		{"metadata.annotations[a]]", syntax},
		{"metadata.annotations[[a]", syntax},
		{"metadata.annotations[]", syntax},
		{"metadata.annotations[a", syntax},
		{"metadata.annotations[a]b", syntax},
		{"metadata.annotations[a].b", syntax},
	}
	for path, why := range kept {
		cases = append(cases, rejected{path, path + " must never be dropped: " + why})
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			drop := []string{informer.ManagedFields, tc.path}
			cause := fmt.Sprintf("DropFields: field path %q: %s", tc.path, tc.why)
			_, factoryErr := informer.NewFactory(srv.Config(), informer.FactoryOptions{DropFields: drop})
			f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown()
			_, forErr := informer.For(f, informer.InformerOptions[*corev1.Pod]{DropFields: drop})
			_, dynamicErr := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource, DropFields: drop})
			_, metadataErr := informer.NewMetadataListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource, DropFields: drop})
			got := []string{informer.ErrText(factoryErr), informer.ErrText(forErr), informer.ErrText(newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: drop})()),
				informer.ErrText(dynamicErr), informer.ErrText(metadataErr)}
			want := []string{
				"informer factory: FactoryOptions." + cause,
				"informer for *v1.Pod: list/watch *v1.Pod: " + cause,
				"list/watch *v1.Pod: " + cause,
				"list/watch v1/pods: " + cause,
				"list/watch metadata of v1/pods: " + cause,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors of NewFactory, For, NewRESTListerWatcher, NewDynamicListerWatcher and NewMetadataListerWatcher (-want +got):\n%s", diff)
			}
		})
	}
	// In an unstructured object every field is a map entry: a key in
	// brackets must not reach a kept field either.
	_, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource, DropFields: []string{"metadata[uid]"}})
	if diff := cmp.Diff(`list/watch v1/pods: DropFields: field path "metadata[uid]": metadata.uid must never be dropped: `+kept["metadata.uid"], informer.ErrText(err)); diff != "" {
		t.Errorf("metadata[uid] (-want +got):\n%s", diff)
	}
	// Keys may hold dots and slashes; neighbours of kept fields are fine.
	for _, path := range []string{"metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", "metadata.generateName", "metadata.labels[a.b/c]"} {
		if _, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{DropFields: []string{path}}); err != nil {
			t.Errorf("NewFactory with DropFields %q: %v", path, err)
		}
		if err := newRESTLW[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: []string{path}})(); err != nil {
			t.Errorf("NewRESTListerWatcher with DropFields %q: %v", path, err)
		}
	}
}

func TestDropFieldsOfNewInformerIsAnError(t *testing.T) {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	_, err := informer.NewInformer[*corev1.Pod](lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", DropFields: []string{informer.ManagedFields}})
	const want = "Informer pods: invalid options: InformerOptions.DropFields applies to informers made by For; the ListerWatcher of NewInformer decodes the objects: set its RESTOptions.DropFields"
	if err == nil || err.Error() != want {
		t.Errorf("NewInformer error = %v\nwant %s", err, want)
	}
}

func TestFactoryDropFields(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	srv.Serve(configMaps, corev1.SchemeGroupVersion.WithKind("ConfigMap"), true)
	rng := rand.New(rand.NewPCG(3, 3))
	pod := srv.Create(podsResource, randomPod(rng, 1)).(*corev1.Pod)
	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{DropFields: []string{informer.ManagedFields}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	pods, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{DropFields: []string{"status.conditions", "spec.containers.env", "metadata.annotations[" + lastApplied + "]"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{DropFields: []string{"status.conditions"}}); err == nil {
		t.Error("a later For with DropFields: no error")
	}
	if _, err := informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{DropFields: []string{"status.conditions"}}); err == nil || !strings.Contains(err.Error(), `field path "status.conditions": v1.ConfigMap has no field "status"`) {
		t.Errorf("For of ConfigMaps dropping status.conditions: error = %v", err)
	}
	f.Start(t.Context())
	if _, err := f.WaitForCacheSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Lister().Get(pod.Namespace + "/" + pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(clearPodDropFields(pod), got, projectionOpts); diff != "" {
		t.Errorf("cached pod (-want +got):\n%s", diff)
	}
}

// cutFirstWatchEvent is an http.RoundTripper that cuts the first event of
// the first watch response short, after the first occurrence of at in it,
// keeping the newline that ends the event, as a broken proxy or server
// might; everything else passes unchanged.
type cutFirstWatchEvent struct {
	base http.RoundTripper
	at   string
	cut  atomic.Bool
}

func (c *cutFirstWatchEvent) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") != "true" || !c.cut.CompareAndSwap(false, true) {
		return resp, err
	}
	resp.Body = &cutLineBody{ReadCloser: resp.Body, lines: bufio.NewReader(resp.Body), at: c.at}
	return resp, nil
}

// cutLineBody is a body whose first line is cut after at.
type cutLineBody struct {
	io.ReadCloser
	lines *bufio.Reader
	at    string
	first []byte // what is left of the cut first line
	done  bool   // the first line was cut
}

func (b *cutLineBody) Read(p []byte) (int, error) {
	if !b.done {
		line, err := b.lines.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		end := bytes.Index(line, []byte(b.at))
		if end < 0 {
			return 0, fmt.Errorf("%q not in the first event %q", b.at, line)
		}
		b.first, b.done = append(line[:end+len(b.at)], '\n'), true
	}
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	return b.lines.Read(p)
}

// TestDropFieldsWatchRecoversFromACutJSONEvent cuts the first watch event
// short (its newline kept) and sends whole ones after it, on a watch the
// server keeps open: the watch must fail at once, as it does without
// DropFields, and the informer must end with every object. The cut event
// made the watch body wait for its braces to close, taking every later
// event in, until 64 MiB came or the server ended the watch minutes later:
// the informer saw nothing of that time, and nothing was logged or counted.
func TestDropFieldsWatchRecoversFromACutJSONEvent(t *testing.T) {
	for _, tc := range []struct {
		name             string
		disableWatchList bool
	}{{"list and watch", true}, {"streaming list", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPIServer(t)
			srv.Serve(podsResource, podKind, true)
			rng := rand.New(rand.NewPCG(5, 5))
			var want []*corev1.Pod
			create := func(i int) {
				want = append(want, clearPodDropFields(srv.Create(podsResource, randomPod(rng, i)).(*corev1.Pod)))
			}
			create(0)
			create(1)
			client, err := rest.HTTPClientFor(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			// A list and watch sees pod-2 first; a streaming list, pod-0.
			cutter := &cutFirstWatchEvent{base: client.Transport, at: `"name":"pod-2"`}
			if cutter.base == nil {
				cutter.base = http.DefaultTransport
			}
			if !tc.disableWatchList {
				cutter.at = `"name":"pod-0"`
			}
			client.Transport = cutter
			lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{
				ContentType: informer.ContentTypeJSON, HTTPClient: client, DropFields: podDropFields,
			})
			if err != nil {
				t.Fatal(err)
			}
			inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{DisableWatchList: tc.disableWatchList})
			runInformer(t, inf)
			if tc.disableWatchList {
				informer.Eventually(t, "the first list", inf.HasSynced)
			}
			for i := range 3 {
				create(2 + i)
			}
			var got []*corev1.Pod
			informer.Eventually(t, "every pod cached", func() bool {
				got, err = inf.Lister().List(labels.Everything())
				return err == nil && len(got) == len(want)
			})
			slices.SortFunc(got, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
			if diff := cmp.Diff(want, got, projectionOpts); diff != "" {
				t.Errorf("cached pods (-want +got):\n%s", diff)
			}
			if !cutter.cut.Load() {
				t.Error("no watch event was cut")
			}
			if n := inf.Stats().DropFieldsFailures; n != 1 {
				t.Errorf("Stats().DropFieldsFailures = %d, want 1", n)
			}
		})
	}
}

// TestDropFieldsFailuresAreCounted lists a malformed protobuf body through
// DropFields: the list fails, and the informer's stats count it.
func TestDropFieldsFailuresAreCounted(t *testing.T) {
	body := []byte("k8s\x00\x12\x05\x12\x10") // a list field longer than the body
	client := &http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {string(informer.ContentTypeProtobuf)}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	})}
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://server.invalid"}, informer.RESTOptions{
		HTTPClient: client, DropFields: []string{informer.ManagedFields},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("List of a malformed body: no error")
	}
	inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(informer.InformerStats{DropFieldsFailures: 1}, inf.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}
