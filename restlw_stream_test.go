package informer

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
	"github.com/kubetyped/informer/internal/wire"
)

// TestRESTListStreamsAsDecodedWhole lists protobuf pages of
// production-like pods, which the REST ListerWatcher decodes as they
// arrive, one item at a time (wire.ReadProtobufList): each list equals
// what decoding the body whole gives, its metadata included, for pages
// of every size, empty ones too.
func TestRESTListStreamsAsDecodedWhole(t *testing.T) {
	pods := prodpods.New(60)
	for _, n := range []int{0, 1, 7, 60} {
		list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "31", Continue: "token", RemainingItemCount: new(int64(3))}, Items: pods[:n]}
		body := testkit.EncodeProtobuf(t, list)
		lw := servedListLW(t, body, string(ContentTypeProtobuf))
		got, err := lw.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%d pods: %v", n, err)
		}
		if diff := cmp.Diff(decodedWhole(t, body), got); diff != "" {
			t.Errorf("%d pods: list (-decoded whole +streamed):\n%s", n, diff)
		}
	}
}

// TestReadProtobufListRejectsBrokenBodies: a protobuf list response cut
// anywhere, or followed by what is not its envelope's end, is an error
// wrapping wire.ErrListStream; one that is not a list of the kind asked
// for is left unread, for the caller to decode whole.
func TestReadProtobufListRejectsBrokenBodies(t *testing.T) {
	lw := servedListLW(t, nil, string(ContentTypeProtobuf))
	pods := prodpods.New(3)
	body := testkit.EncodeProtobuf(t, &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "31"}, Items: pods})
	// The envelope ends with its content encoding and type, empty: 4 bytes.
	listEnd := len(body) - 4
	read := func(b []byte, kind string) (int, bool, error) {
		br := bufio.NewReaderSize(bytes.NewReader(b), 32<<10)
		items, _, ok, err := wire.ReadProtobufList(br, kind, lw.cachedItems, nil, func(item []byte) (*corev1.Pod, error) {
			pod := &corev1.Pod{}
			return pod, pod.Unmarshal(item)
		})
		if !ok && br.Buffered() != len(b) && len(b) > 0 {
			t.Errorf("not a list of %s: %d of %d bytes consumed", kind, len(b)-br.Buffered(), len(b))
		}
		return len(items), ok, err
	}
	if n, ok, err := read(body, "PodList"); n != 3 || !ok || err != nil {
		t.Fatalf("whole body: %d items, %v, %v", n, ok, err)
	}
	// Cut anywhere in the list: an error. (Before the list, the body
	// cannot be told from another kind of response; after it, protobuf
	// fields may end anywhere between two of them.)
	var cuts []int
	for cut := 24; cut < listEnd; cut += 1 + cut/200 {
		cuts = append(cuts, cut)
	}
	for _, cut := range append(cuts, listEnd-1, listEnd+1, listEnd+3) { // the last two inside a trailing field
		if _, ok, err := read(body[:cut], "PodList"); ok && !errors.Is(err, wire.ErrListStream) {
			t.Errorf("body cut at %d of %d: %v, want an error wrapping ErrListStream", cut, len(body), err)
		}
	}
	if _, ok, err := read(append(body[:len(body):len(body)], 0x08, 0x01), "PodList"); !ok || !errors.Is(err, wire.ErrListStream) {
		t.Errorf("body with a varint field after the envelope: %v, %v; want an error wrapping ErrListStream", ok, err)
	}
	if _, ok, _ := read(body, "NodeList"); ok {
		t.Error("a PodList read as a NodeList")
	}
	if _, ok, _ := read([]byte(`{"kind":"PodList"}`), "PodList"); ok {
		t.Error("JSON read as protobuf")
	}
}
