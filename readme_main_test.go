package informer_test

// The README's complete program. docs_test.go checks that the README quotes
// it line for line; TestReadmeMain runs it. Outside this test package it is
// a package main of its own, which is why main is never called here.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to the kubeconfig file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		err = run(ctx, config, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run prints the cluster's pods, then their changes until ctx ends.
func run(ctx context.Context, config *rest.Config, out io.Writer) error {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{})
	if err != nil {
		return err
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		return err
	}
	_, err = pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, initialList bool) {
			if !initialList { // the initial list is printed below, from the lister
				fmt.Fprintln(out, "added", klog.KObj(pod))
			}
		},
		UpdateFunc: func(old, pod *corev1.Pod) { fmt.Fprintln(out, "updated", klog.KObj(pod), pod.Status.Phase) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) { fmt.Fprintln(out, "deleted", d.Name) },
	})
	if err != nil {
		return err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return err // names the informer that did not sync, and why
	}
	cached, err := pods.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintln(out, len(cached), "pods")
	for _, pod := range cached { // shared with the cache: read, never modify
		fmt.Fprintln(out, " ", klog.KObj(pod), pod.Status.Phase)
	}
	<-ctx.Done()
	return nil
}
