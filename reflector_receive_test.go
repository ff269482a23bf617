package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// receivedText renders what next returns: "rv" for a pod, "closed",
// "not a T" or "none" when nothing was received.
func receivedText(rc *eventReceiver[*corev1.Pod]) string {
	ev, ok := rc.next()
	switch {
	case !ok:
		return "none"
	case ev.closed:
		return "closed"
	case !ev.isT:
		return "not a T"
	}
	return ev.obj.ResourceVersion
}

func TestEventReceiverTakesWaitingEventsInOrder(t *testing.T) {
	events := make(chan watch.Event, 100)
	rc := newEventReceiver[*corev1.Pod](events, receiveBatch)
	if got := receivedText(rc); got != "none" {
		t.Fatalf("next on an empty channel = %q", got)
	}
	for i := range 2 * receiveBatch {
		events <- watch.Event{Type: watch.Added, Object: NewPod("ns", "p", string(rune('a'+i)))}
	}
	events <- watch.Event{Type: watch.Added, Object: &corev1.Node{}}
	close(events)
	var got []string
	for range 2*receiveBatch + 2 {
		got = append(got, receivedText(rc))
	}
	var want []string
	for i := range 2 * receiveBatch {
		want = append(want, string(rune('a'+i)))
	}
	want = append(want, "not a T", "closed")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
}

func TestEventReceiverYieldsToTheSelectRegularly(t *testing.T) {
	events := make(chan watch.Event, 2*maxEventsWithoutSelect)
	for range 2 * maxEventsWithoutSelect {
		events <- watch.Event{Type: watch.Added, Object: NewPod("ns", "p", "1")}
	}
	rc := newEventReceiver[*corev1.Pod](events, receiveBatch)
	for i := range maxEventsWithoutSelect {
		if got := receivedText(rc); got != "1" {
			t.Fatalf("event %d: next = %q", i, got)
		}
	}
	if got := receivedText(rc); got != "none" {
		t.Fatalf("after %d events in a row, next = %q, want none", maxEventsWithoutSelect, got)
	}
	rc.add(<-events, true)
	if got := receivedText(rc); got != "1" {
		t.Fatalf("next after add = %q", got)
	}
	if got := receivedText(rc); got != "1" {
		t.Fatalf("next after the select = %q", got)
	}
}

func TestEventReceiverOfOneLeavesTheRestInTheChannel(t *testing.T) {
	events := make(chan watch.Event, 3)
	for range 3 {
		events <- watch.Event{Type: watch.Added, Object: NewPod("ns", "p", "1")}
	}
	rc := newEventReceiver[*corev1.Pod](events, 1)
	if got := receivedText(rc); got != "1" {
		t.Fatalf("next = %q", got)
	}
	if len(events) != 2 {
		t.Errorf("%d events left in the channel, want 2", len(events))
	}
}
