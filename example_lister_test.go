package informer_test

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	informer "github.com/kubetyped/informer"
)

func listerExamplePod(namespace, name, app, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// podNames returns the sorted namespace/name of pods: listers return
// objects in no particular order.
func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	return names
}

// A Lister answers typed queries from an Indexer. In a program the Indexer
// is the one an Informer fills (Informer.Lister returns this Lister).
func ExampleLister() {
	indexer := informer.NewIndexer(map[string]informer.IndexFunc[*corev1.Pod]{
		informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod],
	})
	for _, p := range []*corev1.Pod{
		listerExamplePod("shop", "web-1", "web", "node-1"),
		listerExamplePod("shop", "web-2", "web", "node-2"),
		listerExamplePod("shop", "db-1", "db", "node-1"),
		listerExamplePod("blog", "web-1", "web", "node-3"),
	} {
		if err := indexer.Add(p); err != nil {
			fmt.Println(err)
			return
		}
	}
	pods := informer.NewLister(indexer, schema.GroupVersionResource{Version: "v1", Resource: "pods"})

	web, _ := pods.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("app=web:", podNames(web))

	db, _ := pods.Namespace("shop").List(labels.Set{"app": "db"}.AsSelector())
	fmt.Println("app=db in shop:", podNames(db))

	pod, err := pods.Namespace("blog").Get("web-1")
	fmt.Println("blog/web-1 runs on", pod.Spec.NodeName, err)

	_, err = pods.Namespace("blog").Get("db-1")
	fmt.Println(apierrors.IsNotFound(err), err)
	// Output:
	// app=web: [blog/web-1 shop/web-1 shop/web-2]
	// app=db in shop: [shop/db-1]
	// blog/web-1 runs on node-3 <nil>
	// true pods "db-1" not found
}

// Selectors with set-based requirements are answered from the label index
// too; requirements it cannot answer (!=, notin, !key) filter the candidates.
func ExampleLister_List() {
	indexer := informer.NewIndexer[*corev1.Pod](nil)
	for _, p := range []*corev1.Pod{
		listerExamplePod("shop", "web-1", "web", "node-1"),
		listerExamplePod("shop", "api-1", "api", "node-1"),
		listerExamplePod("shop", "db-1", "db", "node-2"),
	} {
		if err := indexer.Add(p); err != nil {
			fmt.Println(err)
			return
		}
	}
	selector, err := labels.Parse("app in (web,api,db),app!=db")
	if err != nil {
		fmt.Println(err)
		return
	}
	pods := informer.NewLister(indexer, corev1.SchemeGroupVersion.WithResource("pods"))
	shop, _ := pods.Namespace("shop").List(selector)
	fmt.Println(podNames(shop))
	none, _ := pods.List(labels.Nothing())
	fmt.Println(none == nil)
	// Output:
	// [shop/api-1 shop/web-1]
	// true
}

// ByIndex finds objects by the values of a custom index, here the node a
// pod runs on.
func ExampleIndexer_ByIndex() {
	indexer := informer.NewIndexer(map[string]informer.IndexFunc[*corev1.Pod]{
		"byNode": func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
	})
	for _, p := range []*corev1.Pod{
		listerExamplePod("shop", "web-1", "web", "node-1"),
		listerExamplePod("shop", "db-1", "db", "node-1"),
		listerExamplePod("blog", "web-1", "web", "node-2"),
	} {
		if err := indexer.Add(p); err != nil {
			fmt.Println(err)
			return
		}
	}
	onNode1, err := indexer.ByIndex("byNode", "node-1")
	fmt.Println(podNames(onNode1), err)
	keys, err := indexer.IndexKeys("byNode", "node-1")
	fmt.Println(keys, err)
	// Output:
	// [shop/db-1 shop/web-1] <nil>
	// [shop/db-1 shop/web-1] <nil>
}
