package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// The per-kind memory benchmark (-kinds; docs/benchmarks.md, "Real server:
// memory per kind"): the objects of seven kinds, each kind synced alone in
// a process of its own, in each of three forms, by client-go's informer
// against the core's and by controller-runtime's cache against crcache,
// every side with its default settings.

// benchKind is one kind of the per-kind benchmark.
type benchKind struct {
	name     string // as -kinds-only and the children's -kind name it
	title    string // in the table's cases
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
	count    int // objects created at scale 1
}

// benchKinds are the kinds measured, in the table's order: pods
// (internal/prodpods), the five other built-in kinds of kinds_objects.go,
// and Workloads of a real CRD (internal/crdtypes). The counts are those of
// a cluster of 5,000 pods.
var benchKinds = []benchKind{
	{"pods", "pods", corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), 5000},
	{"configmaps", "ConfigMaps", corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithKind("ConfigMap"), 4200},
	{"secrets", "Secrets", corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), 2000},
	{"services", "Services", corev1.SchemeGroupVersion.WithResource("services"), corev1.SchemeGroupVersion.WithKind("Service"), 1000},
	{"endpointslices", "EndpointSlices", discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), 1000},
	{"events", "Events", corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), 10000},
	{kindWorkloads, "Workloads (CRD)", crdtypes.Resource, crdtypes.GroupVersion.WithKind("Workload"), 2000},
}

// The forms of the per-kind benchmark, as -form names them (formTyped and
// formUnstructured are E5's too).
const formMetadata = "metadata"

// kindForms are the forms every kind is synced in.
var kindForms = []string{formTyped, formMetadata, formUnstructured}

// benchKindNamed returns the kind named name.
func benchKindNamed(name string) (benchKind, bool) {
	i := slices.IndexFunc(benchKinds, func(k benchKind) bool { return k.name == name })
	if i < 0 {
		return benchKind{}, false
	}
	return benchKinds[i], true
}

// selectedKinds returns the kinds of -kinds-only (all when empty) and the
// forms of -kinds-forms (all when empty).
func selectedKinds(only, forms string) ([]benchKind, []string, error) {
	kinds := benchKinds
	if only != "" {
		kinds = nil
		for name := range strings.SplitSeq(only, ",") {
			k, ok := benchKindNamed(strings.TrimSpace(name))
			if !ok {
				return nil, nil, fmt.Errorf("-kinds-only: unknown kind %q", name)
			}
			kinds = append(kinds, k)
		}
	}
	selected := kindForms
	if forms != "" {
		selected = nil
		for form := range strings.SplitSeq(forms, ",") {
			form = strings.TrimSpace(form)
			if !slices.Contains(kindForms, form) {
				return nil, nil, fmt.Errorf("-kinds-forms: unknown form %q", form)
			}
			selected = append(selected, form)
		}
	}
	return kinds, selected, nil
}

// scaled is a kind's count at scale, at least 1.
func scaled(count int, scale float64) int { return max(1, int(float64(count)*scale+0.5)) }

// kindsOnServer is what the server holds of each kind of the per-kind
// benchmark, by name: how many objects (its own included, such as
// kube-system's ConfigMap of kube-apiserver) and their mean size as the
// server sends them (kindEncoding).
type kindsOnServer struct {
	counts map[string]int
	sizes  map[string]float64
}

// seedKinds creates the objects of kinds at cfg.kindsScale, but for the
// kinds seeded names, which hold objects already, and returns what the
// server then holds.
func seedKinds(ctx context.Context, c *cluster.Cluster, cfg config, kinds []benchKind, seeded map[string]bool) (kindsOnServer, error) {
	var none kindsOnServer
	config := rest.CopyConfig(c.Config())
	config.QPS, config.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return none, err
	}
	namespaces := namespacesFor(cfg.kindsScale)
	for _, k := range kinds {
		n := scaled(k.count, cfg.kindsScale)
		if seeded[k.name] {
			continue
		}
		var objects []kindObject
		switch k.name {
		case "pods":
			if _, err := seed(ctx, c, n); err != nil {
				return none, fmt.Errorf("creating %d pods: %w", n, err)
			}
			continue
		case kindWorkloads:
			if _, err := seedE5(ctx, c, n); err != nil {
				return none, fmt.Errorf("creating %d Workloads: %w", n, err)
			}
			continue
		case "configmaps":
			objects = newConfigMaps(n, namespaces)
		case "secrets":
			objects = newSecrets(n, namespaces)
		case "services":
			objects = newServices(n, namespaces)
		case "endpointslices":
			objects = newEndpointSlices(n, namespaces)
		case "events":
			objects = newEvents(n, namespaces)
		default:
			return none, fmt.Errorf("no objects of kind %q", k.name)
		}
		if err := createKindObjects(ctx, cs, objects); err != nil {
			return none, fmt.Errorf("creating %s: %w", k.title, err)
		}
		logf("created %d %s", len(objects), k.title)
	}
	mc, err := metadata.NewForConfig(config)
	if err != nil {
		return none, err
	}
	held := kindsOnServer{counts: map[string]int{}, sizes: map[string]float64{}}
	for _, k := range kinds {
		list, err := mc.Resource(k.resource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return none, fmt.Errorf("counting %s: %w", k.title, err)
		}
		held.counts[k.name] = len(list.Items)
		if held.sizes[k.name], err = kindSize(ctx, cs, k, list.Items[:min(len(list.Items), 200)]); err != nil {
			return none, fmt.Errorf("reading %s: %w", k.title, err)
		}
	}
	return held, nil
}

// kindEncoding is what the server sends objects of k as to the typed
// informers: JSON for custom resources, protobuf for the others.
func kindEncoding(k benchKind) string {
	if k.name == kindWorkloads {
		return "JSON"
	}
	return "protobuf"
}

// kindSize returns the mean size of the objects items of k as the server
// sends them in kindEncoding(k), read back one by one.
func kindSize(ctx context.Context, cs *kubernetes.Clientset, k benchKind, items []metav1.PartialObjectMetadata) (float64, error) {
	accept := runtime.ContentTypeProtobuf
	if kindEncoding(k) == "JSON" {
		accept = runtime.ContentTypeJSON
	}
	return meanSize(ctx, len(items), func(ctx context.Context, i int) ([]byte, error) {
		prefix := "/api"
		if k.resource.Group != "" {
			prefix = "/apis/" + k.resource.Group
		}
		return cs.CoreV1().RESTClient().Get().AbsPath(prefix, k.resource.Version, "namespaces", items[i].Namespace, k.resource.Resource, items[i].Name).
			SetHeader("Accept", accept).DoRaw(ctx)
	})
}

// createKindObjects creates the namespaces of objects that do not exist,
// then objects, seedWriters at a time, each with its field manager.
func createKindObjects(ctx context.Context, cs kubernetes.Interface, objects []kindObject) error {
	done := map[string]bool{}
	for _, o := range objects {
		ns := o.obj.GetNamespace()
		if done[ns] {
			continue
		}
		done[ns] = true
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWriters)
	for _, o := range objects {
		g.Go(func() error {
			if err := createKindObject(gctx, cs, o); err != nil {
				return fmt.Errorf("%s/%s: %w", o.obj.GetNamespace(), o.obj.GetName(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// createKindObject creates o.obj through its typed client.
func createKindObject(ctx context.Context, cs kubernetes.Interface, o kindObject) error {
	opts := metav1.CreateOptions{FieldManager: o.manager}
	var err error
	switch obj := o.obj.(type) {
	case *corev1.ConfigMap:
		_, err = cs.CoreV1().ConfigMaps(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Secret:
		_, err = cs.CoreV1().Secrets(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Service:
		_, err = cs.CoreV1().Services(obj.Namespace).Create(ctx, obj, opts)
	case *discoveryv1.EndpointSlice:
		_, err = cs.DiscoveryV1().EndpointSlices(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Event:
		_, err = cs.CoreV1().Events(obj.Namespace).Create(ctx, obj, opts)
	default:
		err = fmt.Errorf("no client for %T", obj)
	}
	return err
}

// runKinds is the per-kind benchmark: for each kind and form, client-go's
// informer, ours, controller-runtime's cache and crcache each sync the
// kind's objects in a process of their own, default settings everywhere,
// cfg.runs times, interleaved. It returns the rows against client-go and
// those against controller-runtime.
func runKinds(ctx context.Context, cfg config, kubeconfig string, kinds []benchKind, forms []string, held kindsOnServer) (rows, cacheRows []benchkit.Row, err error) {
	for _, k := range kinds {
		n := held.counts[k.name]
		for _, form := range forms {
			base := childSpec{Kubeconfig: kubeconfig, Pods: n, Kind: k.name, Form: form}
			children := []childSpec{base, base, base, base}
			children[0].Impl, children[1].Impl, children[2].Impl, children[3].Impl = implClientGo, implOurs, implControllerRuntime, implCRCache
			kase := k.title + " (" + groupDigits(n) + "), " + form
			results, err := syncRuns(ctx, cfg, "kinds, "+kase, children)
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, syncRows("kinds", kase, "object", n, results[0], results[1])...)
			cacheRows = append(cacheRows, syncRows("kinds", kase, "object", n, results[2], results[3])...)
		}
	}
	return rows, cacheRows, nil
}

// groupDigits prints n with thousands separated by commas.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// kindsNote explains the per-kind rows under the table.
func kindsNote(cfg config, kinds []benchKind, held kindsOnServer) string {
	var sizes []string
	for _, k := range kinds {
		sizes = append(sizes, fmt.Sprintf("%s %.0f B", k.title, held.sizes[k.name]))
	}
	return fmt.Sprintf("kinds: mean size of an object as the server sends it (protobuf; the Workloads JSON): %s. Each kind alone in a process of its own, synced in each form by client-go's informer (typed: its shared informer factory; metadata: its metadata informer; unstructured: its dynamic informer; the Workloads typed: a generated informer's ListWatch) and by ours (its factory), by controller-runtime's cache and by crcache (cache.New and crcache.New, GetInformer of the typed object, PartialObjectMetadata or Unstructured), default settings on every side; objects at scale %g (kinds_objects.go, internal/prodpods, internal/crdtypes), counted on the server; medians of %d interleaved runs per side.", strings.Join(sizes, ", "), cfg.kindsScale, cfg.runs)
}
