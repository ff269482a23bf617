package informertest

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestFakeListerWatcherCloseAndStop(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lw := NewFakeListerWatcher[*corev1.Pod]()
	ctx := t.Context()
	first, err := lw.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.CloseWatch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-first.ResultChan(); ok {
		t.Fatal("closed watch delivered an event")
	}
	first.Stop() // stopping an ended watch is harmless

	// A send blocked on a watch that its consumer stops moves on to the
	// next watch.
	second, err := lw.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := fakePod("", "a", "1")
	sent := make(chan error, 1)
	go func() { sent <- lw.Add(ctx, a) }()
	if _, err := lw.WaitForCalls(ctx, 2); err != nil {
		t.Fatal(err)
	}
	second.Stop()
	third, err := lw.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-third.ResultChan()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: a}, ev); diff != "" {
		t.Errorf("event on the next watch (-want +got):\n%s", diff)
	}
	third.Stop()

	// Without a watch, a send gives up when its context ends.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := lw.Add(cancelled, a); !errors.Is(err, context.Canceled) {
		t.Errorf("send without watch: got %v, want context.Canceled", err)
	}
	if err := lw.CloseWatch(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("close without watch: got %v, want context.Canceled", err)
	}
}

func TestFakeListerWatcherWatchBuffer(t *testing.T) {
	lw := NewFakeListerWatcher[*corev1.Pod]()
	lw.SetWatchBuffer(2)
	ctx := t.Context()
	w, err := lw.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := fakePod("", "a", "1")
	// With room for two events, both sends return without a reader.
	if err := errors.Join(lw.Add(ctx, a), lw.Modify(ctx, a)); err != nil {
		t.Fatal(err)
	}
	if err := lw.CloseWatch(ctx); err != nil {
		t.Fatal(err)
	}
	want := []watch.Event{{Type: watch.Added, Object: a}, {Type: watch.Modified, Object: a}}
	if diff := cmp.Diff(want, collectEvents(w)); diff != "" {
		t.Errorf("buffered events (-want +got):\n%s", diff)
	}
}
