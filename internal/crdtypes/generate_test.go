package crdtypes

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestNew(t *testing.T) {
	a, b := New(40), New(40)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("New is not deterministic (-first +second):\n%s", diff)
	}
	names := map[string]bool{}
	total := 0
	for _, w := range a {
		if names[w.Namespace+"/"+w.Name] {
			t.Fatalf("duplicate workload %s/%s", w.Namespace, w.Name)
		}
		names[w.Namespace+"/"+w.Name] = true
		raw, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		total += len(raw)
		var back Workload
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, back); diff != "" {
			t.Fatalf("workload %s does not survive JSON (-want +got):\n%s", w.Name, diff)
		}
	}
	if mean := total / len(a); mean < 7_000 || mean > 14_000 {
		t.Errorf("mean JSON size %d B, want about 10 KB", mean)
	}
}

func TestManifest(t *testing.T) {
	// The few fields checked here, not apiextensions' whole type: the root
	// module does not depend on apiextensions-apiserver.
	var crd struct {
		Spec struct {
			Group    string
			Names    struct{ Plural, Kind, ListKind string }
			Versions []struct{ Name string }
		}
	}
	if err := yaml.Unmarshal(Manifest, &crd); err != nil {
		t.Fatalf("Manifest: %v", err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("Manifest has %d versions, want 1", len(crd.Spec.Versions))
	}
	got := []string{crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Names.Kind, crd.Spec.Names.ListKind, crd.Spec.Versions[0].Name}
	want := []string{GroupVersion.Group, Resource.Resource, "Workload", "WorkloadList", GroupVersion.Version}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Manifest names (-want +got):\n%s", diff)
	}
}
