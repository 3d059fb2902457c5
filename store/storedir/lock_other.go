//go:build !unix

package storedir

import (
	"os"

	"github.com/leafbox/leafbox/store/vfs"
)

// lockFile opens (creating it if missing) path. This system has no flock,
// so no lock is taken and a second process is not refused.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, vfs.PermFile)
}

// unlockFile does nothing: lockFile took no lock.
func unlockFile(*os.File) error { return nil }
