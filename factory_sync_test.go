package informer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer"
)

// The factory never waits or succeeds in silence: WaitForCacheSync says why
// an informer did not sync, and informers that can never run say so.

var podKey = informer.InformerKey{Type: podType, Resource: podsResource}

func TestFactoryWaitForCacheSyncFailsWhenNeverStarted(t *testing.T) {
	f := newFactory(t, offline, informer.FactoryOptions{})
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	// A context that never ends: the call must not wait.
	synced, err := f.WaitForCacheSync(context.Background())
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: false}, synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	want := "informers not synced: *v1.Pod v1/pods: the factory was never started: call Start before WaitForCacheSync"
	if err == nil || err.Error() != want {
		t.Errorf("WaitForCacheSync error = %v, want %s", err, want)
	}
}

func TestFactoryShutdownStopsInformersItNeverStarted(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)

	// Never started at all.
	f := newFactory(t, offline, informer.FactoryOptions{})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Shutdown()
	checkNeverRuns(t, f, pods, "informers not synced: *v1.Pod v1/pods: the factory is shut down")

	// Created after Start, which would start it on the next Start.
	f = newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	late := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Shutdown()
	checkNeverRuns(t, f, late, "informers not synced: *v1.Pod v1/pods: the factory is shut down")
	checkGoroutines()
}

// checkNeverRuns checks that pods, an informer of the shut-down factory f
// that never ran, says so everywhere: it is stopped, refuses handlers, is
// not run by Run, and WaitForCacheSync fails at once with wantErr.
func checkNeverRuns(t *testing.T, f *informer.Factory, pods *informer.Informer[*corev1.Pod], wantErr string) {
	t.Helper()
	if !pods.IsStopped() {
		t.Error("IsStopped() = false after Shutdown")
	}
	if _, err := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}); err == nil {
		t.Error("AddEventHandler succeeded on an informer that will never run")
	}
	pods.Run(context.Background()) // returns at once: the informer is stopped
	if pods.HasSynced() {
		t.Error("HasSynced() = true for an informer that never ran")
	}
	synced, err := f.WaitForCacheSync(context.Background())
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: false}, synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	if err == nil || err.Error() != wantErr {
		t.Errorf("WaitForCacheSync error = %v, want %s", err, wantErr)
	}
}

// errGaveUp is the cause of the contexts the tests give up waiting with.
var errGaveUp = errors.New("gave up")

// syncErrorOnceFailed calls WaitForCacheSync with a context already ended
// with errGaveUp until its error carries an informer's failure (satisfies
// failed), and returns that error. Until an informer's first list or watch
// has failed, the error only names it.
func syncErrorOnceFailed(t *testing.T, f *informer.Factory, failed func(error) bool) error {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errGaveUp)
	var err error
	informer.Eventually(t, "a failure in WaitForCacheSync's error", func() bool {
		_, err = f.WaitForCacheSync(ctx)
		return failed(err)
	})
	if !errors.Is(err, errGaveUp) {
		t.Errorf("error %v does not wrap the context's cause", err)
	}
	return err
}

func TestFactoryWaitForCacheSyncCarriesTheLastError(t *testing.T) {
	t.Run("forbidden", func(t *testing.T) {
		srv := newFakeAPIServer(t)
		srv.Serve(podsResource, podKind, true)
		srv.Forbid(podsResource)
		f := newFactory(t, srv.Config(), informer.FactoryOptions{})
		must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
		f.Start(context.Background())
		err := syncErrorOnceFailed(t, f, apierrors.IsForbidden)
		want := `informers not synced: *v1.Pod v1/pods (last error: failed to list *v1.Pod: list pods: pods is forbidden: ` +
			`User "test" cannot list resource "pods" in API group ""): gave up`
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("resource not served, namespaced factory", func(t *testing.T) {
		srv := newFakeAPIServer(t, addWidgetTypes)
		f := newFactory(t, srv.Config(), informer.FactoryOptions{Namespace: "a", Scheme: widgetScheme(t)})
		must[*informer.Informer[*Widget]](t)(informer.For(f, informer.InformerOptions[*Widget]{}))
		f.Start(context.Background())
		err := syncErrorOnceFailed(t, f, apierrors.IsNotFound)
		want := `informers not synced: *informer_test.Widget example.com/v1/widgets (last error: failed to list *informer_test.Widget: ` +
			`list widgets.example.com: the server could not find the requested resource; ` +
			`the server does not serve example.com/v1/widgets in namespace "a": if widgets is cluster-scoped, ` +
			`create its informer with InformerOptions.ClusterScoped; if it is a custom resource, check that its CRD is installed): gave up`
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("resource not served, all namespaces", func(t *testing.T) {
		srv := newFakeAPIServer(t, addWidgetTypes)
		f := newFactory(t, srv.Config(), informer.FactoryOptions{Scheme: widgetScheme(t)})
		must[*informer.Informer[*Widget]](t)(informer.For(f, informer.InformerOptions[*Widget]{}))
		f.Start(context.Background())
		err := syncErrorOnceFailed(t, f, apierrors.IsNotFound)
		want := `informers not synced: *informer_test.Widget example.com/v1/widgets (last error: failed to list *informer_test.Widget: ` +
			`list widgets.example.com: the server could not find the requested resource; ` +
			`the server does not serve example.com/v1/widgets: if it is a custom resource, check that its CRD is installed): gave up`
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("server unreachable", func(t *testing.T) {
		closed := httptest.NewServer(nil)
		closed.Close()
		f := newFactory(t, &rest.Config{Host: closed.URL}, informer.FactoryOptions{})
		must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
		f.Start(context.Background())
		err := syncErrorOnceFailed(t, f, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) })
		// The message holds the request's URL, whose watch timeout is random.
		if prefix := "informers not synced: *v1.Pod v1/pods (last error: watch pods: Get "; !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("error %q does not start with %q", err, prefix)
		}
		if suffix := "connect: connection refused): gave up"; !strings.HasSuffix(err.Error(), suffix) {
			t.Errorf("error %q does not end with %q", err, suffix)
		}
	})
}

func TestFactoryWaitForCacheSyncReturnsOnAnInformerThatStopped(t *testing.T) {
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, offline, informer.FactoryOptions{})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	f.Start(ended) // the informer stops before its first list: it never syncs
	informer.Eventually(t, "the informer stopped", pods.IsStopped)
	// It must not wait for an informer that will never sync: the bound is
	// only there so that a regression fails instead of hanging.
	ctx, giveUp := context.WithTimeoutCause(context.Background(), time.Minute, errGaveUp)
	defer giveUp()
	synced, err := f.WaitForCacheSync(ctx)
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: false}, synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	want := "informers not synced: *v1.Pod v1/pods (stopped before it synced: the context it ran with ended)"
	if diff := cmp.Diff(want, informer.ErrText(err)); diff != "" {
		t.Errorf("WaitForCacheSync error (-want +got):\n%s", diff)
	}
	f.Shutdown()
	checkGoroutines()
}

// TestFactoryWaitForCacheSyncSaysTheShardGroupIsNotRunning checks that an
// informer sharded through a ShardGroup whose Run was never called makes
// WaitForCacheSync fail saying so: at once with a context that has ended,
// and, with one that never ends, once the informer has waited 5 seconds
// (on its fake clock) for the group.
func TestFactoryWaitForCacheSyncSaysTheShardGroupIsNotRunning(t *testing.T) {
	group, err := informer.NewShardGroup(fake.NewClientset().CoordinationV1(), informer.ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	f := newFactory(t, offline, informer.FactoryOptions{Shard: &informer.Shard{Group: group}})
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{Clock: clk}))
	f.Start(context.Background())
	const notRunning = "*v1.Pod v1/pods (last error: shard group ctl is not running: call ShardGroup.Run, which its informers need to get their ranges)"

	ended, cancel := context.WithCancelCause(context.Background())
	cancel(errGaveUp)
	_, err = f.WaitForCacheSync(ended)
	if diff := cmp.Diff("informers not synced: "+notRunning+": gave up", fmt.Sprint(err)); diff != "" {
		t.Errorf("with an ended context (-want +got):\n%s", diff)
	}

	// The guard's deadline only stops a test that would otherwise hang.
	guard, cancelGuard := context.WithTimeoutCause(context.Background(), 20*time.Second, errGaveUp)
	defer cancelGuard()
	done := make(chan error, 1)
	go func() {
		_, err := f.WaitForCacheSync(guard)
		done <- err
	}()
	informer.Eventually(t, "the informer waiting for its group", clk.HasWaiters)
	clk.Step(5 * time.Second)
	err = <-done
	if diff := cmp.Diff("informers not synced: "+notRunning+": an informer cannot sync", fmt.Sprint(err)); diff != "" {
		t.Errorf("with a context that does not end (-want +got):\n%s", diff)
	}
}
