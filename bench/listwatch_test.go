package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestWatchScriptReleasesThePrefilledWatchOnce(t *testing.T) {
	events := []watch.Event{{Type: watch.Added, Object: newPod(1)}, {Type: watch.Deleted, Object: newPod(1)}}
	s := newWatchScript(events)
	opened := make(chan watch.Interface)
	go func() {
		w, err := s.open(context.Background())
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	<-s.started
	select {
	case <-opened:
		t.Fatal("the first watch opened before release")
	case <-time.After(20 * time.Millisecond):
	}
	s.release()
	s.release() // harmless twice
	w := <-opened
	var got []watch.Event
	for range events {
		got = append(got, <-w.ResultChan())
	}
	if diff := cmp.Diff(events, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	w.Stop()
	w.Stop() // harmless twice

	again, err := s.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-again.ResultChan():
		t.Fatalf("a re-watch delivered %v, want an idle watch", ev)
	default:
	}
}

func TestWatchScriptGivesUpWhenTheContextEnds(t *testing.T) {
	s := newWatchScript(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.open(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestClientGoListerWatcherHandsTheListOverOnce(t *testing.T) {
	lw := newClientGoListerWatcher(newPodList(2, "7"), newWatchScript(nil))
	first, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := []int{len(first.(*corev1.PodList).Items), len(second.(*corev1.PodList).Items)}
	rvs := []string{first.(*corev1.PodList).ResourceVersion, second.(*corev1.PodList).ResourceVersion}
	if diff := cmp.Diff([]int{2, 0}, got); diff != "" {
		t.Errorf("list sizes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"7", "7"}, rvs); diff != "" {
		t.Errorf("list resource versions (-want +got):\n%s", diff)
	}
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("client-go's fake must opt out of streaming lists")
	}
}

func TestOurListerWatcherHandsTheListOverOnce(t *testing.T) {
	lw := newOurListerWatcher(newPods(2), "7", newWatchScript(nil))
	first, err := lw.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := lw.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := []int{len(first.Items), len(second.Items)}
	if diff := cmp.Diff([]int{2, 0}, got); diff != "" {
		t.Errorf("list sizes (-want +got):\n%s", diff)
	}
	if first.ResourceVersion != "7" || second.ResourceVersion != "7" {
		t.Errorf("resource versions %q, %q, want 7", first.ResourceVersion, second.ResourceVersion)
	}
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("our fake must opt out of streaming lists")
	}
}
