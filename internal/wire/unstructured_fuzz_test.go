package wire

import (
	"math/rand/v2"
	"testing"
)

// FuzzUnstructured checks that the decoder returns what client-go's dynamic
// client does for any bytes, malformed ones included (its error where it
// errors), with and without sharing, the sharing decoder keeping its
// canonical sub-trees across inputs.
func FuzzUnstructured(f *testing.F) {
	for _, doc := range unstructuredFixtures {
		f.Add([]byte(doc))
	}
	f.Add(workloadList(rand.New(rand.NewPCG(1, 1)), 3))
	r := rand.New(rand.NewPCG(2, 2))
	for range 20 {
		f.Add(randomDocument(r))
	}
	theirs := dynamicJSONSerializer(f)
	plain := NewUnstructuredSerializer(newUnstructuredDecoder(false), theirs)
	sharing := NewUnstructuredSerializer(newUnstructuredDecoder(true), theirs)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return // larger inputs add nothing but time
		}
		if err := diffDecoders(plain, theirs, data); err != nil {
			t.Fatal(err)
		}
		// Twice: the second may share what the first made canonical.
		for range 2 {
			if err := diffDecoders(sharing, theirs, data); err != nil {
				t.Fatalf("sharing: %v", err)
			}
		}
	})
}
