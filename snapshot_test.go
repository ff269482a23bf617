package informer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/wire"
)

// decodedSnapshot is a snapshot read back by readSnapshot.
type decodedSnapshot[T Object] struct {
	header  snapshotHeader
	objects []T
}

// readSnapshot reads and checks the snapshot at path, and decodes its
// objects if it was written under want, as a restart does (openSnapshot,
// then readObjects), in one call for the tests. It returns the errors
// openSnapshot and readObjects return.
func readSnapshot[T Object](path string, want snapshotScope, codec snapshotCodec[T]) (*decodedSnapshot[T], error) {
	snap, err := openSnapshot(path, want, codec)
	if err != nil {
		return nil, err
	}
	objects, err := snap.readObjects(nil)
	if err != nil {
		return nil, err
	}
	return &decodedSnapshot[T]{header: snap.header, objects: objects}, nil
}

// snapDir returns a snapshot directory the informer creates (0700).
func snapDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), "snapshots")
}

// snapPods are the pods of the first run of the restart tests.
func snapPods() []*corev1.Pod {
	return []*corev1.Pod{
		NewPod("default", "a", "5", PodLabels(map[string]string{"app": "x"}), PodNode("node-1")),
		NewPod("default", "b", "6"),
		NewPod("kube-system", "c", "7"),
	}
}

// snapOptions are the options of the informers of the restart tests.
func snapOptions(dir string) InformerOptions[*corev1.Pod] {
	return InformerOptions[*corev1.Pod]{Name: "pods", Resource: corev1.SchemeGroupVersion.WithResource("pods"), Snapshot: SnapshotOptions{Dir: dir}}
}

// snapWrite runs an informer over pods listed at rv until it has synced,
// stops it (a clean stop writes the snapshot), and returns the snapshot's
// path.
func snapWrite(t *testing.T, opts InformerOptions[*corev1.Pod], rv string, pods ...*corev1.Pod) string {
	t.Helper()
	inf, lw := plInformer(t, opts)
	lw.SetList(rv, pods...)
	stop := plRun(t, inf)
	Eventually(t, "the first informer synced", inf.HasSynced)
	stop()
	if diff := cmp.Diff(SnapshotStats{Saved: 1, LastSaveBytes: inf.Stats().Snapshot.LastSaveBytes}, inf.Stats().Snapshot); diff != "" {
		t.Fatalf("first run's snapshot stats (-want +got):\n%s", diff)
	}
	matches, err := filepath.Glob(filepath.Join(opts.Snapshot.Dir, "*"+snapshotSuffix))
	plMust(t, err)
	if len(matches) != 1 {
		t.Fatalf("snapshot files: %q, want one", matches)
	}
	return matches[0]
}

// snapLogContext returns a context whose logger buffers what it logs, and
// a function returning the messages logged at verbosity 0 (errors and
// warnings) that mention snapshots, but for the line each start logs once
// synced (TestSnapshotStartLogLine).
func snapLogContext(t *testing.T) (context.Context, func() []string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	lines := func() []string {
		var got []string
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Verbosity == 0 && strings.Contains(strings.ToLower(e.Message), "snapshot") && !strings.HasPrefix(e.Message, "Synced") {
				got = append(got, e.Message)
			}
		}
		return got
	}
	return klog.NewContext(context.Background(), logger), lines
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	pods := snapPods()
	path := filepath.Join(t.TempDir(), "pods"+snapshotSuffix)
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	codec := newSnapshotCodec[*corev1.Pod](wire.NewInternTable())
	n, err := writeSnapshot(path, snapshotHeader{Scope: scope, ResourceVersion: "7"}, codec, pods)
	plMust(t, err)
	info, err := os.Stat(path)
	plMust(t, err)
	if info.Size() != n || info.Mode().Perm() != 0o600 {
		t.Errorf("snapshot file: %d bytes, mode %v; want %d bytes, mode 0600", info.Size(), info.Mode().Perm(), n)
	}
	got, err := readSnapshot(path, scope, codec)
	plMust(t, err)
	if diff := cmp.Diff(pods, got.objects); diff != "" {
		t.Errorf("restored pods (-want +got):\n%s", diff)
	}
	if got.header.ResourceVersion != "7" || got.header.Encoding != "protobuf" || got.header.Objects != 3 {
		t.Errorf("header %+v", got.header)
	}

	// Types without protobuf are written as JSON.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default", "resourceVersion": "3"}, "spec": map[string]any{"size": int64(2)}}}
	uScope := snapshotScopeFor[*unstructured.Unstructured]("widgets", schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "")
	uCodec := newSnapshotCodec[*unstructured.Unstructured](nil)
	_, err = writeSnapshot(path, snapshotHeader{Scope: uScope, ResourceVersion: "3"}, uCodec, []*unstructured.Unstructured{u})
	plMust(t, err)
	gotU, err := readSnapshot(path, uScope, uCodec)
	plMust(t, err)
	if diff := cmp.Diff([]*unstructured.Unstructured{u}, gotU.objects); diff != "" || gotU.header.Encoding != "json" {
		t.Errorf("restored unstructured objects, encoding %q (-want +got):\n%s", gotU.header.Encoding, diff)
	}
}

// TestSnapshotRestartResumesWatch restarts an informer from its snapshot:
// it lists nothing but the current resource version, watches from the
// snapshot's, and its handler sees what a cold start shows: adds for the
// current objects only (an object changed while it was down at its new
// version, a deleted one not at all), then live events.
func TestSnapshotRestartResumesWatch(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)

	inf, lw := plInformer(t, snapOptions(dir))
	current := []*corev1.Pod{NewPod("default", "a", "15"), NewPod("kube-system", "c", "7"), NewPod("default", "d", "20")}
	lw.SetList("20", current...)
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	calls, err := lw.WaitForCalls(ctx, 2)
	plMust(t, err)
	wantCalls := []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true, TimeoutSeconds: calls[1].Options.TimeoutSeconds}},
	}
	if diff := cmp.Diff(wantCalls, calls[:2]); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	plMust(t, lw.Modify(ctx, NewPod("default", "a", "15")))
	plMust(t, lw.Delete(ctx, NewPod("default", "b", "16")))
	if inf.HasSynced() {
		t.Fatal("synced before the watch reached the current resource version")
	}
	plMust(t, lw.Add(ctx, NewPod("default", "d", "20")))
	Eventually(t, "synced", inf.HasSynced)
	rec.expect(t, plAdd("default/a", "15", true), plAdd("kube-system/c", "7", true), plAdd("default/d", "20", true))
	plMust(t, lw.Modify(ctx, NewPod("default", "d", "21")))
	rec.expect(t, plAdd("default/a", "15", true), plAdd("kube-system/c", "7", true), plAdd("default/d", "20", true), plUpdate("default/d", "20", "21"))
	cached, err := inf.Lister().List(labels.Everything())
	plMust(t, err)
	if diff := cmp.Diff([]*corev1.Pod{current[0], NewPod("default", "d", "21"), current[1]}, plSortedPods(cached)); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
	got := inf.Stats().Snapshot
	if diff := cmp.Diff(SnapshotStats{Restored: 1, RestoredObjects: 3, ResumedWatches: 1}, got); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
}

// plSortedPods returns pods sorted by key.
func plSortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if KeyOf(out[j]) < KeyOf(out[i]) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestSnapshotRestartCurrentAtOnce: when nothing changed since the
// snapshot, the informer syncs without waiting for an event.
func TestSnapshotRestartCurrentAtOnce(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)
	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("7", snapPods()...)
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	rec.expect(t, plAdd("default/a", "5", true), plAdd("default/b", "6", true), plAdd("kube-system/c", "7", true))
	Eventually(t, "synced", inf.HasSynced)
	calls, err := lw.WaitForCalls(plCtx(t), 2)
	plMust(t, err)
	if calls[1].Verb != "watch" || calls[1].Options.ResourceVersion != "7" {
		t.Errorf("second call %+v, want a watch from 7", calls[1])
	}
}

// TestSnapshotRestartAfterGone: when the server's history no longer reaches
// the snapshot ("410 Gone"), the informer lists and its handler sees the
// current objects as a cold start shows them.
func TestSnapshotRestartAfterGone(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)

	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("30", NewPod("default", "a", "15"), NewPod("default", "d", "20"))
	lw.FailNextWatch(apierrors.NewResourceExpired("too old resource version: 7 (25)"))
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	rec.expect(t, plAdd("default/a", "15", true), plAdd("default/d", "20", true))
	Eventually(t, "synced", inf.HasSynced)
	got := inf.Stats().Snapshot
	if diff := cmp.Diff(SnapshotStats{Restored: 1, RestoredObjects: 3, RestoreRelists: 1}, got); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	// The current version, the watch that failed, then a consistent list
	// in pages (not one at "0", which the watch cache answers whole).
	calls, err := lw.WaitForCalls(plCtx(t), 3)
	plMust(t, err)
	wantCalls := []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true}},
		{Verb: "list", Options: metav1.ListOptions{Limit: defaultPageSize}},
	}
	ignoreTimeout := cmp.Transformer("noTimeout", func(o metav1.ListOptions) metav1.ListOptions { o.TimeoutSeconds = nil; return o })
	if diff := cmp.Diff(wantCalls, calls[:3], ignoreTimeout); diff != "" {
		t.Errorf("calls after a 410 (-want +got):\n%s", diff)
	}
}

// TestSnapshotAheadOfTheServerStartsCold (issue 32 item 1): a snapshot
// whose resource version is ahead of the server's current one comes from
// another history (another cluster, etcd restored from a backup): it is
// refused, logged and counted, and the informer starts cold, reusing none
// of its objects, not even one listed under the same name at the same
// resource version.
func TestSnapshotAheadOfTheServerStartsCold(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "700", NewPod("default", "a", "5", PodNode("node-a")), NewPod("default", "b", "6"))

	inf, lw := plInformer(t, snapOptions(dir))
	current := []*corev1.Pod{NewPod("default", "a", "5", PodNode("node-b")), NewPod("default", "c", "9")}
	lw.SetList("20", current...)
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	ctx, logged := snapLogContext(t)
	plRunContext(t, ctx, inf)
	rec.expect(t, plAdd("default/a", "5", true), plAdd("default/c", "9", true))
	Eventually(t, "synced", inf.HasSynced)
	cached, err := inf.Lister().List(labels.Everything())
	plMust(t, err)
	if diff := cmp.Diff(current, plSortedPods(cached)); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(SnapshotStats{Rejected: 1}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Warning: not restoring the snapshot; starting cold"}, logged()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// The current version, then a cold start's streaming list, from
	// nothing.
	calls, err := lw.WaitForCalls(plCtx(t), 2)
	plMust(t, err)
	wantCalls := []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
		{Verb: "watch", Options: metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}},
	}
	ignoreTimeout := cmp.Transformer("noTimeout", func(o metav1.ListOptions) metav1.ListOptions { o.TimeoutSeconds = nil; return o })
	if diff := cmp.Diff(wantCalls, calls[:2], ignoreTimeout); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestSnapshotBadSnapshotsStartCold: a snapshot that cannot be used is
// logged once and counted, and the informer starts cold (a full list).
func TestSnapshotBadSnapshotsStartCold(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil changes the good snapshot at path (in dir) or the options.
		spoil func(t *testing.T, path string, opts *InformerOptions[*corev1.Pod])
		// saves is whether the informer writes snapshots after starting.
		saves bool
	}{
		{"corrupt", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			data, err := os.ReadFile(path)
			plMust(t, err)
			data[len(data)/2] ^= 0x40
			plMust(t, os.WriteFile(path, data, 0o600))
		}, true},
		{"truncated", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			data, err := os.ReadFile(path)
			plMust(t, err)
			plMust(t, os.WriteFile(path, data[:len(data)-10], 0o600))
		}, true},
		{"empty", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			plMust(t, os.WriteFile(path, nil, 0o600))
		}, true},
		{"foreign selector", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Scope.LabelSelector = "app=x" })
		}, true},
		{"foreign type", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Scope.Type = "*k8s.io/api/core/v1.Node" })
		}, true},
		{"foreign shard", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Scope.Shard = "uid 0/2" })
		}, true},
		{"foreign dropped fields", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Scope.DropFields = []string{ManagedFields} })
		}, true},
		{"newer format", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Format = snapshotFormat + 1 })
		}, true},
		{"older format", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Format = snapshotFormat - 1 })
		}, true},
		{"format 1", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.Format = 1 })
		}, true},
		{"resource version not comparable", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			rewriteSnapshotHeader(t, path, func(h *snapshotHeader) { h.ResourceVersion = "opaque-token" })
		}, true},
		{"directory not private", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			plMust(t, os.Chmod(filepath.Dir(path), 0o755))
		}, false},
		{"directory unusable", func(t *testing.T, path string, opts *InformerOptions[*corev1.Pod]) {
			opts.Snapshot.Dir = filepath.Join(path, "under-a-file")
		}, false},
		{"locked by another process", func(t *testing.T, path string, _ *InformerOptions[*corev1.Pod]) {
			lock, err := lockSnapshot(path)
			plMust(t, err)
			t.Cleanup(func() { lock.unlock() })
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := snapDir(t)
			opts := snapOptions(dir)
			path := snapWrite(t, opts, "7", snapPods()...)
			tc.spoil(t, path, &opts)

			ctx, logged := snapLogContext(t)
			inf, lw := plInformer(t, opts)
			lw.SetList("20", NewPod("default", "a", "15"))
			rec := newPLRecorder()
			_, err := inf.AddEventHandler(rec)
			plMust(t, err)
			stop := plRunContext(t, ctx, inf)
			rec.expect(t, plAdd("default/a", "15", true))
			calls, err := lw.WaitForCalls(plCtx(t), 1)
			plMust(t, err)
			// A record found corrupt only when decoded (the checksum at the
			// end) is found while the reflector reads the current version
			// and opens the resumed watch (resumeWatch); then it starts cold.
			full := slices.IndexFunc(calls, func(c informertest.FakeCall) bool {
				return c.Options.Limit != 1 && c.Options.ResourceVersion != "7"
			})
			if full < 0 || calls[full].Options.SendInitialEvents == nil {
				t.Errorf("calls %+v, want a cold start's streaming list first of all but the current version and a watch from the snapshot's", calls)
			}
			stop()
			if got := logged(); len(got) != 1 {
				t.Errorf("snapshot log lines %q, want one", got)
			}
			want := SnapshotStats{Rejected: 1}
			if tc.saves {
				want.Saved, want.LastSaveBytes = 1, inf.Stats().Snapshot.LastSaveBytes
			}
			if diff := cmp.Diff(want, inf.Stats().Snapshot); diff != "" {
				t.Errorf("snapshot stats (-want +got):\n%s", diff)
			}
		})
	}
}

// rewriteSnapshotHeader rewrites the snapshot at path with its header
// changed by edit (and a valid checksum).
func rewriteSnapshotHeader(t *testing.T, path string, edit func(*snapshotHeader)) {
	t.Helper()
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	codec := newSnapshotCodec[*corev1.Pod](nil)
	snap, err := readSnapshot(path, scope, codec)
	plMust(t, err)
	header := snap.header
	edit(&header)
	var buf bytes.Buffer
	_, err = encodeSnapshot(&buf, header, codec, snap.objects)
	plMust(t, err)
	plMust(t, os.WriteFile(path, buf.Bytes(), 0o600))
}

// failingSnapshotFile fails every write, as a full disk does.
type failingSnapshotFile struct{ *os.File }

var errDiskFull = errors.New("no space left on device")

func (f failingSnapshotFile) Write([]byte) (int, error) { return 0, errDiskFull }

// TestSnapshotSaveFailureKeepsPrevious: a save that fails (a full disk)
// is logged once, counted, leaves the previous snapshot in place and no
// temporary file behind.
func TestSnapshotSaveFailureKeepsPrevious(t *testing.T) {
	dir := snapDir(t)
	path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
	before, err := os.ReadFile(path)
	plMust(t, err)
	saved := createSnapshotTemp
	createSnapshotTemp = func(dir, pattern string) (snapshotFile, error) {
		f, err := os.CreateTemp(dir, pattern)
		return failingSnapshotFile{f}, err
	}
	t.Cleanup(func() { createSnapshotTemp = saved })

	ctx, logged := snapLogContext(t)
	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("7", snapPods()...)
	stop := plRunContext(t, ctx, inf)
	Eventually(t, "synced", inf.HasSynced)
	stop()
	if diff := cmp.Diff(SnapshotStats{SaveErrors: 1, Restored: 1, RestoredObjects: 3, ResumedWatches: 1}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	if got := logged(); len(got) != 1 || !strings.Contains(got[0], "failed") {
		t.Errorf("snapshot log lines %q, want one failure", got)
	}
	after, err := os.ReadFile(path)
	plMust(t, err)
	if !bytes.Equal(before, after) {
		t.Error("the previous snapshot changed")
	}
	entries, err := os.ReadDir(dir)
	plMust(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{filepath.Base(path), filepath.Base(path) + ".lock"}, names); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

// TestSnapshotNotWritten: Secrets, informers marked Sensitive and
// informers with an unnamed transform write no snapshot.
func TestSnapshotNotWritten(t *testing.T) {
	t.Run("secrets", func(t *testing.T) {
		dir := snapDir(t)
		lw := informertest.NewFakeListerWatcher[*corev1.Secret]()
		lw.SetList("1", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", ResourceVersion: "1"}, Data: map[string][]byte{"k": []byte("secret")}})
		inf := MustNewInformer(t, lw, InformerOptions[*corev1.Secret]{Snapshot: SnapshotOptions{Dir: dir}})
		stop := plRun(t, inf)
		Eventually(t, "synced", inf.HasSynced)
		stop()
		assertNoSnapshot(t, dir)

		allowed := MustNewInformer(t, lw, InformerOptions[*corev1.Secret]{Snapshot: SnapshotOptions{Dir: dir, AllowSensitive: true}})
		stop = plRun(t, allowed)
		Eventually(t, "synced", allowed.HasSynced)
		stop()
		if got := allowed.Stats().Snapshot.Saved; got != 1 {
			t.Errorf("snapshots saved with AllowSensitive: %d, want 1", got)
		}
	})
	for name, opts := range map[string]SnapshotOptions{
		"sensitive": {Sensitive: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := snapDir(t)
			o := snapOptions(dir)
			opts.Dir = dir
			o.Snapshot = opts
			inf, lw := plInformer(t, o)
			lw.SetList("7", snapPods()...)
			stop := plRun(t, inf)
			Eventually(t, "synced", inf.HasSynced)
			stop()
			assertNoSnapshot(t, dir)
		})
	}
	t.Run("unnamed transform", func(t *testing.T) {
		dir := snapDir(t)
		o := snapOptions(dir)
		o.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
		inf, lw := plInformer(t, o)
		lw.SetList("7", snapPods()...)
		stop := plRun(t, inf)
		Eventually(t, "synced", inf.HasSynced)
		stop()
		assertNoSnapshot(t, dir)
	})
}

// assertNoSnapshot fails if dir holds a snapshot file.
func assertNoSnapshot(t *testing.T, dir string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix+"*"))
	plMust(t, err)
	if len(matches) != 0 {
		t.Errorf("snapshot files %q, want none", matches)
	}
}

// TestSnapshotRestartQuietResourceLists: when the resumed watch does not
// reach the current resource version within catchUpWait (a quiet resource
// whose server sends no bookmark in time), the informer lists, and its
// handler sees the current objects as a cold start shows them.
func TestSnapshotRestartQuietResourceLists(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)

	clk := testingclock.NewFakeClock(time.Now())
	opts := snapOptions(dir)
	opts.Clock = clk
	inf, lw := plInformer(t, opts)
	lw.SetList("30", NewPod("default", "a", "15"), NewPod("default", "d", "20"))
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	plMust(t, lw.Modify(ctx, NewPod("default", "a", "15"))) // not yet at 30
	Eventually(t, "a list after the catch-up wait", func() bool {
		clk.Step(catchUpWait)
		calls := lw.Calls()
		return len(calls) >= 3 && calls[2].Verb == "list"
	})
	rec.expect(t, plAdd("default/a", "15", true), plAdd("default/d", "20", true))
	if diff := cmp.Diff(SnapshotStats{Restored: 1, RestoredObjects: 3, RestoreRelists: 1}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
}

// TestRaiseGCGoal: restores raise GOGC while they run; once the last one
// ended, GOGC stays above what it was until the next collection, which
// puts it back; GOGC=off is left alone.
func TestRaiseGCGoal(t *testing.T) {
	gogc := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	runtime.GC() // no settling left from another test
	Eventually(t, "GOGC 150", func() bool { return gogc() == 150 })
	lowerA := raiseGCGoal(1 << 30)
	raisedA := gogc()
	lowerB := raiseGCGoal(1 << 30)
	raisedB := gogc()
	lowerA()
	afterA := gogc()
	lowerB()
	settling := gogc()
	if raisedA <= 150 || raisedB <= raisedA || afterA <= 150 || afterA >= raisedB || settling < 150 {
		t.Errorf("GOGC 150, raised by A to %d, by B to %d, %d once A ended and %d once both did; want more than 150, more again, less than with both, and at least 150",
			raisedA, raisedB, afterA, settling)
	}
	Eventually(t, "GOGC back to 150 after a collection", func() bool {
		runtime.GC()
		return gogc() == 150
	})

	debug.SetGCPercent(-1)
	lower := raiseGCGoal(1 << 30)
	during := gogc()
	lower()
	if got := gogc(); during != got {
		t.Errorf("GOGC off: %d during a restore and %d after it, want it unchanged", during, got)
	}
}

// metaObject is an interface type of objects, as controller-runtime's
// client.Object is.
type metaObject interface {
	metav1.Object
	k8sruntime.Object
}

// TestSnapshotItemType: an informer of an interface type decodes snapshots
// into Snapshot.Example's type, a pointer to a struct implementing it, and
// keeps none without one; a concrete type needs none.
func TestSnapshotItemType(t *testing.T) {
	type result struct {
		Type string
		Err  bool
	}
	try := func(typ reflect.Type, err error) result {
		r := result{Err: err != nil}
		if typ != nil {
			r.Type = typ.String()
		}
		return r
	}
	got := []result{
		try(snapshotItemType[*corev1.Pod](nil)),
		try(snapshotItemType[metaObject](&corev1.Pod{})),
		try(snapshotItemType[metaObject](nil)),
		try(snapshotItemType[metaObject](corev1.Pod{})),
		try(snapshotItemType[metaObject]("pods")),
	}
	want := []result{{Type: "*v1.Pod"}, {Type: "*v1.Pod"}, {Err: true}, {Err: true}, {Err: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("item types (-want +got):\n%s", diff)
	}
	if diff := (snapshotScope{ScopeID: "a"}).differences(snapshotScope{ScopeID: "b"}); len(diff) != 1 {
		t.Errorf("scopes differing in ScopeID: differences %q, want one", diff)
	}
}
