//go:build !unix

package informer

import (
	"errors"
	"fmt"
	"os"
)

// snapshotLock is an exclusive lock on a snapshot (see the unix version).
// Without flock it is a lock file created exclusively and removed on
// unlock; a crash leaves it behind, and the next start stays cold until it
// is removed.
type snapshotLock struct{ path string }

// lockSnapshot takes the lock of the snapshot at path without waiting.
func lockSnapshot(path string) (*snapshotLock, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
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
