// Command informer-cost reports what an informer's cache of each resource
// asked for would keep on the heap, by field, and which fields to drop:
// it connects to a cluster from a kubeconfig, syncs one informer per
// resource (github.com/kubetyped/informer), prints each one's
// [informer.Informer.Cost] report as a table and optionally draws it as an
// SVG, then exits.
//
//	go run github.com/kubetyped/informer/cmd/informer-cost [flags] RESOURCE...
//
// A RESOURCE is named as kubectl names it: "pods", "deployments.apps",
// "widgets.example.com", optionally with its version
// ("deployments.v1.apps"). A built-in type is cached as its Go type of
// k8s.io/api, decoded from protobuf, as a controller built on this library
// caches it; any other resource (or every one with -unstructured) as
// *unstructured.Unstructured. The report is of this library's cache: a
// client-go informer keeps more of the same fields (docs/operations.md,
// "What the cache costs").
//
// It lists and watches with the kubeconfig's credentials (it needs list
// and watch on the resources), holds the objects in memory while it runs,
// and changes nothing in the cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "informer-cost:", err)
		}
		os.Exit(2)
	}
}

// options are the command's flags.
type options struct {
	kubeconfig, context, namespace string
	unstructured, deduplicate      bool
	dropFields                     []string
	rows                           int
	svg                            string
	timeout                        time.Duration
}

// run runs the command with args, printing the reports to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("informer-cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster configuration)")
	fs.StringVar(&o.context, "context", "", "the kubeconfig's context to use (default: its current context)")
	fs.StringVar(&o.namespace, "namespace", "", "cache only this namespace's objects (default: all namespaces)")
	fs.BoolVar(&o.unstructured, "unstructured", false, "cache built-in types as *unstructured.Unstructured too, decoded from JSON")
	fs.BoolVar(&o.deduplicate, "deduplicate", false, "cache with InformerOptions.Deduplicate")
	fs.Func("drop-fields", "cache with RESTOptions.DropFields: paths separated by commas (e.g. metadata.managedFields)", func(s string) error {
		o.dropFields = append(o.dropFields, strings.Split(s, ",")...)
		return nil
	})
	fs.IntVar(&o.rows, "rows", 20, "print at most this many rows of each report (the largest)")
	fs.StringVar(&o.svg, "svg", "", "also draw the reports as an SVG chart into this file")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up if a resource has not synced after this long")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: informer-cost [flags] RESOURCE...\n\nSyncs an informer of each resource (pods, deployments.apps, ...) and prints what its cache keeps on the heap, by field.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no resource named")
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mapper, err := newMapper(config)
	if err != nil {
		return err
	}
	var reports []resourceReport
	for _, arg := range fs.Args() {
		r, err := costOf(ctx, config, mapper, arg, o)
		if err != nil {
			return fmt.Errorf("%s: %w", arg, err)
		}
		if err := writeTable(stdout, r, o.rows); err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if o.svg != "" {
		if err := writeSVGFile(o.svg, reports, o.rows); err != nil {
			return err
		}
	}
	return nil
}

// newMapper returns a RESTMapper of the resources the server serves.
func newMapper(config *rest.Config) (*restmapper.DeferredDiscoveryRESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}

// resourceReport is the cost report of one resource's informer.
type resourceReport struct {
	resource  schema.GroupVersionResource
	form      string // "typed" or "unstructured"
	namespace string // empty for all namespaces
	synced    time.Duration
	took      time.Duration // Cost's wall time
	report    informer.CostReport
}

// object is what a typed informer of the command holds: a built-in type
// chosen at run time.
type object interface {
	metav1.Object
	runtime.Object
}

// costOf syncs an informer of the resource named arg and returns its cost
// report.
func costOf(ctx context.Context, config *rest.Config, mapper *restmapper.DeferredDiscoveryRESTMapper, arg string, o options) (resourceReport, error) {
	gvr, gvk, namespaced, err := resolve(mapper, arg)
	if err != nil {
		return resourceReport{}, err
	}
	r := resourceReport{resource: gvr, form: "typed"}
	opts := informer.RESTOptions{Resource: gvr, DropFields: o.dropFields}
	if namespaced {
		opts.Namespace, r.namespace = o.namespace, o.namespace
	}
	example, typed := builtIn(gvk)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if typed && !o.unstructured {
		opts.ContentType = informer.ContentTypeProtobuf
		lw, err := informer.NewRESTListerWatcherOf[object](config, opts, example)
		if err != nil {
			return r, err
		}
		err = syncAndCost(ctx, lw, o, &r)
		return r, err
	}
	r.form = "unstructured"
	lw, err := informer.NewDynamicListerWatcher(config, opts)
	if err != nil {
		return r, err
	}
	err = syncAndCost(ctx, lw, o, &r)
	return r, err
}

// resolve returns the resource arg names, its kind, and whether it is
// namespaced.
func resolve(mapper *restmapper.DeferredDiscoveryRESTMapper, arg string) (schema.GroupVersionResource, schema.GroupVersionKind, bool, error) {
	// As kubectl does: "a.b.c" is resource a of version b of group c if
	// the server has it, else resource a of group b.c.
	full, gr := schema.ParseResourceArg(arg)
	var gvr schema.GroupVersionResource
	err := errors.New("no version")
	if full != nil {
		gvr, err = mapper.ResourceFor(*full)
	}
	if err != nil {
		gvr, err = mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		return gvr, schema.GroupVersionKind{}, false, err
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return gvr, gvk, false, err
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvr, gvk, false, err
	}
	return gvr, gvk, mapping.Scope.Name() == "namespace", nil
}

// builtIn returns a new object of gvk's Go type if client-go's scheme has
// one.
func builtIn(gvk schema.GroupVersionKind) (object, bool) {
	if !scheme.Scheme.Recognizes(gvk) {
		return nil, false
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	o, ok := obj.(object)
	return o, ok
}

// syncAndCost runs an informer over lw until it has synced, and fills r
// with its cost report.
func syncAndCost[T informer.Object](ctx context.Context, lw informer.ListerWatcher[T], o options, r *resourceReport) error {
	inf, err := informer.NewInformer(lw, informer.InformerOptions[T]{Deduplicate: &o.deduplicate})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(runCtx)
	}()
	defer func() {
		stop()
		<-done
	}()
	start := time.Now()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		return fmt.Errorf("not synced after %v: %w", time.Since(start).Round(time.Second), context.Cause(ctx))
	}
	r.synced = time.Since(start)
	start = time.Now()
	r.report, err = inf.Cost(ctx)
	r.took = time.Since(start)
	return err
}
