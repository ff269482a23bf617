//go:build unix

package informer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// snapshotLock is an exclusive lock on a snapshot, held by the running
// informer that restores and writes it, so that two processes (or two
// informers of one process) configured alike never share a snapshot: the
// second starts cold and writes none. The kernel releases a flock when
// its holder dies, so a crash leaves no stale lock.
type snapshotLock struct{ f *os.File }

// lockSnapshot takes the lock of the snapshot at path without waiting.
func lockSnapshot(path string) (*snapshotLock, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
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
