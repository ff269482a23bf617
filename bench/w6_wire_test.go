package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// clearTypicalControllerDropFields clears from pod what
// typicalControllerDropFields drops.
func clearTypicalControllerDropFields(pod *corev1.Pod) {
	pod.ManagedFields = nil
	pod.Annotations = nil
	pod.Spec.Volumes = nil
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = nil
	pod.Spec.Tolerations = nil
	pod.Spec.SecurityContext = nil
	pod.Spec.Affinity = nil
	pod.Status.Conditions = nil
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
}

// TestWireProjectionOfProdPods checks W6(c)'s projection on the
// production-like pods: listed and watched through the REST ListerWatcher,
// each pod equals its full decode with the dropped fields cleared.
func TestWireProjectionOfProdPods(t *testing.T) {
	pods := newProdPods(300) // one page
	list, err := encodeProdPages(pods, prodListRV)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := encodeProdWatch(pods, watch.Modified)
	if err != nil {
		t.Fatal(err)
	}
	src := &prodSource{pages: list, stream: stream, watches: newWatchScript(nil)}
	src.watches.release()
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://w6.invalid"}, informer.RESTOptions{
		ContentType: informer.ContentTypeProtobuf,
		HTTPClient:  &http.Client{Transport: &prodTransport{src: src}},
		DropFields:  typicalControllerDropFields,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err := lw.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := decodeProdPodList(list[0])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]*corev1.Pod, len(full.Items))
	for i := range full.Items {
		want[i] = &full.Items[i]
		clearTypicalControllerDropFields(want[i])
	}
	if diff := cmp.Diff(want, got.Items, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("projected list (-full decode with the fields cleared +projected):\n%s", diff)
	}

	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: prodListRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fullWatch, err := newProdWatch(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer fullWatch.Stop()
	for i := range pods {
		var ev, fullEv watch.Event
		for _, r := range []struct {
			w  watch.Interface
			ev *watch.Event
		}{{w, &ev}, {fullWatch, &fullEv}} {
			select {
			case *r.ev = <-r.w.ResultChan():
			case <-time.After(syncTimeout):
				t.Fatalf("no watch event %d", i)
			}
		}
		if pod, ok := fullEv.Object.(*corev1.Pod); ok {
			clearTypicalControllerDropFields(pod)
		}
		if diff := cmp.Diff(fullEv, ev, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("projected watch event %d (-full decode with the fields cleared +projected):\n%s", i, diff)
		}
	}
}

// BenchmarkWatchDecode decodes production-like watch events: client-go's
// decoders (as a typed client's watch), and our REST ListerWatcher with
// managed fields dropped on the wire. It reports the CPU a watch event
// costs to decode, which W6(e) does not (it counts allocations only):
//
//	go test -run '^$' -bench WatchDecode -count 5 ./bench
func BenchmarkWatchDecode(b *testing.B) {
	pods := newProdPods(1000)
	stream, err := encodeProdWatch(pods, watch.Modified)
	if err != nil {
		b.Fatal(err)
	}
	drain := func(b *testing.B, w watch.Interface, n int) {
		defer w.Stop()
		for range n {
			if _, ok := <-w.ResultChan(); !ok {
				b.Fatal("watch ended early")
			}
		}
	}
	b.ReportAllocs()
	b.Run("client-go", func(b *testing.B) {
		for b.Loop() {
			w, err := newProdWatch(stream)
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w, len(pods))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/event")
	})
	b.Run("ours, managed fields dropped on the wire", func(b *testing.B) {
		for b.Loop() {
			src := &prodSource{stream: stream, watches: newWatchScript(nil)}
			src.watches.release()
			lw, err := informer.NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://w6.invalid"}, informer.RESTOptions{
				ContentType: informer.ContentTypeProtobuf,
				HTTPClient:  &http.Client{Transport: &prodTransport{src: src}},
				DropFields:  []string{informer.ManagedFields},
			})
			if err != nil {
				b.Fatal(err)
			}
			w, err := lw.Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, w, len(pods))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/event")
	})
}
