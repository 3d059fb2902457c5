package filestore

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/leafbox/leafbox/store"
)

// readWindowSize is how much of an uncompressed block one read fetches:
// consumers read a stream in order, so one pread serves the next few
// hundred small messages instead of one.
const readWindowSize = 256 << 10

// readCache holds the last few windows read from uncompressed blocks. It
// has its own lock because loads run under the stream's read lock; the
// slice view returns stays valid until the caller unlocks it.
type readCache struct {
	mu   sync.Mutex
	wins [2]readWindow
	next int
}

// readWindow is a copy of bytes [off, off+len(data)) of a block's body, as
// the block was at stamp and gen.
type readWindow struct {
	block *block
	stamp uint64
	gen   uint64
	off   int64
	data  []byte
}

func (w *readWindow) holds(b *block, off, length int64) bool {
	return w.block == b && w.stamp == b.hdr.stamp && w.gen == b.gen &&
		off >= w.off && off+length <= w.off+int64(len(w.data))
}

// view returns the record of uncompressed block b at logical offset off,
// written to its file, with c.mu held: the caller reads the bytes, then
// unlocks c.mu, even on error. The caller holds the stream's read lock.
func (c *readCache) view(b *block, off, length uint32) ([]byte, error) {
	c.mu.Lock()
	o, n := int64(off), int64(length)
	if o+n > b.written {
		return nil, fmt.Errorf("%w: filestore: record beyond end of block %d", store.ErrCorrupt, b.id)
	}
	for i := range c.wins {
		if w := &c.wins[i]; w.holds(b, o, n) {
			return w.data[o-w.off : o-w.off+n], nil
		}
	}
	w := &c.wins[c.next]
	c.next = (c.next + 1) % len(c.wins)
	size := min(max(n, readWindowSize), b.written-o)
	if int64(cap(w.data)) < size || (cap(w.data) > readWindowSize && size <= readWindowSize) {
		w.data = make([]byte, max(size, readWindowSize))
	}
	*w = readWindow{data: w.data[:size]}
	got, err := b.file.ReadAt(w.data, blockHeaderLen+o)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) >= n) {
		w.data = w.data[:0]
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: filestore: block %d shorter than its index", store.ErrCorrupt, b.id)
		}
		return nil, fmt.Errorf("filestore: read block %d: %w", b.id, err)
	}
	w.block, w.stamp, w.gen, w.off, w.data = b, b.hdr.stamp, b.gen, o, w.data[:got]
	return w.data[:n], nil
}

// forget drops the windows of b, after it was rewritten or removed.
func (c *readCache) forget(b *block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.wins {
		if c.wins[i].block == b {
			c.wins[i].block = nil
		}
	}
}

// release drops every window's memory.
func (c *readCache) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wins = [2]readWindow{}
}
