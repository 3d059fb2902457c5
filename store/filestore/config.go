package filestore

import (
	"fmt"
	"time"

	"github.com/leafbox/leafbox/store"
)

// Compression selects how sealed blocks are stored.
type Compression uint8

const (
	// CompressionNone stores blocks as written.
	CompressionNone Compression = iota
	// CompressionS2 rewrites each block with S2 once it is sealed (full),
	// in chunks of about 64 KiB so that corruption costs one chunk and a
	// load decodes one chunk.
	CompressionS2
)

// String returns "none" or "s2".
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionS2:
		return "s2"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Size bounds and defaults.
const (
	// DefaultBlockSize is the block size used when Config.BlockSize is 0:
	// small enough that a torn-tail scan after a crash reads little, large
	// enough that block files stay few.
	DefaultBlockSize = 4 << 20
	// MinBlockSize and MaxBlockSize bound Config.BlockSize.
	MinBlockSize = 256
	MaxBlockSize = 1 << 30
	// asyncFlushSize is how much an asynchronous stream buffers before it
	// writes to the block file without waiting for the timer.
	asyncFlushSize = 64 << 10
)

// Config configures a file stream. The zero value of each field selects
// its default.
type Config struct {
	store.Config
	// BlockSize is the size at which the active block is sealed and a new
	// one started (DefaultBlockSize when 0). A message larger than it gets
	// a block of its own.
	BlockSize int64
	// SyncInterval bounds how long an acknowledged message may sit in
	// memory or the OS page cache before fsync. 0 means "always": Store
	// returns only after the message is durable, and concurrent Stores
	// share one fsync (group commit). A positive interval syncs on a
	// timer; a power cut loses at most that window.
	SyncInterval time.Duration
	// Compression applies to blocks once they are sealed.
	Compression Compression
	// IndexCache bounds the memory, in bytes, that the index entries of
	// sealed blocks (32 bytes a message) may take; beyond it the least
	// recently used blocks keep a summary only and load their entries from
	// their index files when a query reaches them. 0 selects
	// DefaultIndexCache, a negative value keeps only the active block's.
	// Stream.SetIndexCache changes it later.
	IndexCache int64
	// Encryption seals the stream's records and index files (see
	// crypt.go). Turning it on for a plaintext stream converts the
	// stream at Open; turning it off is refused (ErrNoKey).
	Encryption Encryption
}

// Validate reports the first impossible value as an error wrapping
// store.ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: filestore: "+format, append([]any{store.ErrInvalidConfig}, args...)...)
	}
	sc := c.Config
	switch {
	case sc.MaxMsgs < 0:
		return bad("MaxMsgs is negative (%d)", sc.MaxMsgs)
	case sc.MaxBytes < 0:
		return bad("MaxBytes is negative (%d)", sc.MaxBytes)
	case sc.MaxAge < 0:
		return bad("MaxAge is negative (%v)", sc.MaxAge)
	case sc.MaxMsgsPerSubject < 0:
		return bad("MaxMsgsPerSubject is negative (%d)", sc.MaxMsgsPerSubject)
	case sc.MaxMsgSize < 0:
		return bad("MaxMsgSize is negative (%d)", sc.MaxMsgSize)
	case sc.Discard != store.DiscardOld && sc.Discard != store.DiscardNew:
		return bad("unknown discard policy %d", sc.Discard)
	case c.BlockSize != 0 && (c.BlockSize < MinBlockSize || c.BlockSize > MaxBlockSize):
		return bad("BlockSize %d outside [%d, %d]", c.BlockSize, MinBlockSize, MaxBlockSize)
	case c.SyncInterval < 0:
		return bad("SyncInterval is negative (%v)", c.SyncInterval)
	case c.Compression != CompressionNone && c.Compression != CompressionS2:
		return bad("unknown compression %d", c.Compression)
	case c.Compression == CompressionS2 && c.Encryption.Enabled():
		return bad("compression s2 with cipher %s: sealed records do not compress; choose one", c.Encryption.Cipher)
	}
	return c.Encryption.Validate()
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.IndexCache == 0 {
		c.IndexCache = DefaultIndexCache
	}
	return c
}

// String shows the effective settings; of the encryption only the
// cipher, when set.
func (c Config) String() string {
	c = c.withDefaults()
	sync := "always"
	if c.SyncInterval > 0 {
		sync = c.SyncInterval.String()
	}
	out := fmt.Sprintf("block_size=%d sync=%s compression=%s index_cache=%d", c.BlockSize, sync, c.Compression, max(c.IndexCache, 0))
	if c.Encryption.Enabled() {
		out += " cipher=" + c.Encryption.Cipher.String()
	}
	return out
}
