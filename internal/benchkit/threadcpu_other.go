//go:build !linux

package benchkit

import (
	"errors"
	"time"
)

// ThreadCPUTime returns the CPU time the calling OS thread has used; it is
// only implemented on Linux, and returns errors.ErrUnsupported elsewhere.
func ThreadCPUTime() (time.Duration, error) {
	return 0, errors.ErrUnsupported
}
