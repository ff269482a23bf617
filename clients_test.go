package informer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer/informertest"
)

func copyPods(l *corev1.PodList) ([]*corev1.Pod, error) { return CopyListItems(l.Items), nil }

// clientsetCalls returns the options of the clientset's list and watch
// calls. The random watch timeout is cleared, and so is Watch, which the
// typed client sets itself.
func clientsetCalls(cs *fake.Clientset) []informertest.FakeCall {
	var calls []informertest.FakeCall
	for _, action := range cs.Actions() {
		switch a := action.(type) {
		case clienttesting.ListActionImpl:
			calls = append(calls, informertest.FakeCall{Verb: "list", Options: a.ListOptions})
		case clienttesting.WatchActionImpl:
			options := a.ListOptions
			options.TimeoutSeconds, options.Watch = nil, false
			calls = append(calls, informertest.FakeCall{Verb: "watch", Options: options})
		}
	}
	return calls
}

// The clientset's tracker assigns its own resource versions.
var ignoreRV = cmpopts.IgnoreFields(storeCall{}, "RV")

// runClientReflector runs a reflector on lw until the test ends.
func runClientReflector(t *testing.T, lw ListerWatcher[*corev1.Pod], clock *clocktesting.FakeClock) (*Reflector[*corev1.Pod], *recordingStore[*corev1.Pod], context.Context) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	store := newRecordingStore[*corev1.Pod]()
	r := NewReflector(lw, store, ReflectorOptions{Clock: clock})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r, store, ctx
}

var sortedKeys = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func TestClientListerWatcherWithFakeClientset(t *testing.T) {
	cs := fake.NewClientset(NewPod("ns", "a", "1"), NewPod("ns", "b", "2"), NewPod("other", "x", "3"))
	lw := NewClientListerWatcher(cs.CoreV1().Pods("ns"), copyPods, ClientOptions{
		DisableWatchList: watchlist.DoesClientNotSupportWatchListSemantics(cs),
	})
	_, store, ctx := runClientReflector(t, lw, clocktesting.NewFakeClock(time.Unix(0, 0)))

	listed := store.waitFor(t, 1)[0]
	diffOrFail(t, "replace", storeCall{Op: "replace", Keys: []string{"ns/a", "ns/b"}}, listed, sortedKeys, ignoreRV)
	// Wait for the watch before changing anything: the fake only sends
	// events to open watches.
	waitForClientsetWatch(t, ctx, cs, 1)
	pods := cs.CoreV1().Pods("ns")
	if _, err := pods.Create(ctx, NewPod("ns", "c", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Update(ctx, NewPod("ns", "a", "5"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a", "ns/b"}},
		{Op: "add", Keys: []string{"ns/c"}},
		{Op: "update", Keys: []string{"ns/a"}},
		{Op: "delete", Keys: []string{"ns/b"}},
	}, store.waitFor(t, 4), sortedKeys, ignoreRV)
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall(listed.RV)}, clientsetCalls(cs))
}

// waitForClientsetWatch waits until the clientset has served n watches.
func waitForClientsetWatch(t *testing.T, ctx context.Context, cs *fake.Clientset, n int) {
	t.Helper()
	for {
		watches := 0
		for _, action := range cs.Actions() {
			if action.GetVerb() == "watch" {
				watches++
			}
		}
		if watches >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d watches", n)
		case <-time.After(time.Millisecond):
		}
	}
}

func TestClientListerWatcherTooManyRequestsWithoutRelist(t *testing.T) {
	cs := fake.NewClientset(NewPod("ns", "a", "1"))
	refusals := 1
	cs.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		if refusals > 0 {
			refusals--
			return true, nil, apierrors.NewTooManyRequests("slow down", 1)
		}
		return false, nil, nil
	})
	lw := NewClientListerWatcher(cs.CoreV1().Pods("ns"), copyPods, ClientOptions{DisableWatchList: true})
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	_, store, ctx := runClientReflector(t, lw, clock)
	listRV := store.waitFor(t, 1)[0].RV
	waitForClientsetWatch(t, ctx, cs, 1)
	for !clock.HasWaiters() {
		select {
		case <-ctx.Done():
			t.Fatal("no backoff")
		case <-time.After(time.Millisecond):
		}
	}
	clock.Step(time.Minute)
	waitForClientsetWatch(t, ctx, cs, 2)
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall(listRV), watchCall(listRV)}, clientsetCalls(cs))
}

func TestClientListerWatcherBadWatchEvents(t *testing.T) {
	cs := fake.NewClientset()
	scripted := watch.NewFake()
	served := false
	cs.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		if served {
			return false, nil, nil
		}
		served = true
		return true, scripted, nil
	})
	lw := NewClientListerWatcher(cs.CoreV1().Pods("ns"), copyPods, ClientOptions{DisableWatchList: true})
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	r, store, ctx := runClientReflector(t, lw, clock)
	listRV := store.waitFor(t, 1)[0].RV
	scripted.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}})
	scripted.Modify(&metav1.Status{Status: metav1.StatusFailure})
	scripted.Add(NewPod("ns", "", "3"))
	scripted.Action(watch.Added, nil)
	scripted.Add(NewPod("ns", "ok", "4"))
	status := apierrors.NewResourceExpired("too old").ErrStatus
	scripted.Error(&status)
	// 410: back off, relist, watch the clientset's tracker.
	for !clock.HasWaiters() {
		select {
		case <-ctx.Done():
			t.Fatal("no backoff")
		case <-time.After(time.Millisecond):
		}
	}
	clock.Step(time.Minute)
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: listRV},
		{Op: "add", Keys: []string{"ns/ok"}, RV: "4"},
		{Op: "replace", Keys: []string{}, RV: listRV},
	}, store.waitFor(t, 3))
	diffOrFail(t, "stats", ReflectorStats{WrongTypeEvents: 2, NamelessEvents: 1, NilObjectEvents: 1, ErrorEvents: 1}, r.Stats())
	waitForClientsetWatch(t, ctx, cs, 2)
	// The relist is at the last seen version ("4"), without pagination.
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall(listRV), listCall("4", 0, ""), watchCall(listRV)}, clientsetCalls(cs))
}

// badClient returns the list it is given.
type badClient struct{ list *corev1.PodList }

func (c badClient) List(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	return c.list, nil
}

func (c badClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

func TestClientListerWatcherDirect(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(NewPod("ns", "a", "1"))
	lw := NewClientListerWatcher(cs.CoreV1().Pods("ns"), ExtractListItems[*corev1.Pod, *corev1.PodList], ClientOptions{
		TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "app=web" },
	})
	if watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Error("typed client declared streaming unsupported")
	}
	if _, err := lw.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "3"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	diffOrFail(t, "calls", []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{ResourceVersion: "0", LabelSelector: "app=web"}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "3", LabelSelector: "app=web"}},
	}, clientsetCalls(cs))

	if _, err := NewClientListerWatcher(badClient{}, copyPods, ClientOptions{}).List(ctx, metav1.ListOptions{}); !errors.Is(err, errNilList) {
		t.Errorf("nil list: got %v, want %v", err, errNilList)
	}
	failing := func(*corev1.PodList) ([]*corev1.Pod, error) { return nil, errors.New("no items") }
	_, err = NewClientListerWatcher(badClient{list: &corev1.PodList{}}, failing, ClientOptions{}).List(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "no items") {
		t.Errorf("failing items: got %v", err)
	}
}

func TestCopyAndExtractListItems(t *testing.T) {
	list := &corev1.PodList{Items: []corev1.Pod{*NewPod("ns", "a", "1"), *NewPod("ns", "b", "2")}}
	copied := CopyListItems(list.Items)
	diffOrFail(t, "copies", []*corev1.Pod{NewPod("ns", "a", "1"), NewPod("ns", "b", "2")}, copied)
	if copied[0] == &list.Items[0] {
		t.Error("CopyListItems returned a pointer into the list")
	}
	extracted, err := ExtractListItems[*corev1.Pod](list)
	if err != nil {
		t.Fatal(err)
	}
	diffOrFail(t, "extracted", copied, extracted)
	if _, err := ExtractListItems[*corev1.Pod](&corev1.ConfigMapList{Items: []corev1.ConfigMap{{}}}); err == nil ||
		!strings.Contains(err.Error(), "list item 0 is a *v1.ConfigMap, not a *v1.Pod") {
		t.Errorf("wrong item type: got %v", err)
	}
}

func TestCacheListerWatcher(t *testing.T) {
	cs := fake.NewClientset(NewPod("ns", "a", "1"))
	pods := cs.CoreV1().Pods("ns")
	clw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, o)
		},
	}, cs)
	lw := NewCacheListerWatcher[*corev1.Pod](clw)
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Error("the fake clientset's opt-out was lost")
	}
	_, store, ctx := runClientReflector(t, lw, clocktesting.NewFakeClock(time.Unix(0, 0)))
	diffOrFail(t, "replace", []storeCall{{Op: "replace", Keys: []string{"ns/a"}}}, store.waitFor(t, 1), ignoreRV)
	waitForClientsetWatch(t, ctx, cs, 1)
	if _, err := pods.Create(ctx, NewPod("ns", "b", "2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	diffOrFail(t, "add", storeCall{Op: "add", Keys: []string{"ns/b"}}, store.waitFor(t, 2)[1], ignoreRV)
}

func TestCacheListerWatcherBadLists(t *testing.T) {
	for name, tc := range map[string]struct {
		list    runtime.Object
		wantErr string
	}{
		"wrong item type": {&corev1.ConfigMapList{Items: []corev1.ConfigMap{{}}}, "list item 0 is a *v1.ConfigMap, not a *v1.Pod"},
		"not a list":      {NewPod("ns", "a", "1"), "*v1.Pod"},
		"nil":             {nil, errNilList.Error()},
	} {
		t.Run(name, func(t *testing.T) {
			lw := NewCacheListerWatcher[*corev1.Pod](&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return tc.list, nil },
			})
			_, err := lw.List(t.Context(), metav1.ListOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
