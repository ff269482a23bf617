package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKindObjectsAreDeterministicAndDistinct checks each generator of the
// per-kind benchmark: exactly the objects asked for, no name twice in a
// namespace, the same objects on every call, and a mean size in the range
// of the real objects they imitate.
func TestKindObjectsAreDeterministicAndDistinct(t *testing.T) {
	generators := []struct {
		name       string
		gen        func(n, namespaces int) []kindObject
		n          int
		minB, maxB int // mean JSON size
	}{
		{"configmaps", newConfigMaps, 4200, 1500, 6000},
		{"secrets", newSecrets, 2000, 3000, 20000},
		{"services", newServices, 1000, 500, 2000},
		{"endpointslices", newEndpointSlices, 1000, 1000, 5000},
		{"events", newEvents, 10000, 400, 1200},
	}
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			objects := g.gen(g.n, kindsNamespaceCount)
			if len(objects) != g.n {
				t.Fatalf("%d objects, want %d", len(objects), g.n)
			}
			names := map[string]bool{}
			total := 0
			for _, o := range objects {
				key := o.obj.GetNamespace() + "/" + o.obj.GetName()
				if names[key] {
					t.Fatalf("%s generated twice", key)
				}
				names[key] = true
				raw, err := json.Marshal(o.obj)
				if err != nil {
					t.Fatal(err)
				}
				total += len(raw)
			}
			if mean := total / len(objects); mean < g.minB || mean > g.maxB {
				t.Errorf("mean size %d B as JSON, want %d to %d", mean, g.minB, g.maxB)
			}
			again := g.gen(g.n, kindsNamespaceCount)
			first, _ := json.Marshal(objects[len(objects)-1].obj)
			second, _ := json.Marshal(again[len(again)-1].obj)
			if diff := cmp.Diff(string(first), string(second)); diff != "" {
				t.Errorf("a second call differs (-first +second):\n%s", diff)
			}
		})
	}
}
