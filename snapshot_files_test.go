package informer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapDirNames returns the names in dir, sorted.
func snapDirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	plMust(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// snapLeaveTemp creates a temporary file of the snapshot at path as an
// interrupted save leaves it (the process killed before the rename), and
// returns its name.
func snapLeaveTemp(t *testing.T, path string) string {
	t.Helper()
	f, err := createSnapshotTemp(filepath.Dir(path), filepath.Base(path)+snapshotTempInfix+"*")
	plMust(t, err)
	_, err = f.Write([]byte(snapshotMagic + "half a save"))
	plMust(t, err)
	plMust(t, f.Close())
	return filepath.Base(f.Name())
}

// TestSnapshotStaleTempFilesRemoved: the temporary files an informer's
// interrupted saves left (a kill -9 during a save) are removed when it
// starts again, logged and counted, and only its own: another informer's
// files are kept, even one whose name begins with the first's temporary
// files' prefix.
func TestSnapshotStaleTempFilesRemoved(t *testing.T) {
	dir := snapDir(t)
	path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
	base := filepath.Base(path)

	// An informer whose name makes its files begin with base + ".tmp-1".
	otherOpts := snapOptions(dir)
	otherOpts.Name = base + snapshotTempInfix + "1"
	other, otherLW := plInformer(t, otherOpts)
	otherLW.SetList("7", snapPods()...)
	stopOther := plRun(t, other)
	Eventually(t, "the other informer synced", other.HasSynced)
	stopOther()
	var otherPath string
	for _, name := range snapDirNames(t, dir) {
		if strings.HasSuffix(name, snapshotSuffix) && name != base {
			otherPath = filepath.Join(dir, name)
		}
	}
	if !strings.HasPrefix(filepath.Base(otherPath), base+snapshotTempInfix) {
		t.Fatalf("the other informer's snapshot %q does not begin with %q", otherPath, base+snapshotTempInfix)
	}

	stale := []string{snapLeaveTemp(t, path), snapLeaveTemp(t, path)}
	otherStale := snapLeaveTemp(t, otherPath)
	before := snapDirNames(t, dir)

	ctx, logged := snapLogContext(t)
	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("7", snapPods()...)
	stop := plRunContext(t, ctx, inf)
	Eventually(t, "synced", inf.HasSynced)
	stop()

	want := slices.DeleteFunc(before, func(name string) bool { return slices.Contains(stale, name) })
	if diff := cmp.Diff(want, snapDirNames(t, dir)); diff != "" {
		t.Errorf("snapshot directory after the restart (-want +got):\n%s", diff)
	}
	if !slices.Contains(want, otherStale) || !slices.Contains(want, filepath.Base(otherPath)) {
		t.Errorf("the other informer's files are gone: %q", want)
	}
	got := inf.Stats().Snapshot
	wantStats := SnapshotStats{Saved: 1, LastSaveBytes: got.LastSaveBytes, Restored: 1, RestoredObjects: 3, ResumedWatches: 1, RemovedTempFiles: 2}
	if diff := cmp.Diff(wantStats, got); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Removed the temporary files of interrupted snapshot saves"}, logged()); diff != "" {
		t.Errorf("snapshot log lines (-want +got):\n%s", diff)
	}
}

// TestSnapshotStaleTempFileNotRemovable: a leftover that cannot be
// removed (here a non-empty directory named as a temporary file) is
// logged as an error and not counted; the informer restores its snapshot
// and saves as usual, and removes the others.
func TestSnapshotStaleTempFileNotRemovable(t *testing.T) {
	dir := snapDir(t)
	path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
	stuck := filepath.Base(path) + snapshotTempInfix + "7"
	plMust(t, os.Mkdir(filepath.Join(dir, stuck), 0o700))
	plMust(t, os.WriteFile(filepath.Join(dir, stuck, "inside"), nil, 0o600))
	snapLeaveTemp(t, path)

	ctx, logged := snapLogContext(t)
	inf, lw := plInformer(t, snapOptions(dir))
	lw.SetList("7", snapPods()...)
	stop := plRunContext(t, ctx, inf)
	Eventually(t, "synced", inf.HasSynced)
	stop()

	if diff := cmp.Diff([]string{filepath.Base(path), filepath.Base(path) + ".lock", stuck}, snapDirNames(t, dir)); diff != "" {
		t.Errorf("snapshot directory after the restart (-want +got):\n%s", diff)
	}
	got := inf.Stats().Snapshot
	wantStats := SnapshotStats{Saved: 1, LastSaveBytes: got.LastSaveBytes, Restored: 1, RestoredObjects: 3, ResumedWatches: 1, RemovedTempFiles: 1}
	if diff := cmp.Diff(wantStats, got); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	wantLog := []string{
		"Could not remove the temporary file of an interrupted snapshot save; the next start tries again",
		"Removed the temporary files of interrupted snapshot saves",
	}
	if diff := cmp.Diff(wantLog, logged()); diff != "" {
		t.Errorf("snapshot log lines (-want +got):\n%s", diff)
	}
}

// TestIsSnapshotTemp: the names of a snapshot's temporary files, and
// only those.
func TestIsSnapshotTemp(t *testing.T) {
	base := "pods_v1-0123abcd" + snapshotSuffix
	for name, want := range map[string]bool{
		base + ".tmp-123456": true,
		base + ".tmp-0":      true,
		base + ".tmp-":       false,
		base + ".tmp-12a":    false,
		base + ".tmp-1__v1__Resource_pods-89abcdef" + snapshotSuffix: false,
		base:                  false,
		base + ".lock":        false,
		"x" + base + ".tmp-1": false,
	} {
		if got := isSnapshotTemp(name, base); got != want {
			t.Errorf("isSnapshotTemp(%q) = %v, want %v", name, got, want)
		}
	}
}
