package informer

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func mustParse(t *testing.T, selector string) labels.Selector {
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
