package app

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// diskCheckEvery bounds how often diskLow asks the kernel: a capture
// costs no system call, and a filling disk is noticed within it.
const diskCheckEvery = 250 * time.Millisecond

// diskLow returns a function reporting whether the file system holding
// dir has less than minFree bytes available to unprivileged writers
// (DefaultMinFreeDisk when minFree is 0). It caches the answer for
// diskCheckEvery. A file system it cannot query counts as not low: the
// store's own errors (store_full) still report a full disk.
func diskLow(dir string, minFree int64) func() bool {
	if minFree == 0 {
		minFree = config.DefaultMinFreeDisk
	}
	var (
		mu      sync.Mutex
		checked time.Time
		low     bool
	)
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(checked) >= diskCheckEvery {
			checked = now
			var st unix.Statfs_t
			low = unix.Statfs(dir, &st) == nil && int64(st.Bavail)*int64(st.Bsize) < minFree
		}
		return low
	}
}
