package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelectWorkloads(t *testing.T) {
	ids := func(ws []workload) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.id)
		}
		return out
	}
	all, err := selectWorkloads("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"W1", "W2", "W3", "W4", "W5", "churn"}, ids(all)); diff != "" {
		t.Errorf("default (-want +got):\n%s", diff)
	}
	// W6 runs when named.
	w6, err := selectWorkloads("W6")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"W6"}, ids(w6)); diff != "" {
		t.Errorf("-run W6 (-want +got):\n%s", diff)
	}
	// So does W8.
	w8, err := selectWorkloads("W8")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"W8"}, ids(w8)); diff != "" {
		t.Errorf("-run W8 (-want +got):\n%s", diff)
	}
	// Table order is kept whatever the order asked for.
	some, err := selectWorkloads("w3, W1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"W1", "W3"}, ids(some)); diff != "" {
		t.Errorf("-run w3,W1 (-want +got):\n%s", diff)
	}
	if _, err := selectWorkloads("W1,W9"); err == nil {
		t.Error("-run W1,W9: no error for an unknown workload")
	}
}
