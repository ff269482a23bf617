// Command fleetcontroller is a small multi-cluster controller on a
// crcache.Fleet: one controller-runtime cluster.Cluster per kubeconfig,
// each with its cache made by the fleet (one line per cluster), and one
// controller watching all of them. It keeps, in every cluster, a status
// ConfigMap listing the ConfigMaps labelled fleet=demo of the whole fleet:
//
//	fleetcontroller -cluster eu=eu.kubeconfig -cluster us=us.kubeconfig -namespace default
//
// writes, in each cluster's namespace default, the ConfigMap
// fleet-demo-status whose data has one key "<cluster>.<namespace>.<name>"
// per ConfigMap labelled fleet=demo in any cluster, with that ConfigMap's
// data["value"] as its value. It runs until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubetyped/informer/crcache"
)

// The label selecting the ConfigMaps the controller reports, and the name
// of the status ConfigMap it writes in every cluster.
const (
	demoLabel, demoValue = "fleet", "demo"
	statusName           = "fleet-demo-status"
)

func main() {
	klog.InitFlags(nil)
	kubeconfigs := map[string]string{}
	flag.Func("cluster", "a cluster, as name=kubeconfig-path (repeat for each cluster)", func(v string) error {
		name, path, ok := strings.Cut(v, "=")
		switch {
		case !ok || name == "" || path == "":
			return errors.New("want name=kubeconfig-path")
		case kubeconfigs[name] != "":
			return fmt.Errorf("cluster %q given twice", name)
		}
		kubeconfigs[name] = path
		return nil
	})
	namespace := flag.String("namespace", "default", "the namespace of the status ConfigMap in each cluster")
	flag.Parse()
	ctrllog.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, kubeconfigs, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "fleetcontroller:", err)
		os.Exit(1)
	}
}

// run builds a cluster per kubeconfig (by cluster name) on one fleet cache
// and runs them and the controller until ctx is done.
func run(ctx context.Context, kubeconfigs map[string]string, namespace string) error {
	if len(kubeconfigs) == 0 {
		return errors.New("no -cluster given")
	}
	fleet := crcache.NewFleet(crcache.FleetOptions{})
	r := &reconciler{clusters: map[string]cluster.Cluster{}, namespace: namespace}
	for name, path := range kubeconfigs {
		config, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		cl, err := cluster.New(config, func(o *cluster.Options) {
			o.NewCache = fleet.NewCache(name) // the one line per cluster
			// Only the ConfigMaps reported are cached.
			o.Cache.ByObject = map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{demoLabel: demoValue})},
			}
		})
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		r.clusters[name] = cl
	}
	r.names = slices.Sorted(maps.Keys(r.clusters))

	// One request per cluster: the cluster whose status to write. Any
	// change anywhere changes every cluster's status.
	c, err := controller.NewTypedUnmanaged("fleet-demo", controller.TypedOptions[string]{
		Reconciler:         reconcile.TypedFunc[string](r.reconcile),
		SkipNameValidation: new(true),
	})
	if err != nil {
		return err
	}
	everyCluster := handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *corev1.ConfigMap) []string { return r.names })
	for _, name := range r.names {
		if err := c.Watch(source.TypedKind(r.clusters[name].GetCache(), &corev1.ConfigMap{}, everyCluster)); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(r.names)+1)
	for _, name := range r.names {
		go func() { errs <- wrap(name, r.clusters[name].Start(ctx)) }()
	}
	go func() { errs <- c.Start(ctx) }()
	var first error
	for range len(r.names) + 1 {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one failing stops all
		}
	}
	return first
}

func wrap(cluster string, err error) error {
	if err != nil {
		return fmt.Errorf("cluster %s: %w", cluster, err)
	}
	return nil
}

// reconciler writes the status ConfigMap of a cluster.
type reconciler struct {
	clusters  map[string]cluster.Cluster
	names     []string // the clusters' names, sorted
	namespace string
}

// reconcile writes cluster's status from every cluster's cache.
func (r *reconciler) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	want, err := r.fleetStatus(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	cl := r.clusters[name]
	// The status ConfigMap is not in the cache (which holds the demo
	// ConfigMaps only): read it from the server.
	var status corev1.ConfigMap
	err = cl.GetAPIReader().Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: statusName}, &status)
	switch {
	case apierrors.IsNotFound(err):
		status = corev1.ConfigMap{Data: want}
		status.Namespace, status.Name = r.namespace, statusName
		return reconcile.Result{}, cl.GetClient().Create(ctx, &status)
	case err != nil:
		return reconcile.Result{}, err
	case maps.Equal(status.Data, want):
		return reconcile.Result{}, nil
	}
	status.Data = want
	return reconcile.Result{}, cl.GetClient().Update(ctx, &status) // a conflict is retried
}

// fleetStatus returns the status data: the demo ConfigMaps of every
// cluster, read from the caches.
func (r *reconciler) fleetStatus(ctx context.Context) (map[string]string, error) {
	want := map[string]string{}
	for _, name := range r.names {
		var list corev1.ConfigMapList
		if err := r.clusters[name].GetCache().List(ctx, &list, client.MatchingLabels{demoLabel: demoValue}); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", name, err)
		}
		for _, cm := range list.Items {
			want[name+"."+cm.Namespace+"."+cm.Name] = cm.Data["value"]
		}
	}
	return want, nil
}
