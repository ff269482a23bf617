//go:build unix

package informer

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestSnapshotSymlinksNotFollowed: a symbolic link planted in the
// snapshot directory, where the lock file or the snapshot file belongs,
// is never followed: its target is neither created, locked, read nor
// written. The refusal is logged and counted (Rejected) and the informer
// starts cold; a refused snapshot file (a link, or a FIFO, which must not
// hang the start) is replaced by the next save, a refused lock keeps the
// informer from saving.
func TestSnapshotSymlinksNotFollowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant replaces a file of the snapshot at path; outside is a
		// directory outside the snapshot directory.
		plant func(t *testing.T, path, outside string)
		// saves is whether the informer writes its snapshot.
		saves bool
	}{
		{"lock is a link to a missing file", func(t *testing.T, path, outside string) {
			plMust(t, os.Remove(path+".lock"))
			plMust(t, os.Symlink(filepath.Join(outside, "victim"), path+".lock"))
		}, false},
		{"lock is a link to a file", func(t *testing.T, path, outside string) {
			plMust(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o600))
			plMust(t, os.Remove(path+".lock"))
			plMust(t, os.Symlink(filepath.Join(outside, "victim"), path+".lock"))
		}, false},
		{"snapshot is a link to a good snapshot", func(t *testing.T, path, outside string) {
			plMust(t, os.Rename(path, filepath.Join(outside, "victim")))
			plMust(t, os.Symlink(filepath.Join(outside, "victim"), path))
		}, true},
		{"snapshot is a FIFO", func(t *testing.T, path, _ string) {
			plMust(t, os.Remove(path))
			plMust(t, syscall.Mkfifo(path, 0o600))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := snapDir(t)
			outside := t.TempDir()
			opts := snapOptions(dir)
			path := snapWrite(t, opts, "7", snapPods()...)
			tc.plant(t, path, outside)
			victim := filepath.Join(outside, "victim")
			victimBefore, victimErr := os.ReadFile(victim)

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
			if calls[0].Options.SendInitialEvents == nil {
				t.Errorf("first call %+v, want a cold start's streaming list", calls[0])
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
			victimAfter, err := os.ReadFile(victim)
			if (victimErr == nil) != (err == nil) || !bytes.Equal(victimBefore, victimAfter) {
				t.Errorf("the link's target changed: before %q (%v), after %q (%v)", victimBefore, victimErr, victimAfter, err)
			}
			if tc.saves {
				info, err := os.Lstat(path)
				plMust(t, err)
				if !info.Mode().IsRegular() {
					t.Fatalf("after the save, the snapshot is a %v, want a regular file", info.Mode().Type())
				}
				snap, err := readSnapshot(path, snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), ""), newSnapshotCodec[*corev1.Pod](nil))
				plMust(t, err)
				if snap.header.ResourceVersion != "20" {
					t.Errorf("the saved snapshot is at %q, want 20", snap.header.ResourceVersion)
				}
			}
		})
	}
}

// TestSnapshotStaleTempLinkRemoved: a symbolic link named as a temporary
// file of the snapshot is removed at start, not what it points to.
func TestSnapshotStaleTempLinkRemoved(t *testing.T) {
	dir := snapDir(t)
	path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
	victim := filepath.Join(t.TempDir(), "victim")
	plMust(t, os.WriteFile(victim, []byte("keep"), 0o600))
	plMust(t, os.Symlink(victim, path+snapshotTempInfix+"42"))

	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("7", snapPods()...)
	stop := plRun(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	stop()
	if got := inf.Stats().Snapshot.RemovedTempFiles; got != 1 {
		t.Errorf("RemovedTempFiles = %d, want 1", got)
	}
	if diff := cmp.Diff([]string{filepath.Base(path), filepath.Base(path) + ".lock"}, snapDirNames(t, dir)); diff != "" {
		t.Errorf("snapshot directory (-want +got):\n%s", diff)
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "keep" {
		t.Errorf("the link's target: %q, %v; want it kept", data, err)
	}
}
