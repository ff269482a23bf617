package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// newUnstructuredDecoder returns a decoder with a table of its own,
// sharing sub-trees if share.
func newUnstructuredDecoder(share bool) *UnstructuredDecoder {
	if share {
		return NewUnstructuredDecoder(NewSubObjectSharingTable())
	}
	return NewUnstructuredDecoder(NewInternTable())
}

// dynamicJSONSerializer returns the JSON serializer client-go's dynamic
// client decodes with.
func dynamicJSONSerializer(tb testing.TB) runtime.Serializer {
	tb.Helper()
	cfg := dynamic.ConfigFor(&rest.Config{})
	info, ok := runtime.SerializerInfoForMediaType(cfg.NegotiatedSerializer.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		tb.Fatal("the dynamic client has no JSON serializer")
	}
	return info.Serializer
}

// decodeResult is what a decode returned, for comparing two decoders.
type decodeResult struct {
	Obj runtime.Object
	Err string
}

// decodeAs decodes data with dec into a new object of the target's kind:
// "list", "object" or "none" (nil, as watch events' objects are).
func decodeAs(dec runtime.Decoder, data []byte, target string) decodeResult {
	var into runtime.Object
	switch target {
	case "list":
		into = &unstructured.UnstructuredList{}
	case "object":
		into = &unstructured.Unstructured{}
	}
	obj, _, err := dec.Decode(data, nil, into)
	if err != nil {
		return decodeResult{Err: err.Error()}
	}
	return decodeResult{Obj: obj}
}

// diffDecoders returns the differences between what ours and client-go's
// serializer return for data, for every target.
func diffDecoders(ours, theirs runtime.Decoder, data []byte) error {
	var errs []error
	for _, target := range []string{"list", "object", "none"} {
		want := decodeAs(theirs, data, target)
		got := decodeAs(ours, data, target)
		// cmp.Diff alone takes time exponential in the nesting of arrays of
		// one element ([[[…]]]): it explains a difference reflect.DeepEqual
		// found.
		if !reflect.DeepEqual(want, got) {
			errs = append(errs, fmt.Errorf("decoding %q into %s (-client-go +ours):\n%s", data, target, cmp.Diff(want, got)))
		}
	}
	return errors.Join(errs...)
}
