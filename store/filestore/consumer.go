package filestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Consumer log layout constants; see doc.go.
const (
	consumerLogName = "consumer.log"
	frameMagic      = 0xC7
	frameHeaderLen  = 8
	frameSnapshot   = 1
	frameDelta      = 2
	// frameSealed, in a frame's fourth byte, marks a sealed payload:
	// nonce, ciphertext and tag, authenticated with the frame header.
	frameSealed     = 1 << 0
	maxFramePayload = 1 << 30
)

var errBadFrame = fmt.Errorf("%w: filestore: bad consumer log frame", store.ErrCorrupt)

// ConsumerConfig configures a ConsumerStore.
type ConsumerConfig struct {
	// SyncInterval is 0 to fsync every Update before it returns, or the
	// longest an update may wait for its fsync. Either way each Update is
	// written to the file before it returns, so it survives the process
	// being killed.
	SyncInterval time.Duration
	// CompactSize is the log length at which it is replaced by a snapshot
	// (DefaultConsumerCompactSize when 0); the log may also grow to eight
	// times the snapshot, so a large state is not rewritten too often.
	CompactSize int64
	// Encryption seals every frame with a data key kept in consumer.key
	// (see Encryption). Turning it on converts a plaintext log at open.
	Encryption Encryption
}

// DefaultConsumerCompactSize is the default ConsumerConfig.CompactSize:
// a few thousand acks between rewrites.
const DefaultConsumerCompactSize = 64 << 10

// ConsumerStore is a store.ConsumerStore kept in an append-only log of
// changes: each Update appends only what changed since the previous one
// (usually a few bytes for an ack), and the log is replaced by a snapshot
// once it has grown to several times the state's size, so acks never
// rewrite a whole file. It is safe for concurrent use.
type ConsumerStore struct {
	fsys vfs.FS
	dir  string
	cfg  ConsumerConfig

	mu     sync.Mutex
	f      vfs.File
	closed bool
	// size is the log's length; snapshotSize the length of the snapshot
	// it starts with.
	size, snapshotSize int64
	tailDirty          bool
	unsynced           bool
	// state is the last recorded state; its maps are owned here.
	state  store.ConsumerState
	report ConsumerReport
	buf    []byte
	// key seals frames; nil for a plaintext log. convert says plaintext
	// frames are accepted during replay: encryption was just turned on.
	key     *sealer
	convert bool
	newKey  bool

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

var _ store.ConsumerStore = (*ConsumerStore)(nil)

// ConsumerReport describes what OpenConsumerStore repaired.
type ConsumerReport struct {
	// TruncatedBytes is the length of the torn or corrupt end of the log
	// that was cut off; Frames the number of good frames replayed.
	TruncatedBytes int64
	Frames         int
}

// OpenConsumerStore opens or creates the consumer state in dir with the
// default configuration: every Update is fsynced before it returns.
func OpenConsumerStore(fsys vfs.FS, dir string) (*ConsumerStore, error) {
	return OpenConsumerStoreConfig(fsys, dir, ConsumerConfig{})
}

// OpenConsumerStoreConfig opens or creates the consumer state in dir. A
// torn or corrupt end of the log is cut off (see Recovered); the state is
// what the good frames before it recorded.
func OpenConsumerStoreConfig(fsys vfs.FS, dir string, cfg ConsumerConfig) (*ConsumerStore, error) {
	if cfg.SyncInterval < 0 || cfg.CompactSize < 0 {
		return nil, fmt.Errorf("%w: filestore: negative consumer SyncInterval or CompactSize", store.ErrInvalidConfig)
	}
	if err := cfg.Encryption.Validate(); err != nil {
		return nil, err
	}
	if cfg.CompactSize == 0 {
		cfg.CompactSize = DefaultConsumerCompactSize
	}
	if err := fsys.MkdirAll(dir, vfs.PermDir); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	c := &ConsumerStore{fsys: fsys, dir: dir, cfg: cfg}
	name := filepath.Join(dir, consumerLogName)
	_ = removeIfExists(fsys, name+tmpExt)
	_ = removeIfExists(fsys, filepath.Join(dir, consumerKeyName)+tmpExt)
	exists := false
	if fi, err := fsys.Stat(name); err == nil && fi.Size() > 0 {
		exists = true
	}
	dk, err := loadDirKey(fsys, dir, consumerKeyName, cfg.Encryption, exists)
	if err != nil {
		return nil, err
	}
	c.key, c.convert, c.newKey = dk.sealer, dk.convert, dk.created
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, vfs.PermFile)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	c.f = f
	if err := c.replay(); err != nil {
		c.f.Close()
		if errors.Is(err, errLostKey) {
			dk.discard(fsys)
		}
		return nil, err
	}
	if c.convert {
		// Every plaintext frame is replayed: one sealed snapshot
		// replaces them, then the key file stops accepting them.
		if err := c.compact(); err != nil {
			c.f.Close()
			return nil, err
		}
		if err := dk.finishConversion(fsys, cfg.Encryption); err != nil {
			c.f.Close()
			return nil, err
		}
		c.convert = false
	}
	if cfg.SyncInterval > 0 {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.syncLoop()
	}
	return c, nil
}

// replay reads the log and rebuilds the state.
func (c *ConsumerStore) replay() error {
	fi, err := c.f.Stat()
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	data := make([]byte, fi.Size())
	if _, err := c.f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("filestore: read consumer log: %w", err)
	}
	off := 0
	for off < len(data) {
		kind, payload, n, err := parseFrame(data[off:])
		if err == nil {
			payload, err = c.openPayload(data[off:off+frameHeaderLen], payload)
		}
		if err == nil {
			err = applyFrame(&c.state, kind, payload)
		}
		if errors.Is(err, errLostKey) {
			return fmt.Errorf("filestore: %s: %w", c.dir, err)
		}
		if err != nil {
			break
		}
		if kind == frameSnapshot {
			c.snapshotSize = int64(n)
		}
		c.report.Frames++
		off += n
	}
	c.size = int64(off)
	if off < len(data) {
		c.report.TruncatedBytes = int64(len(data) - off)
		// Rewrite rather than truncate: a snapshot also drops whatever
		// followed a corrupt frame.
		return c.compact()
	}
	return nil
}

// Recovered reports what opening the store repaired.
func (c *ConsumerStore) Recovered() ConsumerReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report
}

// Update records state; see store.ConsumerStore. It appends the
// difference from the previous state, and fsyncs before returning unless
// a SyncInterval was configured. On error the previous state stays
// recorded.
func (c *ConsumerStore) Update(state *store.ConsumerState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return store.ErrClosed
	}
	payload := appendDelta(c.buf[:0], &c.state, state)
	if payload == nil {
		return nil
	}
	c.buf = payload
	frame := c.frame(frameDelta, payload)
	if err := c.append(frame); err != nil {
		return err
	}
	if err := applyFrame(&c.state, frameDelta, payload); err != nil {
		return err
	}
	if c.size > max(c.cfg.CompactSize, 8*c.snapshotSize) {
		// A failed compaction leaves the log as it was, still correct.
		_ = c.compact()
	}
	return nil
}

// append writes frame at the end of the log and syncs as configured.
func (c *ConsumerStore) append(frame []byte) error {
	if c.tailDirty {
		if err := c.f.Truncate(c.size); err != nil {
			return consumerIOError("truncate", err)
		}
		c.tailDirty = false
	}
	if _, err := c.f.WriteAt(frame, c.size); err != nil {
		if terr := c.f.Truncate(c.size); terr != nil {
			c.tailDirty = true
		}
		return consumerIOError("write", err)
	}
	c.size += int64(len(frame))
	if c.cfg.SyncInterval > 0 {
		c.unsynced = true
		return nil
	}
	if err := c.f.Sync(); err != nil {
		return consumerIOError("sync", err)
	}
	return nil
}

// Sync returns once every update written before the call is durable. With
// SyncInterval ≤ 0 every Update already synced and Sync does nothing.
func (c *ConsumerStore) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return store.ErrClosed
	}
	if !c.unsynced {
		return nil
	}
	if err := c.f.Sync(); err != nil {
		return consumerIOError("sync", err)
	}
	c.unsynced = false
	return nil
}

// consumerIOError wraps an I/O error on the log; a full disk also wraps
// store.ErrStoreFull.
func consumerIOError(op string, err error) error {
	if isFull(err) {
		return fmt.Errorf("%w: filestore: consumer log %s: %w", store.ErrStoreFull, op, err)
	}
	return fmt.Errorf("filestore: consumer log %s: %w", op, err)
}

// compact replaces the log with one snapshot of the current state.
func (c *ConsumerStore) compact() error {
	snap := c.frame(frameSnapshot, appendSnapshot(nil, &c.state))
	name := filepath.Join(c.dir, consumerLogName)
	if err := vfs.WriteFile(c.fsys, name, snap); err != nil {
		return consumerIOError("compact", err)
	}
	f, err := c.fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return consumerIOError("compact", err)
	}
	c.f.Close()
	c.f = f
	c.size, c.snapshotSize = int64(len(snap)), int64(len(snap))
	c.tailDirty, c.unsynced = false, false
	return nil
}

// State returns a copy of the last recorded state; empty maps are nil.
func (c *ConsumerStore) State() (*store.ConsumerState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, store.ErrClosed
	}
	return cloneConsumerState(&c.state), nil
}

func cloneConsumerState(s *store.ConsumerState) *store.ConsumerState {
	out := &store.ConsumerState{Delivered: s.Delivered, AckFloor: s.AckFloor}
	if len(s.Pending) > 0 {
		out.Pending = maps.Clone(s.Pending)
	}
	if len(s.Redelivered) > 0 {
		out.Redelivered = maps.Clone(s.Redelivered)
	}
	return out
}

// syncLoop fsyncs pending writes every SyncInterval.
func (c *ConsumerStore) syncLoop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			if c.unsynced && !c.closed && c.f.Sync() == nil {
				c.unsynced = false
			}
			c.mu.Unlock()
		}
	}
}

// Close syncs and releases the store. Later calls other than Close and
// Delete return store.ErrClosed.
func (c *ConsumerStore) Close() error {
	if c.stop != nil {
		c.stopOnce.Do(func() {
			close(c.stop)
			<-c.done
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	if c.unsynced {
		if err = c.f.Sync(); err != nil {
			err = consumerIOError("sync", err)
		}
	}
	if cerr := c.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("filestore: consumer log: %w", cerr)
	}
	return err
}

// Delete closes the store and removes its directory.
func (c *ConsumerStore) Delete() error {
	_ = c.Close()
	if err := c.fsys.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// appendFrame frames payload: magic, version, kind, length, payload and a
// crc32c over all of it.
func appendFrame(dst []byte, kind uint8, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, frameMagic, formatVersion, kind, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// parseFrame decodes the frame at the start of b and returns its kind,
// payload and length.
func parseFrame(b []byte) (uint8, []byte, int, error) {
	if len(b) < frameHeaderLen+4 || b[0] != frameMagic || b[1] != formatVersion || b[3]&^frameSealed != 0 {
		return 0, nil, 0, errBadFrame
	}
	n := int64(binary.LittleEndian.Uint32(b[4:]))
	if n > maxFramePayload || int64(len(b)) < frameHeaderLen+n+4 {
		return 0, nil, 0, errBadFrame
	}
	end := frameHeaderLen + int(n)
	if crc32.Checksum(b[:end], crcTable) != binary.LittleEndian.Uint32(b[end:]) {
		return 0, nil, 0, errBadFrame
	}
	kind := b[2]
	if kind != frameSnapshot && kind != frameDelta {
		return 0, nil, 0, errBadFrame
	}
	return kind, b[frameHeaderLen:end], end + 4, nil
}

// appendFloors encodes the delivered and ack floor pairs.
func appendFloors(dst []byte, s *store.ConsumerState) []byte {
	dst = binary.AppendUvarint(dst, s.Delivered.Consumer)
	dst = binary.AppendUvarint(dst, s.Delivered.Stream)
	dst = binary.AppendUvarint(dst, s.AckFloor.Consumer)
	return binary.AppendUvarint(dst, s.AckFloor.Stream)
}

// appendSnapshot encodes the whole state.
func appendSnapshot(dst []byte, s *store.ConsumerState) []byte {
	dst = appendFloors(dst, s)
	dst = appendPending(dst, s.Pending, slices.Sorted(maps.Keys(s.Pending)))
	dst = binary.AppendUvarint(dst, 0)
	dst = appendRedelivered(dst, s.Redelivered, slices.Sorted(maps.Keys(s.Redelivered)))
	return binary.AppendUvarint(dst, 0)
}

func appendPending(dst []byte, m map[uint64]store.Pending, seqs []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(seqs)))
	for _, seq := range seqs {
		p := m[seq]
		dst = binary.AppendUvarint(dst, seq)
		dst = binary.AppendUvarint(dst, p.Sequence)
		dst = binary.AppendVarint(dst, p.Timestamp)
	}
	return dst
}

func appendRedelivered(dst []byte, m map[uint64]uint64, seqs []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(seqs)))
	for _, seq := range seqs {
		dst = binary.AppendUvarint(dst, seq)
		dst = binary.AppendUvarint(dst, m[seq])
	}
	return dst
}

func appendSeqs(dst []byte, seqs []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(seqs)))
	for _, seq := range seqs {
		dst = binary.AppendUvarint(dst, seq)
	}
	return dst
}

// appendDelta encodes the change from old to new, or returns nil when
// there is none. Applying it (applyFrame) first sets the floors and drops
// old entries at or below the new ack floor, then applies the upserts and
// deletions, so an ack that moves the floor costs a few bytes however many
// entries it retires.
func appendDelta(dst []byte, old, new *store.ConsumerState) []byte {
	floor := new.AckFloor.Stream
	var pendUp, pendDel, redUp, redDel []uint64
	for seq, p := range new.Pending {
		if q, ok := old.Pending[seq]; !ok || q != p || seq <= floor {
			pendUp = append(pendUp, seq)
		}
	}
	for seq := range old.Pending {
		if _, ok := new.Pending[seq]; !ok && seq > floor {
			pendDel = append(pendDel, seq)
		}
	}
	for seq, n := range new.Redelivered {
		if m, ok := old.Redelivered[seq]; !ok || m != n || seq <= floor {
			redUp = append(redUp, seq)
		}
	}
	for seq := range old.Redelivered {
		if _, ok := new.Redelivered[seq]; !ok && seq > floor {
			redDel = append(redDel, seq)
		}
	}
	if old.Delivered == new.Delivered && old.AckFloor == new.AckFloor &&
		len(pendUp)+len(pendDel)+len(redUp)+len(redDel) == 0 {
		return nil
	}
	slices.Sort(pendUp)
	slices.Sort(pendDel)
	slices.Sort(redUp)
	slices.Sort(redDel)
	dst = appendFloors(dst, new)
	dst = appendPending(dst, new.Pending, pendUp)
	dst = appendSeqs(dst, pendDel)
	dst = appendRedelivered(dst, new.Redelivered, redUp)
	return appendSeqs(dst, redDel)
}

// applyFrame applies a snapshot or delta payload to s.
func applyFrame(s *store.ConsumerState, kind uint8, payload []byte) error {
	d := indexDecoder{b: payload}
	var next store.ConsumerState
	next.Delivered.Consumer = d.uvarint()
	next.Delivered.Stream = d.uvarint()
	next.AckFloor.Consumer = d.uvarint()
	next.AckFloor.Stream = d.uvarint()
	if d.err != nil {
		return errBadFrame
	}
	floor := next.AckFloor.Stream
	pending, redelivered := s.Pending, s.Redelivered
	if kind == frameSnapshot {
		pending, redelivered = nil, nil
	}
	// Decode fully before changing anything.
	type pend struct {
		seq uint64
		p   store.Pending
	}
	ups := make([]pend, d.count(3))
	for i := range ups {
		ups[i] = pend{d.uvarint(), store.Pending{Sequence: d.uvarint(), Timestamp: d.varint()}}
	}
	dels := make([]uint64, d.count(1))
	for i := range dels {
		dels[i] = d.uvarint()
	}
	type red struct{ seq, n uint64 }
	rups := make([]red, d.count(2))
	for i := range rups {
		rups[i] = red{d.uvarint(), d.uvarint()}
	}
	rdels := make([]uint64, d.count(1))
	for i := range rdels {
		rdels[i] = d.uvarint()
	}
	if d.err != nil || len(d.b) != 0 {
		return errBadFrame
	}
	for seq := range pending {
		if seq <= floor {
			delete(pending, seq)
		}
	}
	for seq := range redelivered {
		if seq <= floor {
			delete(redelivered, seq)
		}
	}
	if len(ups) > 0 && pending == nil {
		pending = make(map[uint64]store.Pending, len(ups))
	}
	for _, u := range ups {
		pending[u.seq] = u.p
	}
	for _, seq := range dels {
		delete(pending, seq)
	}
	if len(rups) > 0 && redelivered == nil {
		redelivered = make(map[uint64]uint64, len(rups))
	}
	for _, u := range rups {
		redelivered[u.seq] = u.n
	}
	for _, seq := range rdels {
		delete(redelivered, seq)
	}
	next.Pending, next.Redelivered = pending, redelivered
	*s = next
	return nil
}

// frame frames payload, sealed when the log is.
func (c *ConsumerStore) frame(kind uint8, payload []byte) []byte {
	if c.key == nil {
		return appendFrame(nil, kind, payload)
	}
	return appendSealedFrame(nil, c.key, kind, payload)
}

// appendSealedFrame frames payload sealed with k: the header says so and
// is the additional data, the length covers nonce and tag.
func appendSealedFrame(dst []byte, k *sealer, kind uint8, payload []byte) []byte {
	dst = slices.Grow(dst, frameHeaderLen+sealOverhead+len(payload)+4)
	start := len(dst)
	dst = append(dst, frameMagic, formatVersion, kind, frameSealed)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)+sealOverhead))
	dst = k.sealTo(dst, payload, dst[start:start+frameHeaderLen])
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// openPayload returns the plaintext payload of a frame with header hdr:
// sealed frames are opened, plaintext ones accepted only by a plaintext
// log or one being converted. Any refusal is errBadFrame-like corruption.
func (c *ConsumerStore) openPayload(hdr, payload []byte) ([]byte, error) {
	return openFramePayload(c.key, c.convert, c.newKey, hdr, payload)
}

// openFramePayload is openPayload for a log sealed with k (nil:
// plaintext), convert and newKey as loadDirKey found them.
func openFramePayload(k *sealer, convert, newKey bool, hdr, payload []byte) ([]byte, error) {
	sealed := hdr[3]&frameSealed != 0
	switch {
	case sealed && newKey:
		return nil, errLostKey
	case sealed && k != nil:
		return k.open(nil, payload, hdr)
	case sealed:
		return nil, fmt.Errorf("%w: sealed frame in a plaintext consumer log", errBadFrame)
	case k != nil && !convert:
		return nil, fmt.Errorf("%w: plaintext frame in a sealed consumer log", errBadFrame)
	}
	return payload, nil
}
