//go:build unix

package storedir

import (
	"errors"
	"os"
	"syscall"

	"github.com/leafbox/leafbox/store/vfs"
)

// lockFile opens (creating it if missing) and flocks path exclusively
// without waiting; errLocked when another open file holds the lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, vfs.PermFile)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return f, nil
}

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
