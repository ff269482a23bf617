package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// The forms an E5 child holds Workloads in, as -form names them.
const (
	formTyped        = "typed"
	formUnstructured = "unstructured"
)

// kindWorkloads is -kind for E5's children: Workloads instead of pods.
const kindWorkloads = "workloads"

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// workloadScheme knows Workloads (and the meta types of their group).
func workloadScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := crdtypes.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// workloadsClient returns a JSON REST client of Workloads, as a generated
// clientset of the CRD's group builds it, without client-side throttling.
func workloadsClient(config *rest.Config, scheme *runtime.Scheme) (*rest.RESTClient, error) {
	config = rest.CopyConfig(config)
	config.GroupVersion = &crdtypes.GroupVersion
	config.APIPath = "/apis"
	config.ContentType = runtime.ContentTypeJSON
	config.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	config.QPS, config.Burst = -1, 0
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(config)
}

// seedE5 creates the Workload CRD (crdtypes.Manifest), waits until the
// server serves it, and creates n Workloads as a queueing controller's
// components write them: the job controller creates each (metadata and
// spec), admission sets its admission and quota condition, and the
// pods-ready controller the rest of its status, both through the status
// subresource, so that each has managed fields of three managers. It
// returns the Workloads' mean size as JSON as the server sends them.
func seedE5(ctx context.Context, c *cluster.Cluster, n int) (jsonBytes float64, err error) {
	config := rest.CopyConfig(c.Config())
	config.QPS, config.Burst = -1, 0
	dc, err := dynamic.NewForConfig(config)
	if err != nil {
		return 0, err
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(crdtypes.Manifest, &crd.Object); err != nil {
		return 0, fmt.Errorf("the CRD manifest: %w", err)
	}
	if _, err := dc.Resource(crdResource).Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating the CRD: %w", err)
	}
	scheme, err := workloadScheme()
	if err != nil {
		return 0, err
	}
	client, err := workloadsClient(config, scheme)
	if err != nil {
		return 0, err
	}
	if err := waitServed(ctx, client); err != nil {
		return 0, err
	}
	workloads := crdtypes.New(n)
	if err := createNamespaces(ctx, config, workloads); err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWriters)
	for i := range workloads {
		g.Go(func() error { return writeWorkload(gctx, client, workloads[i]) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return jsonSize(ctx, client, workloads[:min(len(workloads), 200)])
}

// waitServed waits until the server lists Workloads: a new CRD is served
// once it is established, a moment after it is created.
func waitServed(ctx context.Context, client *rest.RESTClient) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := client.Get().Resource("workloads").Param("limit", "1").Do(ctx).Error()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || !apierrors.IsNotFound(err) {
			return fmt.Errorf("listing Workloads after creating their CRD: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createNamespaces creates the namespaces of workloads that do not exist.
func createNamespaces(ctx context.Context, config *rest.Config, workloads []crdtypes.Workload) error {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for i := range workloads {
		ns := workloads[i].Namespace
		if done[ns] {
			continue
		}
		done[ns] = true
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// writeWorkload creates w and sets its status in the three steps of seedE5.
func writeWorkload(ctx context.Context, client *rest.RESTClient, w crdtypes.Workload) error {
	status := w.Status
	w.ResourceVersion, w.UID, w.CreationTimestamp, w.ManagedFields = "", "", metav1.Time{}, nil
	w.Status = crdtypes.WorkloadStatus{}
	w.TypeMeta = metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "Workload"}
	send := func(req *rest.Request, manager string, obj *crdtypes.Workload) (*crdtypes.Workload, error) {
		out := &crdtypes.Workload{}
		err := req.Namespace(w.Namespace).Resource("workloads").Param("fieldManager", manager).Body(obj).Do(ctx).Into(out)
		out.TypeMeta = w.TypeMeta
		return out, err
	}
	created, err := send(client.Post(), "kueue-job-controller", &w)
	if err != nil {
		return fmt.Errorf("creating Workload %s/%s: %w", w.Namespace, w.Name, err)
	}
	created.Status = crdtypes.WorkloadStatus{Admission: status.Admission, Conditions: status.Conditions[:1]}
	admitted, err := send(client.Put().Name(w.Name).SubResource("status"), "kueue-admission", created)
	if err != nil {
		return fmt.Errorf("admitting Workload %s/%s: %w", w.Namespace, w.Name, err)
	}
	admitted.Status = status
	if _, err := send(client.Put().Name(w.Name).SubResource("status"), "kueue-pods-ready", admitted); err != nil {
		return fmt.Errorf("setting the status of Workload %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// jsonSize returns the mean size of workloads as the server sends them in
// JSON, read back one by one.
func jsonSize(ctx context.Context, client *rest.RESTClient, workloads []crdtypes.Workload) (float64, error) {
	return meanSize(ctx, len(workloads), func(ctx context.Context, i int) ([]byte, error) {
		return client.Get().Namespace(workloads[i].Namespace).Resource("workloads").Name(workloads[i].Name).DoRaw(ctx)
	})
}

// handlerFuncs is a client-go handler calling onAdd for each add and
// onUpdate with each updated object's resource version.
func handlerFuncs(onAdd func(), onUpdate func(rv string)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { onAdd() },
		UpdateFunc: func(_, newObj any) {
			if m, err := meta.Accessor(newObj); err == nil {
				onUpdate(m.GetResourceVersion())
			}
		},
	}
}

// startOursFor adds this library's informer of T to factory, with the
// namespace index client-go's informers have, and a handler calling onAdd
// and onUpdate.
func startOursFor[T informer.Object](factory *informer.Factory, opts informer.InformerOptions[T], onAdd func(), onUpdate func(rv string)) (hasSynced func() bool, err error) {
	opts.Indexers = map[string]informer.IndexFunc[T]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[T]}
	inf, err := informer.For(factory, opts)
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[T]{
		AddFunc:    func(T, bool) { onAdd() },
		UpdateFunc: func(_, newObj T) { onUpdate(newObj.GetResourceVersion()) },
	}); err != nil {
		return nil, err
	}
	return inf.HasSynced, nil
}

// runE5 is E5: cfg.e5Objects Workloads of a real CRD synced by client-go's
// typed informer and ours, client-go's dynamic informer and ours of
// unstructured objects, and controller-runtime's cache and crcache, each
// in its own process, default settings everywhere, interleaved as E1; with
// cfg.dedupCase, ours (typed and unstructured) with Deduplicate on syncs
// too after each of ours, and is compared with the same client-go runs. It
// returns the rows against client-go and those against controller-runtime.
func runE5(ctx context.Context, cfg config, kubeconfig string) (rows, cacheRows []benchkit.Row, err error) {
	base := childSpec{Kubeconfig: kubeconfig, Pods: cfg.e5Objects, Kind: kindWorkloads}
	spec := func(impl, form string, deduplicate bool) childSpec {
		c := base
		c.Impl, c.Form, c.Deduplicate = impl, form, deduplicate
		return c
	}
	n := strconv.Itoa(cfg.e5Objects) + " Workloads"
	var children []childSpec
	// pairs are the comparisons against client-go: the indexes in children
	// of client-go's side and of ours, and the row's case.
	type pair struct {
		theirs, ours int
		kase         string
	}
	var pairs []pair
	for _, form := range []string{formTyped, formUnstructured} {
		kase := n + ", " + form
		if form == formUnstructured {
			kase += " (client-go: dynamic informer)"
		}
		theirs := len(children)
		children = append(children, spec(implClientGo, form, false), spec(implOurs, form, false))
		pairs = append(pairs, pair{theirs, theirs + 1, kase})
		if cfg.dedupCase {
			children = append(children, spec(implOurs, form, true))
			pairs = append(pairs, pair{theirs, theirs + 2, kase + ", ours with Deduplicate"})
		}
	}
	caches := len(children)
	children = append(children, spec(implControllerRuntime, formTyped, false), spec(implCRCache, formTyped, false))
	results, err := syncRuns(ctx, cfg, "E5", children)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pairs {
		rows = append(rows, syncRows("E5", p.kase, "object", cfg.e5Objects, results[p.theirs], results[p.ours])...)
	}
	cacheRows = syncRows("E5", n+", default settings", "object", cfg.e5Objects, results[caches], results[caches+1])
	return rows, cacheRows, nil
}
