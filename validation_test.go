package informer

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/informertest"
)

// Invalid input is rejected by the call that receives it, with an error
// that says what is wrong and how to fix it.

// errText returns err's message, or "<nil>".
func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestAddEventHandlerRejectsInvalidHandlersAndOptions(t *testing.T) {
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	accept := func(*corev1.Pod) bool { return true }
	var funcs ResourceEventHandlerFuncs[*corev1.Pod]
	negative := -time.Second
	cases := []struct {
		name    string
		handler ResourceEventHandler[*corev1.Pod]
		opts    HandlerOptions
		want    string
	}{{
		name:    "zero filtering handler",
		handler: FilteringResourceEventHandler[*corev1.Pod]{},
		want:    "handler h was not added: the FilteringResourceEventHandler has neither a FilterFunc nor a Handler",
	}, {
		name:    "no filter",
		handler: FilteringResourceEventHandler[*corev1.Pod]{Handler: funcs},
		want:    "handler h was not added: the FilteringResourceEventHandler has no FilterFunc",
	}, {
		name:    "no inner handler, by pointer",
		handler: &FilteringResourceEventHandler[*corev1.Pod]{FilterFunc: accept},
		want:    "handler h was not added: the FilteringResourceEventHandler has no Handler",
	}, {
		name:    "nested zero filtering handler",
		handler: FilteringResourceEventHandler[*corev1.Pod]{FilterFunc: accept, Handler: FilteringResourceEventHandler[*corev1.Pod]{}},
		want:    "handler h was not added: the FilteringResourceEventHandler has neither a FilterFunc nor a Handler",
	}, {
		name:    "negative resync",
		handler: funcs,
		opts:    HandlerOptions{ResyncPeriod: &negative},
		want:    "handler h was not added: HandlerOptions.ResyncPeriod is negative (-1s): use 0 for no resync",
	}, {
		name:    "negative bound",
		handler: funcs,
		opts:    HandlerOptions{MaxPending: -1},
		want:    "handler h was not added: HandlerOptions.MaxPending is negative (-1): use 0 for no bound",
	}, {
		name:    "unknown overflow policy",
		handler: funcs,
		opts:    HandlerOptions{MaxPending: 1, Overflow: 7},
		want:    "handler h was not added: HandlerOptions.Overflow is 7, neither OverflowBlock nor OverflowCoalesce",
	}}
	for _, tc := range cases {
		tc.opts.Name = "h"
		reg, err := inf.AddEventHandlerWithOptions(tc.handler, tc.opts)
		if got := errText(err); got != tc.want || reg != nil {
			t.Errorf("%s: got %v, %q; want no registration and %q", tc.name, reg, got, tc.want)
		}
	}
	// A complete filtering handler is accepted.
	_, err := inf.AddEventHandler(FilteringResourceEventHandler[*corev1.Pod]{FilterFunc: accept, Handler: funcs})
	plMust(t, err)
}

func TestNewInformerRejectsInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		lw   ListerWatcher[*corev1.Pod]
		opts InformerOptions[*corev1.Pod]
		want string
	}{{
		name: "negative resync",
		lw:   informertest.NewFakeListerWatcher[*corev1.Pod](),
		opts: InformerOptions[*corev1.Pod]{Name: "pods", ResyncPeriod: new(-time.Minute)},
		want: "Informer pods: invalid options: InformerOptions.ResyncPeriod is negative (-1m0s): use 0 for no resync",
	}, {
		name: "no ListerWatcher",
		want: "Informer *v1.Pod: NewInformer needs a ListerWatcher, got nil",
	}} {
		inf, err := NewInformer(tc.lw, tc.opts)
		if got := errText(err); got != tc.want || inf != nil {
			t.Errorf("%s: got %v, %q; want no informer and %q", tc.name, inf, got, tc.want)
		}
	}
}

func TestNegativeFactoryResyncIsRejected(t *testing.T) {
	_, err := NewFactory(&rest.Config{Host: "http://localhost:1"}, FactoryOptions{ResyncPeriod: -time.Second})
	if want := "informer factory: FactoryOptions.ResyncPeriod is negative (-1s): use 0 for no resync"; errText(err) != want {
		t.Errorf("NewFactory: got %q, want %q", errText(err), want)
	}
	f, err := NewFactory(&rest.Config{Host: "http://localhost:1"}, FactoryOptions{})
	plMust(t, err)
	defer f.Shutdown()
	_, err = For(f, InformerOptions[*corev1.Pod]{ResyncPeriod: new(-time.Second)})
	if want := "informer for *v1.Pod: InformerOptions.ResyncPeriod is negative (-1s): use 0 for no resync"; errText(err) != want {
		t.Errorf("For: got %q, want %q", errText(err), want)
	}
	// The rejected call created nothing: a valid one creates the informer.
	_, err = For(f, InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Minute)})
	plMust(t, err)
}

func TestAddingToAStoppedInformerKeepsClientGoWording(t *testing.T) {
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inf.Run(ctx)
	_, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{Name: "late"})
	if want := "handler late was not added to shared informer because it has stopped already"; errText(err) != want {
		t.Errorf("AddEventHandler: got %q, want %q", errText(err), want)
	}
	err = inf.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"x": MetaNamespaceIndexFunc[*corev1.Pod]})
	if want := "indexer was not added because it has stopped already"; errText(err) != want {
		t.Errorf("AddIndexers: got %q, want %q", errText(err), want)
	}
}

func TestListerGetWithoutNamespaceSaysWhatTheKeyIs(t *testing.T) {
	idx := NewIndexer[*corev1.Pod](nil)
	plMust(t, idx.Add(NewPod("ns", "p1", "1")))
	l := NewLister(idx, schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	_, err := l.Get("p1")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get(p1) = %v, want NotFound", err)
	}
	want := `pods "p1" not found: the objects of this lister are namespaced, so the key is "namespace/name": use Get("<namespace>/p1") or Namespace("<namespace>").Get("p1")`
	if got := err.Error(); got != want {
		t.Errorf("Get(p1) error:\n got %q\nwant %q", got, want)
	}
	if pod, err := l.Get("ns/p1"); err != nil || pod.Name != "p1" {
		t.Errorf("Get(ns/p1) = %v, %v", pod, err)
	}
	// A plain NotFound for a complete key, and for cluster-scoped objects.
	if _, err := l.Get("ns/p2"); errText(err) != `pods "ns/p2" not found` {
		t.Errorf("Get(ns/p2) error = %v", err)
	}
	nodes := NewIndexer[*corev1.Node](nil)
	plMust(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	if _, err := NewLister(nodes, schema.GroupVersionResource{Version: "v1", Resource: "nodes"}).Get("n2"); errText(err) != `nodes "n2" not found` {
		t.Errorf("nodes Get(n2) error = %v", err)
	}
}

func TestJoinAnd(t *testing.T) {
	got := []string{joinAnd([]string{"A"}), joinAnd([]string{"A", "B"}), joinAnd([]string{"A", "B", "C"})}
	if diff := cmp.Diff([]string{"A", "A and B", "A, B and C"}, got); diff != "" {
		t.Errorf("joinAnd (-want +got):\n%s", diff)
	}
}
