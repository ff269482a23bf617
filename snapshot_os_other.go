//go:build !unix

package informer

import (
	"errors"
	"fmt"
	"os"
)

// What of the snapshot's file handling differs by operating system (see
// the unix version).

// snapshotLock is an exclusive lock on a snapshot (see the unix version).
// Without flock it is a lock file created exclusively and removed on
// unlock; a crash leaves it behind, and the next start stays cold until it
// is removed.
type snapshotLock struct{ path string }

// lockSnapshot takes the lock of the snapshot at path without waiting. The
// lock file is created exclusively (O_EXCL), which follows no symbolic
// link: one in its place is refused (errSnapshotNotRegular).
func lockSnapshot(path string) (*snapshotLock, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if info, lerr := os.Lstat(path + ".lock"); lerr == nil && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s.lock is a %v", errSnapshotNotRegular, path, info.Mode().Type())
		}
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s.lock", errSnapshotLocked, path)
		}
		return nil, fmt.Errorf("locking the snapshot: %w", err)
	}
	f.Close()
	return &snapshotLock{path: path + ".lock"}, nil
}

// unlock releases the lock.
func (l *snapshotLock) unlock() error { return os.Remove(l.path) }

// openNoFollow opens the regular file at path with flag (os.O_RDONLY).
// Without O_NOFOLLOW it refuses, with an error wrapping
// errSnapshotNotRegular, a path that is not a regular file before the
// open (os.Lstat) and a file opened that is not the one found so (a link
// put in its place meanwhile).
func openNoFollow(path string, flag int) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %v", errSnapshotNotRegular, path, before.Mode().Type())
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if f, err = checkRegular(f); err != nil {
		return nil, err
	}
	if after, err := f.Stat(); err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, fmt.Errorf("%w: %s changed while it was opened", errSnapshotNotRegular, path)
	}
	return f, nil
}
