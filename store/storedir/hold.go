package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Hold takes the lock of the store directory root for an offline tool
// (`leafbox store verify`, `leafbox store inspect`) without creating,
// migrating or writing anything, so that no leafbox starts on the store
// while the tool reads it. It returns an *InUseError when a running
// leafbox holds the lock. A directory without a lock file (a copy of a
// store, say) is not locked; release then does nothing.
func Hold(root string) (release func() error, err error) {
	l := At(filepath.Clean(root))
	fi, err := os.Stat(l.Root)
	if err != nil {
		return nil, fmt.Errorf("storedir: store dir %s: %w", l.Root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("storedir: store dir %s is not a directory", l.Root)
	}
	if fi, err := os.Lstat(l.Lock()); errors.Is(err, fs.ErrNotExist) {
		return func() error { return nil }, nil
	} else if err != nil {
		return nil, fmt.Errorf("storedir: lock %s: %w", l.Lock(), err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("storedir: lock %s is not a file", l.Lock())
	}
	f, err := lockFile(l.Lock())
	if errors.Is(err, errLocked) {
		return nil, &InUseError{Dir: l.Root, Lock: l.Lock(), PID: readPID(l.Lock())}
	}
	if err != nil {
		return nil, fmt.Errorf("storedir: lock %s: %w", l.Lock(), err)
	}
	return func() error {
		if err := unlockFile(f); err != nil {
			_ = f.Close()
			return fmt.Errorf("storedir: unlock %s: %w", l.Lock(), err)
		}
		return f.Close()
	}, nil
}
