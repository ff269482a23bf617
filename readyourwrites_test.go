package informer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// rwResult is the outcome of a waiting call run in the background.
type rwResult struct {
	pod *corev1.Pod
	err error
}

// rwGetAtLeast runs GetAtLeast in the background.
func rwGetAtLeast(ctx context.Context, inf *Informer[*corev1.Pod], key, rv string) <-chan rwResult {
	done := make(chan rwResult, 1)
	go func() {
		pod, err := inf.Lister().GetAtLeast(ctx, key, rv)
		done <- rwResult{pod, err}
	}()
	return done
}

func TestGetAtLeastWaitsForTheWrite(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))

	// The write returned 12; the cache still holds 10.
	done := rwGetAtLeast(ctx, inf, "ns/a", "12")
	if got, err := inf.Lister().Get("ns/a"); err != nil || got.ResourceVersion != "10" {
		t.Fatalf("plain Get = %v, %v; want the stale state at 10", got, err)
	}
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "11")))
	plMust(t, lw.Modify(ctx, NewPod("ns", "a", "12")))
	r := <-done
	plMust(t, r.err)
	if r.pod.ResourceVersion != "12" {
		t.Errorf("GetAtLeast returned resource version %s, want 12", r.pod.ResourceVersion)
	}
	// Already there: no wait.
	pods, err := inf.Lister().ListAtLeast(ctx, labels.Everything(), "11")
	plMust(t, err)
	if len(pods) != 1 || pods[0].ResourceVersion != "12" {
		t.Errorf("ListAtLeast = %v", pods)
	}
}

func TestWaitForResourceVersionEndsOnBookmark(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "10"))
	var mu sync.Mutex
	var bookmarks []string
	_, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{
		BookmarkFunc: func(rv string) {
			mu.Lock()
			defer mu.Unlock()
			bookmarks = append(bookmarks, rv)
		},
	})
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))

	// A write to another resource at 20: only a bookmark brings the pod
	// cache there.
	done := make(chan error, 1)
	go func() { done <- inf.WaitForResourceVersion(ctx, "20") }()
	plMust(t, lw.Bookmark(ctx, "21"))
	plMust(t, <-done)
	got, err := inf.Lister().GetAtLeast(ctx, "ns/a", "20")
	plMust(t, err)
	if got.ResourceVersion != "10" {
		t.Errorf("Get after the bookmark = %s, want the unchanged 10", got.ResourceVersion)
	}
	Eventually(t, "the bookmark callback", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bookmarks) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"21"}, bookmarks); diff != "" {
		t.Errorf("BookmarkFunc calls (-want +got):\n%s", diff)
	}
}

func TestBookmarkFuncInOrderWithNotifications(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10")
	var mu sync.Mutex
	var seen []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	_, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) { record("add " + pod.Name + "@" + pod.ResourceVersion) },
	}, HandlerOptions{BookmarkFunc: func(rv string) { record("bookmark@" + rv) }})
	plMust(t, err)
	// A handler without BookmarkFunc receives nothing for bookmarks.
	plain := newPLRecorder()
	plainReg, err := inf.AddEventHandler(plain)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, lw.Add(ctx, NewPod("ns", "a", "11")))
	plMust(t, lw.Bookmark(ctx, "12"))
	plMust(t, lw.Add(ctx, NewPod("ns", "b", "13")))
	plMust(t, lw.Bookmark(ctx, "14"))
	Eventually(t, "four calls", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4
	})
	mu.Lock()
	if diff := cmp.Diff([]string{"add a@11", "bookmark@12", "add b@13", "bookmark@14"}, seen); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	mu.Unlock()
	plain.waitFor(t, 2)
	Eventually(t, "the plain handler's queue to drain", func() bool { return plainReg.Stats().Pending == 0 })
	if got := plainReg.Stats().Delivered; got != 2 {
		t.Errorf("the handler without BookmarkFunc got %d notifications, want its 2 adds", got)
	}
}

func TestWaitForResourceVersionErrors(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10")
	stop := plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, inf.WaitForResourceVersion(ctx, "10"))

	err := inf.WaitForResourceVersion(ctx, "abc")
	var invalid resourceversion.InvalidResourceVersion
	if !errors.Is(err, ErrResourceVersionNotComparable) || !errors.As(err, &invalid) {
		t.Errorf("an opaque resource version: got %v, want ErrResourceVersionNotComparable wrapping InvalidResourceVersion", err)
	}

	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := inf.WaitForResourceVersion(short, "11"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a version the cache never reaches: got %v, want DeadlineExceeded", err)
	}

	done := make(chan error, 1)
	go func() { done <- inf.WaitForResourceVersion(ctx, "11") }()
	stop()
	if err := <-done; err == nil || !errors.Is(err, errInformerStopped) {
		t.Errorf("a wait on an informer that stops: got %v", err)
	}
	// A version reached before the informer stopped still succeeds.
	plMust(t, inf.WaitForResourceVersion(ctx, "9"))

	if _, err := NewLister(NewIndexer[*corev1.Pod](nil), corev1.SchemeGroupVersion.WithResource("pods")).GetAtLeast(ctx, "ns/a", "1"); !errors.Is(err, errNoInformer) {
		t.Errorf("a Lister without informer: got %v", err)
	}
}

func TestWaitForResourceVersionSaysTheInformerHasNotStarted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("gave up"))
	unstarted, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	stopped, _ := plInformer(t, InformerOptions[*corev1.Pod]{Name: "pods"})
	stopped.stopUnstarted() // as Factory.Shutdown does
	got := []string{
		errText(unstarted.WaitForResourceVersion(ctx, "5")),
		errText(stopped.WaitForResourceVersion(ctx, "5")),
	}
	want := []string{
		`Informer *v1.Pod: waiting for resource version "5": the informer has not started: ` +
			`its cache applies nothing until its Run (or its factory's Start) is called: gave up`,
		`Informer pods: waiting for resource version "5": the informer has stopped before it ever ran`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WaitForResourceVersion errors (-want +got):\n%s", diff)
	}
}

func TestWaitForResourceVersionOpaqueServer(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("opaque-1", NewPod("ns", "a", "opaque-1"))
	plRun(t, inf)
	Eventually(t, "sync", inf.HasSynced)
	_, err := inf.Lister().GetAtLeast(plCtx(t), "ns/a", "5")
	if !errors.Is(err, ErrResourceVersionNotComparable) {
		t.Errorf("got %v, want ErrResourceVersionNotComparable", err)
	}
}

func TestGetAtLeastSeesDeletion(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "10"))
	plRun(t, inf)
	ctx := plCtx(t)
	done := rwGetAtLeast(ctx, inf, "ns/a", "11")
	plMust(t, lw.Delete(ctx, NewPod("ns", "a", "11")))
	if r := <-done; !apierrors.IsNotFound(r.err) {
		t.Errorf("GetAtLeast after the deletion: %v, %v; want NotFound", r.pod, r.err)
	}
}
