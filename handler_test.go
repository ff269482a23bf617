package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestResourceEventHandlerFuncs(t *testing.T) {
	var got []plEvent
	funcs := ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(obj *corev1.Pod, initial bool) {
			got = append(got, plAdd(KeyOf(obj), obj.ResourceVersion, initial))
		},
		UpdateFunc: func(oldObj, newObj *corev1.Pod) {
			got = append(got, plUpdate(KeyOf(newObj), oldObj.ResourceVersion, newObj.ResourceVersion))
		},
		DeleteFunc: func(d DeletedObject[*corev1.Pod]) {
			got = append(got, plDelete(d.Name.String(), d.Object.ResourceVersion, d.FinalStateUnknown))
		},
	}
	var h ResourceEventHandler[*corev1.Pod] = funcs
	a1, a2 := NewPod("ns", "a", "1"), NewPod("ns", "a", "2")
	h.OnAdd(a1, true)
	h.OnUpdate(a1, a2)
	h.OnDelete(DeletedObject[*corev1.Pod]{Name: NameOf(a2), Object: a2, FinalStateUnknown: true})
	want := []plEvent{plAdd("ns/a", "1", true), plUpdate("ns/a", "1", "2"), plDelete("ns/a", "2", true)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}

	// Unset functions ignore their notifications.
	var empty ResourceEventHandler[*corev1.Pod] = ResourceEventHandlerFuncs[*corev1.Pod]{}
	empty.OnAdd(a1, false)
	empty.OnUpdate(a1, a2)
	empty.OnDelete(DeletedObject[*corev1.Pod]{Name: NameOf(a2), Object: a2})
}

func TestFilteringResourceEventHandlerTransitions(t *testing.T) {
	// An object passes the filter when labelled keep=yes.
	pod := func(rv string, keep bool) *corev1.Pod {
		p := NewPod("ns", "a", rv)
		if keep {
			p.Labels = map[string]string{"keep": "yes"}
		}
		return p
	}
	tests := []struct {
		name string
		call func(h ResourceEventHandler[*corev1.Pod])
		want []plEvent
	}{
		{"add accepted", func(h ResourceEventHandler[*corev1.Pod]) { h.OnAdd(pod("1", true), true) },
			[]plEvent{plAdd("ns/a", "1", true)}},
		{"add rejected", func(h ResourceEventHandler[*corev1.Pod]) { h.OnAdd(pod("1", false), true) },
			nil},
		{"update accepted to accepted", func(h ResourceEventHandler[*corev1.Pod]) { h.OnUpdate(pod("1", true), pod("2", true)) },
			[]plEvent{plUpdate("ns/a", "1", "2")}},
		{"update rejected to accepted is an add", func(h ResourceEventHandler[*corev1.Pod]) { h.OnUpdate(pod("1", false), pod("2", true)) },
			[]plEvent{plAdd("ns/a", "2", false)}},
		{"update accepted to rejected is a delete of the old state", func(h ResourceEventHandler[*corev1.Pod]) { h.OnUpdate(pod("1", true), pod("2", false)) },
			[]plEvent{plDelete("ns/a", "1", false)}},
		{"update rejected to rejected", func(h ResourceEventHandler[*corev1.Pod]) { h.OnUpdate(pod("1", false), pod("2", false)) },
			nil},
		{"delete accepted", func(h ResourceEventHandler[*corev1.Pod]) {
			h.OnDelete(DeletedObject[*corev1.Pod]{Name: ObjectName{Namespace: "ns", Name: "a"}, Object: pod("3", true), FinalStateUnknown: true})
		}, []plEvent{plDelete("ns/a", "3", true)}},
		{"delete rejected", func(h ResourceEventHandler[*corev1.Pod]) {
			h.OnDelete(DeletedObject[*corev1.Pod]{Name: ObjectName{Namespace: "ns", Name: "a"}, Object: pod("3", false)})
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newPLRecorder()
			tc.call(FilteringResourceEventHandler[*corev1.Pod]{
				FilterFunc: func(p *corev1.Pod) bool { return p.Labels["keep"] == "yes" },
				Handler:    rec,
			})
			if diff := cmp.Diff(tc.want, rec.get()); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}
