package informer

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestBuiltinClusterScopedKindsMatchTheClientset derives the scope of
// every listable built-in resource from client-go's generated clientset,
// where the getter of a namespaced resource takes the namespace
// (Pods(namespace)) and that of a cluster-scoped one does not (Nodes()),
// and compares it with builtinClusterScoped.
func TestBuiltinClusterScopedKindsMatchTheClientset(t *testing.T) {
	clusterScoped := map[schema.GroupKind]bool{}
	namespaced := map[schema.GroupKind]bool{}
	for group := range reflect.TypeFor[kubernetes.Interface]().Methods() { // CoreV1(), AppsV1()...
		if group.Type.NumIn() != 0 || group.Type.NumOut() != 1 || group.Type.Out(0).Kind() != reflect.Interface {
			continue // Discovery() is an interface too, without resources: skipped below
		}
		for getter := range group.Type.Out(0).Methods() { // Nodes(), Pods(namespace)...
			if getter.Type.NumOut() != 1 || getter.Type.Out(0).Kind() != reflect.Interface {
				continue // RESTClient()
			}
			resource := getter.Type.Out(0)
			get, hasGet := resource.MethodByName("Get")
			_, hasList := resource.MethodByName("List")
			if !hasGet || !hasList {
				continue // not a resource an informer can list
			}
			obj, ok := reflect.New(get.Type.Out(0).Elem()).Interface().(runtime.Object)
			if !ok {
				t.Fatalf("%s.%s: Get returns %v, not a runtime.Object", group.Name, getter.Name, get.Type.Out(0))
			}
			kinds, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
			if err != nil {
				t.Fatalf("%s.%s: %v", group.Name, getter.Name, err)
			}
			if getter.Type.NumIn() == 0 {
				clusterScoped[kinds[0].GroupKind()] = true
			} else {
				namespaced[kinds[0].GroupKind()] = true
			}
		}
	}
	if len(namespaced) < 20 || len(clusterScoped) < 20 {
		t.Fatalf("found %d namespaced and %d cluster-scoped kinds: the clientset's shape changed", len(namespaced), len(clusterScoped))
	}
	for gk := range clusterScoped {
		if namespaced[gk] {
			t.Errorf("%v is namespaced in one version and cluster-scoped in another", gk)
		}
	}
	if diff := cmp.Diff(clusterScoped, builtinClusterScoped); diff != "" {
		t.Errorf("builtinClusterScoped differs from the clientset's cluster-scoped kinds (-clientset +table):\n%s", diff)
	}
}
