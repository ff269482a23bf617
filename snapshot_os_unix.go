//go:build unix

package informer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// What of the snapshot's file handling differs by operating system: its
// lock and opening a file without following a symbolic link.

// snapshotLock is an exclusive lock on a snapshot, held by the running
// informer that restores and writes it, so that two processes (or two
// informers of one process) configured alike never share a snapshot: the
// second starts cold and writes none. The kernel releases a flock when
// its holder dies, so a crash leaves no stale lock.
type snapshotLock struct{ f *os.File }

// lockSnapshot takes the lock of the snapshot at path without waiting. The
// lock file is opened with O_NOFOLLOW: a symbolic link planted in its
// place is refused (errSnapshotNotRegular), never followed, so that its
// target is neither created nor locked.
func lockSnapshot(path string) (*snapshotLock, error) {
	f, err := openNoFollow(path+".lock", os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("opening the snapshot's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s.lock", errSnapshotLocked, path)
		}
		return nil, fmt.Errorf("locking the snapshot: %w", err)
	}
	return &snapshotLock{f: f}, nil
}

// unlock releases the lock.
func (l *snapshotLock) unlock() error { return l.f.Close() }

// openNoFollow opens the regular file at path with flag (os.O_RDONLY, or
// os.O_CREATE|os.O_RDWR, mode 0600). It refuses, with an error wrapping
// errSnapshotNotRegular, a symbolic link (O_NOFOLLOW: the open fails, and
// nothing is created through it) and anything but a regular file, such
// as a FIFO, which O_NONBLOCK keeps the open from waiting on.
func openNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		// ELOOP on Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD.
		if info, lerr := os.Lstat(path); lerr == nil && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is a %v", errSnapshotNotRegular, path, info.Mode().Type())
		}
		return nil, err
	}
	return checkRegular(f)
}
