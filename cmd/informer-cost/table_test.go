package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informer"
)

// TestWriteTable prints a report of three rows, two shown: the header, the
// rows with the field left-aligned and the figures right-aligned, the rest
// summed, and the suggestions with the transform that drops a field too.
func TestWriteTable(t *testing.T) {
	managed := informer.CostRow{Path: informer.ManagedFields, Bytes: 6 << 20, SharedBytes: 88, Objects: 1000}
	r := resourceReport{
		resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, form: "typed", namespace: "team-a",
		synced: 1500 * time.Millisecond, took: 12 * time.Millisecond,
		report: informer.CostReport{Objects: 1000, Bytes: 10 << 20, SharedBytes: 1 << 20, Rows: []informer.CostRow{
			managed,
			{Path: "spec.containers", Bytes: 3 << 20, SharedBytes: 1 << 20, Objects: 1000},
			{Path: "metadata.name", Bytes: 1 << 20, Objects: 1000},
		}, Suggestions: []informer.CostRow{managed}},
	}
	var b strings.Builder
	if err := writeTable(&b, r, 2); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"pods (typed, namespace team-a): 1000 objects, synced in 1.5s",
		"cache 10.0 MiB (10485 B an object), of which shared 1.0 MiB (10.0%); the report took 12ms",
		"",
		"  field                     bytes  share   shared  per object  objects",
		"  metadata.managedFields  6.0 MiB  60.0%     88 B      6291 B     1000",
		"  spec.containers         3.0 MiB  30.0%  1.0 MiB      3145 B     1000",
		"  (1 other rows)          1.0 MiB  10.0%      0 B      1048 B         ",
		"",
		"to drop (RESTOptions.DropFields; a field's values shared with fields that stay are not saved):",
		"  metadata.managedFields    6.0 MiB (60.0%); or the StripManagedFields transform",
		"",
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
