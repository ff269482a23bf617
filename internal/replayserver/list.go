package replayserver

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/internal/prodpods"
)

// snapshotChunk is how many pods a list reads under one hold of the
// history's lock.
const snapshotChunk = 1024

// writeChunk is how many bytes a response accumulates before writing them.
const writeChunk = 256 << 10

// serveList answers a list: the pods as of the resource version the
// options ask for, from the continue token's position, at most limit of
// them (all without a limit), as kube-apiserver's watch cache serves them
// (pages at any resource version, "0" included).
func (cs *clusterServer) serveList(w http.ResponseWriter, ns string, o requestOptions) {
	h := cs.history
	current := h.current()
	var at uint64
	start := 0
	switch {
	case o.continueToken != "":
		tok, err := decodeContinue(o.continueToken)
		if err != nil {
			writeStatus(w, &apierrors.NewBadRequest(err.Error()).ErrStatus)
			return
		}
		at, start = tok.RV, tok.Start
	case o.resourceVersion == "" || o.resourceVersion == "0":
		at = current
	case o.rv > current:
		writeStatus(w, tooLarge(o.rv, current))
		return
	case o.match == metav1.ResourceVersionMatchExact:
		at = o.rv
	default:
		at = current
	}
	if o.continueToken == "" {
		cs.stats.lists.Add(1)
	}
	cs.stats.pages.Add(1)
	want := h.pods.Len()
	if o.limit > 0 {
		want = int(min(o.limit, int64(want)))
	}
	idx := make([]int, 0, want)
	states := make([]podState, 0, want)
	next := start
	for len(idx) < want && next < h.pods.Len() {
		chunk := states[:len(states):min(len(states)+snapshotChunk, want)]
		var err error
		if idx, chunk, next, err = h.snapshot(at, next, ns, idx, chunk); err != nil {
			writeListError(w, o, at, err)
			return
		}
		states = states[:len(chunk)]
	}
	meta := listMeta{resourceVersion: strconv.FormatUint(at, 10)}
	if next < h.pods.Len() && o.limit > 0 {
		more, err := cs.hasMore(at, next, ns)
		if err != nil {
			writeListError(w, o, at, err)
			return
		}
		if more {
			meta.continueToken = continueToken{RV: at, Start: next}.encode()
			if ns == "" {
				meta.remaining, meta.hasRemaining = int64(h.existing(at)-next), true
			}
		}
	}
	itemsLen := 0
	for _, i := range idx {
		itemsLen += fieldLen(h.pods.PodSize(i))
	}
	buf := appendPageHead(make([]byte, 0, writeChunk+64<<10), meta, itemsLen)
	total := len(buf) + itemsLen + 4 // the Unknown's tail
	w.Header().Set("Content-Type", contentTypeProtobuf)
	w.Header().Set("Content-Length", strconv.Itoa(total))
	w.WriteHeader(http.StatusOK)
	for k, i := range idx {
		buf = appendItemHead(buf, h.pods.PodSize(i))
		buf = h.pods.AppendPod(buf, i, states[k].version, states[k].rv)
		if len(buf) >= writeChunk {
			if _, err := w.Write(buf); err != nil {
				return
			}
			cs.stats.bytes.Add(int64(len(buf)))
			buf = buf[:0]
		}
	}
	buf = appendUnknownTail(buf)
	if _, err := w.Write(buf); err == nil {
		cs.stats.bytes.Add(int64(len(buf)))
	}
}

// hasMore reports whether a pod of namespace ns (any, if empty) from next
// on existed at resource version at.
func (cs *clusterServer) hasMore(at uint64, next int, ns string) (bool, error) {
	idx, _, _, err := cs.history.snapshot(at, next, ns, make([]int, 0, 1), make([]podState, 0, 1))
	return len(idx) > 0, err
}

// existing returns how many pods existed at resource version at: pods are
// created in order, pod i at base+1+i of the first history.
func (h *history) existing(at uint64) int {
	created := int64(at) - prodpods.MinResourceVersion + 1
	return int(min(max(created, 0), int64(h.pods.Len())))
}

// writeListError reports a list that failed on the history.
func writeListError(w http.ResponseWriter, o requestOptions, at uint64, err error) {
	switch {
	case errors.Is(err, errExpired) && o.continueToken != "":
		writeStatus(w, continueExpired())
	case errors.Is(err, errExpired):
		writeStatus(w, tooOld(at))
	default:
		writeStatus(w, &apierrors.NewInternalError(err).ErrStatus)
	}
}
