package informer

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

func mustParse(t testing.TB, selector string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatalf("parsing %q: %v", selector, err)
	}
	return sel
}

func mustParseNoT(selector string) labels.Selector {
	sel, err := labels.Parse(selector)
	if err != nil {
		panic(err)
	}
	return sel
}

// opaqueSelector hides its requirements, like a selector implemented
// outside apimachinery may.
type opaqueSelector struct{ labels.Selector }

func (opaqueSelector) Requirements() (labels.Requirements, bool) { return nil, false }

// selectFixture returns pods in two namespaces and cluster scope with
// labels drawn from small alphabets, including pods without labels.
func selectFixture() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 60 {
		lbls := map[string]string{}
		if i%5 != 0 {
			lbls["app"] = []string{"a", "b", "c"}[i%3]
		}
		if i%4 != 0 {
			lbls["tier"] = fmt.Sprintf("t%d", i%2)
		}
		if i%7 == 0 {
			lbls["n"] = fmt.Sprint(i % 4)
		}
		if i%11 == 0 {
			lbls = nil
		}
		pods = append(pods, NewPod([]string{"ns1", "ns2", ""}[i%3], fmt.Sprintf("p%d", i), "1", PodLabels(lbls)))
	}
	return pods
}

func selectorMatrix(t *testing.T) map[string]labels.Selector {
	sels := map[string]labels.Selector{
		"Everything": labels.Everything(), "Nothing": labels.Nothing(), "nil": nil, "NewSelector": labels.NewSelector(),
		"FromSet":          labels.SelectorFromSet(labels.Set{"app": "a", "tier": "t1"}),
		"FromValidatedSet": labels.SelectorFromValidatedSet(labels.Set{"app": "b"}),
		"opaque app=a":     opaqueSelector{mustParse(t, "app=a")},
	}
	for _, s := range []string{
		"", "app=a", "app==a", "app!=a", "app in (a,b)", "app notin (a,b)", "app", "!app",
		"app=a,tier=t1", "app in (a,b),tier!=t0", "tier,app notin (a)", "app=a,!tier", "n>1", "n<2", "n>1,app",
		"missing=x", "missing", "!missing", "missing!=x", "missing notin (x)", "app=zzz", "app in (zzz)",
		"app in (zzz,a)", "app=a,app in (a,b)", "app in (a,b),app=b", "app=a,app=b", "app,!app", "app in (a),tier in (t0,t1)",
	} {
		sels[fmt.Sprintf("%q", s)] = mustParse(t, s)
	}
	// Built without validation: repeated values must not repeat results.
	dup, _ := labels.NewRequirement("app", selection.In, []string{"a", "a", "b"})
	sels["in with repeated values"] = labels.NewSelector().Add(*dup)
	bad, _ := labels.NewRequirement("app", selection.Equals, []string{"a", "b"})
	sels["= with two values"] = labels.NewSelector().Add(*bad)
	return sels
}

// checkSelectMatrix compares Select with selector.Matches over every
// stored object, for every selector of the matrix and several namespaces.
func checkSelectMatrix(t *testing.T, s *Indexer[*corev1.Pod]) {
	t.Helper()
	all := s.List()
	for name, sel := range selectorMatrix(t) {
		for _, ns := range []string{"", "ns1", "ns2", "nope"} {
			var want []*corev1.Pod
			for _, p := range all {
				if (ns == "" || p.Namespace == ns) && (sel == nil || sel.Matches(labels.Set(p.Labels))) {
					want = append(want, p)
				}
			}
			got := s.selectLabels(ns, sel)
			if diff := cmp.Diff(versionsOf(want), versionsOf(got)); diff != "" {
				t.Errorf("Select(%q, %s) (-want +got):\n%s", ns, name, diff)
			}
			if (got == nil) != (len(want) == 0) {
				t.Errorf("Select(%q, %s) = %#v: want nil exactly when nothing matches", ns, name, got)
			}
		}
	}
}

func TestSelectMatchesSelectorSemantics(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	mustAdd(t, s, selectFixture()...)
	checkSelectMatrix(t, s)
}

func TestSelectFollowsLabelChanges(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	pods := selectFixture()
	mustAdd(t, s, pods...)
	steps := map[string]func(p *corev1.Pod) *corev1.Pod{
		"labels replaced": func(p *corev1.Pod) *corev1.Pod {
			q := *p
			q.Labels = map[string]string{"app": "c", "new": "x"}
			return &q
		},
		"labels removed": func(p *corev1.Pod) *corev1.Pod {
			q := *p
			q.Labels = nil
			return &q
		},
		"one value changed": func(p *corev1.Pod) *corev1.Pod {
			q := p.DeepCopy()
			if q.Labels == nil {
				q.Labels = map[string]string{}
			}
			q.Labels["app"] = "b"
			return q
		},
		"shallow copy sharing the map": func(p *corev1.Pod) *corev1.Pod {
			q := *p
			q.ResourceVersion = "2"
			return &q
		},
	}
	for name, change := range steps {
		for i := 0; i < len(pods); i += 3 {
			if err := s.Update(change(pods[i])); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(name, func(t *testing.T) {
			checkSelectMatrix(t, s)
			mustCheck(t, s)
		})
	}
	for i := 0; i < len(pods); i += 2 {
		if err := s.Delete(pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("after deletes", func(t *testing.T) {
		checkSelectMatrix(t, s)
		mustCheck(t, s)
	})
}

func TestSelectOnEmptyStore(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	checkSelectMatrix(t, s)
}

// BenchmarkSelect runs the W3 queries over 100,000 pods, with client-go's
// typed lister on the same pods for reference.
func BenchmarkSelect(b *testing.B) {
	f := benchFixture(b)
	cgLister := corev1listers.NewPodLister(f.clientGo)
	for _, c := range []struct{ name, namespace, selector string }{
		{"a_app=app-7", "", "app=app-7"},
		{"b_app=app-7_in_ns-7", "ns-7", "app=app-7"},
		{"c_everything", "", ""},
		{"d_app_in_(app-1,app-2),tier!=tier-0", "", "app in (app-1,app-2),tier!=tier-0"},
	} {
		sel := mustParse(b, c.selector)
		want := len(f.ours.selectLabels(c.namespace, sel))
		b.Run("ours/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := len(f.ours.selectLabels(c.namespace, sel)); got != want {
					b.Fatalf("%d hits, want %d", got, want)
				}
			}
		})
		b.Run("client-go/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var pods []*corev1.Pod
				if c.namespace == "" {
					pods, _ = cgLister.List(sel)
				} else {
					pods, _ = cgLister.Pods(c.namespace).List(sel)
				}
				if len(pods) != want {
					b.Fatalf("%d hits, want %d", len(pods), want)
				}
			}
		})
	}
}
