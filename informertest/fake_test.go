package informertest

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"k8s.io/utils/ptr"

	"github.com/kubetyped/informer/internal/listwatch"
)

func fakePod(namespace, name, resourceVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: resourceVersion}}
}

func TestFakeListerWatcherListWhole(t *testing.T) {
	lw := NewFakeListerWatcher[*corev1.Pod]()
	a, b := fakePod("ns", "a", "5"), fakePod("ns", "b", "6")
	lw.SetList("7", a, b)
	got, err := lw.List(t.Context(), metav1.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := &listwatch.ListResult[*corev1.Pod]{Items: []*corev1.Pod{a, b}, ResourceVersion: "7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List without pagination (-want +got):\n%s", diff)
	}
}

func TestFakeListerWatcherListPages(t *testing.T) {
	lw := NewFakeListerWatcher[*corev1.Pod]()
	a, b, c := fakePod("ns", "a", "1"), fakePod("ns", "b", "2"), fakePod("ns", "c", "3")
	lw.SetList("9", a, b, c)
	lw.SetPagination(true)
	ctx := t.Context()
	var pages []*listwatch.ListResult[*corev1.Pod]
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 2}
	for {
		page, err := lw.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	want := []*listwatch.ListResult[*corev1.Pod]{
		{Items: []*corev1.Pod{a, b}, ResourceVersion: "9", Continue: "fake:9:2"},
		{Items: []*corev1.Pod{c}, ResourceVersion: "9"},
	}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	// A token from before the list changed has expired.
	lw.SetList("10", a)
	_, err := lw.List(ctx, metav1.ListOptions{Limit: 2, Continue: "fake:9:2"})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("stale continue token: got %v, want an expired error", err)
	}
	_, err = lw.List(ctx, metav1.ListOptions{Limit: 2, Continue: "garbage"})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("unknown continue token: got %v, want an expired error", err)
	}
}

func TestFakeListerWatcherScriptedErrorsAndCalls(t *testing.T) {
	lw := NewFakeListerWatcher[*corev1.Pod]()
	gone := apierrors.NewResourceExpired("too old")
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	lw.FailNextList(gone)
	lw.FailNextWatch(tooMany, nil)
	ctx := t.Context()

	if _, err := lw.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); !errors.Is(err, gone) {
		t.Errorf("first List: got %v, want %v", err, gone)
	}
	if _, err := lw.List(ctx, metav1.ListOptions{ResourceVersion: ""}); err != nil {
		t.Errorf("second List: %v", err)
	}
	if _, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "3"}); !errors.Is(err, tooMany) {
		t.Errorf("first Watch: got %v, want %v", err, tooMany)
	}
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "3", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()

	want := []FakeCall{
		{Verb: "list", Options: metav1.ListOptions{ResourceVersion: "0"}},
		{Verb: "list", Options: metav1.ListOptions{ResourceVersion: ""}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "3"}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "3", AllowWatchBookmarks: true}},
	}
	if diff := cmp.Diff(want, lw.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	got, err := lw.WaitForCalls(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WaitForCalls (-want +got):\n%s", diff)
	}
}

// collectEvents reads w until its result channel closes.
func collectEvents(w watch.Interface) []watch.Event {
	var events []watch.Event
	for ev := range w.ResultChan() {
		events = append(events, ev)
	}
	return events
}

func TestFakeListerWatcherEvents(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lw := NewFakeListerWatcher[*corev1.Pod]()
	ctx := t.Context()
	a := fakePod("ns", "a", "11")
	wrong := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}

	// Sends issued before the watch opens wait for it.
	sent := make(chan error, 1)
	go func() {
		sent <- errors.Join(
			lw.Add(ctx, a),
			lw.Modify(ctx, a),
			lw.Delete(ctx, a),
			lw.Bookmark(ctx, "12"),
			lw.Send(ctx, watch.Event{Type: watch.Added, Object: wrong}),
			lw.Send(ctx, watch.Event{Type: watch.Added}),
			lw.Error(ctx, &metav1.Status{Code: 500}),
			lw.FailWatch(ctx, apierrors.NewResourceExpired("gone")),
		)
	}()
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	got := collectEvents(w)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	goneStatus := apierrors.NewResourceExpired("gone").ErrStatus
	want := []watch.Event{
		{Type: watch.Added, Object: a},
		{Type: watch.Modified, Object: a},
		{Type: watch.Deleted, Object: a},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}}},
		{Type: watch.Added, Object: wrong},
		{Type: watch.Added},
		{Type: watch.Error, Object: &metav1.Status{Code: 500}},
		{Type: watch.Error, Object: &goneStatus},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestFakeListerWatcherFailWatchWithDecodeError(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lw := NewFakeListerWatcher[*corev1.Pod]()
	ctx := t.Context()
	w, err := lw.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lw.FailWatch(ctx, errors.New("bad bytes")) }()
	got := collectEvents(w)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != watch.Error {
		t.Fatalf("got %v, want one Error event", got)
	}
	status, ok := got[0].Object.(*metav1.Status)
	if !ok {
		t.Fatalf("Error event object is %T, want *metav1.Status", got[0].Object)
	}
	err = apierrors.FromObject(status)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "unable to decode an event from the watch stream: bad bytes") {
		t.Errorf("got %v, want an internal error about decoding", err)
	}
}

func TestFakeListerWatcherStreamingList(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lw := NewFakeListerWatcher[*corev1.Pod]()
	ctx := t.Context()
	a, b := fakePod("ns", "a", "1"), fakePod("ns", "b", "2")
	lw.SetList("5", a, b)
	w, err := lw.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	var got []watch.Event
	for range 3 {
		got = append(got, <-w.ResultChan())
	}
	w.Stop()
	want := []watch.Event{
		{Type: watch.Added, Object: a},
		{Type: watch.Added, Object: b},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: "5",
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("initial events (-want +got):\n%s", diff)
	}

	// In manual mode the test sends them.
	lw.SetManualInitialEvents(true)
	w, err = lw.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { sent <- lw.EndInitialEvents(ctx, "6") }()
	ev := <-w.ResultChan()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	w.Stop()
	wantEnd := watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "6",
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}}
	if diff := cmp.Diff(wantEnd, ev); diff != "" {
		t.Errorf("manual end bookmark (-want +got):\n%s", diff)
	}

	if lw.IsWatchListSemanticsUnSupported() {
		t.Error("watch-list declared unsupported by default")
	}
	lw.SetDisableWatchList(true)
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("SetDisableWatchList(true) not reported")
	}
}
