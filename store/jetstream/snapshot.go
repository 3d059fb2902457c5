package jetstream

// # Snapshot archive, version 1
//
// STREAM.SNAPSHOT streams, and STREAM.RESTORE takes, leafbox's own archive
// of one stream. It is an S2 stream (klauspost/compress/s2 framing, each
// chunk checksummed) holding a POSIX tar archive whose entries come in this
// order:
//
//	leafbox-snapshot.json  header: {"format": "leafbox-stream-snapshot", "version": 1, "stream": NAME}
//	stream.json            {"config": StreamConfig, "created": RFC 3339, "state": {messages, bytes, first_seq, last_seq}}
//	msgs/00000001.dat      message segments: records in sequence order, at most snapshotSegmentMax bytes each
//	msgs/00000002.dat      …
//	consumers/NAME.json    one per consumer: {"name", "created", "config": ConsumerConfig, "state": {…}}
//	end.json               trailer: {"messages", "segments", "consumers", "last_seq"}; a snapshot without it is truncated
//
// A message record is little endian:
//
//	u32 body length L | body | u32 crc32c(body)
//	body: u64 seq | i64 timestamp (Unix ns) | u16 subject length S | u32 header length H | subject | header | data
//
// with data taking the remaining L-22-S-H bytes. Sequences only increase
// within and across segments; missing ones were deleted and are deleted
// again on restore, so every message keeps its sequence. A reader refuses
// another format or version, entries out of order, oversized entries and
// any record that does not check.
//
// A snapshot is written while it is read: one segment is buffered (tar
// needs each entry's size first), so memory stays bounded by the segment
// size whatever the stream holds.

import (
	"archive/tar"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

const (
	// snapshotFormat names leafbox's archive in its header entry.
	snapshotFormat = "leafbox-stream-snapshot"
	// snapshotVersion is the archive layout version written and read.
	snapshotVersion = 1
	// snapshotSegmentMax bounds one message segment; a record larger than
	// it gets a segment of its own.
	snapshotSegmentMax = 1 << 20
	// snapshotEntryMax bounds any entry a reader accepts: the largest
	// record (a maximal message) plus its framing, or a consumer's JSON.
	snapshotEntryMax = 64 << 20
	// recordOverhead is the fixed part of a record: length, seq, time,
	// subject and header lengths, crc.
	recordOverhead = 4 + 8 + 8 + 2 + 4 + 4

	entryHeader   = "leafbox-snapshot.json"
	entryStream   = "stream.json"
	entryEnd      = "end.json"
	dirMsgs       = "msgs/"
	dirConsumers  = "consumers/"
	natsArcMagic  = "NATSARC1"
	snapshotPerms = 0o600
)

// Errors a snapshot reader returns; restore answers them as 10062.
var (
	// ErrSnapshotNATSServer means the archive was made by nats-server,
	// whose block files leafbox does not read.
	ErrSnapshotNATSServer = errors.New("jetstream: snapshot was made by nats-server")
	// ErrSnapshotFormat means the data is not a leafbox snapshot or is
	// damaged.
	ErrSnapshotFormat = errors.New("jetstream: not a valid leafbox snapshot")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotHeader is the archive's first entry.
type snapshotHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Stream  string `json:"stream"`
}

// snapshotState is the stream's state when the snapshot began.
type snapshotState struct {
	Msgs     uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// snapshotStream is stream.json.
type snapshotStream struct {
	Config  jsapi.StreamConfig `json:"config"`
	Created time.Time          `json:"created"`
	State   snapshotState      `json:"state"`
}

// snapshotSeqPair is a consumer and stream sequence.
type snapshotSeqPair struct {
	Consumer uint64 `json:"consumer_seq"`
	Stream   uint64 `json:"stream_seq"`
}

// snapshotPending is one delivered, unacknowledged message.
type snapshotPending struct {
	Stream    uint64 `json:"stream_seq"`
	Consumer  uint64 `json:"consumer_seq"`
	Timestamp int64  `json:"ts"`
}

// snapshotRedelivered is a message's redelivery count.
type snapshotRedelivered struct {
	Stream uint64 `json:"stream_seq"`
	Count  uint64 `json:"count"`
}

// snapshotConsumerState is a consumer's durable state.
type snapshotConsumerState struct {
	Delivered   snapshotSeqPair       `json:"delivered"`
	AckFloor    snapshotSeqPair       `json:"ack_floor"`
	Pending     []snapshotPending     `json:"pending,omitempty"`
	Redelivered []snapshotRedelivered `json:"redelivered,omitempty"`
}

// snapshotConsumer is consumers/NAME.json.
type snapshotConsumer struct {
	Name    string                `json:"name"`
	Created time.Time             `json:"created"`
	Config  jsapi.ConsumerConfig  `json:"config"`
	State   snapshotConsumerState `json:"state"`
}

// snapshotEnd is the trailer.
type snapshotEnd struct {
	Msgs      uint64 `json:"messages"`
	Segments  int    `json:"segments"`
	Consumers int    `json:"consumers"`
	LastSeq   uint64 `json:"last_seq"`
}

// fromConsumerState converts a store state to its archive form, sorted by
// stream sequence.
func fromConsumerState(st *store.ConsumerState) snapshotConsumerState {
	out := snapshotConsumerState{
		Delivered: snapshotSeqPair{Consumer: st.Delivered.Consumer, Stream: st.Delivered.Stream},
		AckFloor:  snapshotSeqPair{Consumer: st.AckFloor.Consumer, Stream: st.AckFloor.Stream},
	}
	for seq, p := range st.Pending {
		out.Pending = append(out.Pending, snapshotPending{Stream: seq, Consumer: p.Sequence, Timestamp: p.Timestamp})
	}
	for seq, n := range st.Redelivered {
		out.Redelivered = append(out.Redelivered, snapshotRedelivered{Stream: seq, Count: n})
	}
	sortBy(out.Pending, func(p snapshotPending) uint64 { return p.Stream })
	sortBy(out.Redelivered, func(r snapshotRedelivered) uint64 { return r.Stream })
	return out
}

// toConsumerState converts the archive form back.
func (cs snapshotConsumerState) toConsumerState() *store.ConsumerState {
	st := &store.ConsumerState{
		Delivered: store.SequencePair{Consumer: cs.Delivered.Consumer, Stream: cs.Delivered.Stream},
		AckFloor:  store.SequencePair{Consumer: cs.AckFloor.Consumer, Stream: cs.AckFloor.Stream},
	}
	if len(cs.Pending) > 0 {
		st.Pending = make(map[uint64]store.Pending, len(cs.Pending))
		for _, p := range cs.Pending {
			st.Pending[p.Stream] = store.Pending{Sequence: p.Consumer, Timestamp: p.Timestamp}
		}
	}
	if len(cs.Redelivered) > 0 {
		st.Redelivered = make(map[uint64]uint64, len(cs.Redelivered))
		for _, r := range cs.Redelivered {
			st.Redelivered[r.Stream] = r.Count
		}
	}
	return st
}

// sortBy sorts s by key.
func sortBy[T any](s []T, key func(T) uint64) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
}

// appendRecord appends one message record.
func appendRecord(dst []byte, m *store.Msg) []byte {
	body := 8 + 8 + 2 + 4 + len(m.Subject) + len(m.Header) + len(m.Data)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(body))
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, m.Seq)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.Time))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(m.Subject)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.Header)))
	dst = append(dst, m.Subject...)
	dst = append(dst, m.Header...)
	dst = append(dst, m.Data...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// parseRecord decodes the record at the start of b into m (its slices
// alias b) and returns its length.
func parseSnapshotRecord(b []byte, m *store.Msg) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: record length cut short", ErrSnapshotFormat)
	}
	body := int(binary.LittleEndian.Uint32(b))
	if body < recordOverhead-8 || body > len(b)-8 {
		return 0, fmt.Errorf("%w: record length %d does not fit its segment", ErrSnapshotFormat, body)
	}
	rec := b[4 : 4+body]
	if want, got := binary.LittleEndian.Uint32(b[4+body:]), crc32.Checksum(rec, castagnoli); want != got {
		return 0, fmt.Errorf("%w: record checksum mismatch", ErrSnapshotFormat)
	}
	subjLen := int(binary.LittleEndian.Uint16(rec[16:]))
	hdrLen := int(binary.LittleEndian.Uint32(rec[18:]))
	rest := rec[22:]
	if subjLen == 0 || subjLen > len(rest) || hdrLen > len(rest)-subjLen {
		return 0, fmt.Errorf("%w: record subject or header length out of range", ErrSnapshotFormat)
	}
	m.Seq = binary.LittleEndian.Uint64(rec)
	m.Time = int64(binary.LittleEndian.Uint64(rec[8:]))
	m.Subject = string(rest[:subjLen])
	m.Header = nil
	if hdrLen > 0 {
		m.Header = rest[subjLen : subjLen+hdrLen]
	}
	m.Data = rest[subjLen+hdrLen:]
	if m.Seq == 0 {
		return 0, fmt.Errorf("%w: record with sequence 0", ErrSnapshotFormat)
	}
	return 4 + body + 4, nil
}

// snapshotWriter writes an archive to w.
type snapshotWriter struct {
	s2w      *s2.Writer
	tw       *tar.Writer
	seg      []byte
	segments int
	msgs     uint64
	lastSeq  uint64
	mtime    time.Time
}

// newSnapshotWriter starts an archive for stream.
func newSnapshotWriter(w io.Writer, stream string) (*snapshotWriter, error) {
	s2w := s2.NewWriter(w, s2.WriterConcurrency(1))
	sw := &snapshotWriter{s2w: s2w, tw: tar.NewWriter(s2w), mtime: time.Now().UTC().Truncate(time.Second)}
	if err := sw.writeJSON(entryHeader, snapshotHeader{Format: snapshotFormat, Version: snapshotVersion, Stream: stream}); err != nil {
		return nil, err
	}
	return sw, nil
}

// writeEntry writes one tar entry.
func (sw *snapshotWriter) writeEntry(name string, b []byte) error {
	hdr := &tar.Header{Name: name, Mode: snapshotPerms, Size: int64(len(b)), ModTime: sw.mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := sw.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := sw.tw.Write(b)
	return err
}

// writeJSON writes v as an entry.
func (sw *snapshotWriter) writeJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sw.writeEntry(name, b)
}

// addMsg adds a message (in increasing sequence order).
func (sw *snapshotWriter) addMsg(m *store.Msg) error {
	if len(sw.seg) > 0 && len(sw.seg)+recordOverhead+len(m.Subject)+len(m.Header)+len(m.Data) > snapshotSegmentMax {
		if err := sw.flushSegment(); err != nil {
			return err
		}
	}
	sw.seg = appendRecord(sw.seg, m)
	sw.msgs++
	sw.lastSeq = m.Seq
	return nil
}

// flushSegment writes the buffered records as a segment.
func (sw *snapshotWriter) flushSegment() error {
	if len(sw.seg) == 0 {
		return nil
	}
	sw.segments++
	if err := sw.writeEntry(fmt.Sprintf("%s%08d.dat", dirMsgs, sw.segments), sw.seg); err != nil {
		return err
	}
	sw.seg = sw.seg[:0]
	return nil
}

// addConsumer adds a consumer (after every message).
func (sw *snapshotWriter) addConsumer(c snapshotConsumer) error {
	if err := sw.flushSegment(); err != nil {
		return err
	}
	return sw.writeJSON(dirConsumers+c.Name+".json", c)
}

// close writes the trailer and finishes the tar and S2 streams.
func (sw *snapshotWriter) close(consumers int) error {
	if err := sw.flushSegment(); err != nil {
		return err
	}
	if err := sw.writeJSON(entryEnd, snapshotEnd{Msgs: sw.msgs, Segments: sw.segments, Consumers: consumers, LastSeq: sw.lastSeq}); err != nil {
		return err
	}
	if err := sw.tw.Close(); err != nil {
		return err
	}
	return sw.s2w.Close()
}

// snapshotReader reads an archive entry by entry, checking its order.
type snapshotReader struct {
	tr        *tar.Reader
	stream    snapshotStream
	buf       bytes.Buffer
	segments  int
	msgs      uint64
	lastSeq   uint64
	consumers int
	// phase: 0 messages, 1 consumers, 2 ended.
	phase int
	// pending is the entry read ahead when the messages ended.
	pending *tar.Header
}

// openSnapshot checks the archive's format and reads its header and
// stream entries. It recognises nats-server's archives (its NATSARC1 format
// and its older tar layout) and refuses them with ErrSnapshotNATSServer.
func openSnapshot(r io.Reader) (*snapshotReader, error) {
	sr := s2.NewReader(r, s2.ReaderMaxBlockSize(4<<20))
	br := newPeekReader(sr)
	magic, err := br.peek(len(natsArcMagic))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshotFormat, describeS2Error(err))
	}
	if string(magic) == natsArcMagic {
		return nil, natsServerSnapshot("a NATSARC1 archive")
	}
	rd := &snapshotReader{tr: tar.NewReader(br)}
	hdr, err := rd.tr.Next()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshotFormat, describeS2Error(err))
	}
	if isNATSServerEntry(hdr.Name) {
		return nil, natsServerSnapshot("a tar of its block files, starting with " + hdr.Name)
	}
	if hdr.Name != entryHeader {
		return nil, fmt.Errorf("%w: first entry is %q, not %s", ErrSnapshotFormat, hdr.Name, entryHeader)
	}
	var h snapshotHeader
	if err := rd.readJSON(hdr, &h); err != nil {
		return nil, err
	}
	if h.Format != snapshotFormat {
		return nil, fmt.Errorf("%w: format %q", ErrSnapshotFormat, h.Format)
	}
	if h.Version != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this leafbox reads version %d", ErrSnapshotFormat, h.Version, snapshotVersion)
	}
	hdr, err = rd.next()
	if err != nil {
		return nil, err
	}
	if hdr.Name != entryStream {
		return nil, fmt.Errorf("%w: second entry is %q, not %s", ErrSnapshotFormat, hdr.Name, entryStream)
	}
	if err := rd.readJSON(hdr, &rd.stream); err != nil {
		return nil, err
	}
	if rd.stream.Config.Name != h.Stream {
		return nil, fmt.Errorf("%w: header names stream %q, %s names %q", ErrSnapshotFormat, h.Stream, entryStream, rd.stream.Config.Name)
	}
	return rd, nil
}

// natsServerSnapshot describes a refused nats-server archive.
func natsServerSnapshot(what string) error {
	return fmt.Errorf("%w (%s): leafbox restores only snapshots taken from leafbox; replay the messages through a consumer instead", ErrSnapshotNATSServer, what)
}

// isNATSServerEntry reports whether a tar entry name is one of the
// files nats-server's snapshots hold.
func isNATSServerEntry(name string) bool {
	switch {
	case name == "meta.inf", name == "meta.sum", name == "o.dat":
		return true
	case strings.HasPrefix(name, "msgs/") && (strings.HasSuffix(name, ".blk") || strings.HasSuffix(name, ".idx") || name == "msgs/index.db"):
		return true
	case strings.HasPrefix(name, "obs/"):
		return true
	}
	return false
}

// describeS2Error turns a decoding error into words.
func describeS2Error(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "data ends early"
	case errors.Is(err, s2.ErrCorrupt):
		return "not an S2 stream or damaged"
	}
	return err.Error()
}

// next returns the next tar entry header, refusing anything but regular
// files of bounded size.
func (rd *snapshotReader) next() (*tar.Header, error) {
	hdr, err := rd.tr.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: archive ends without %s (truncated)", ErrSnapshotFormat, entryEnd)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshotFormat, describeS2Error(err))
	}
	if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 || hdr.Size > snapshotEntryMax || path.Clean(hdr.Name) != hdr.Name {
		return nil, fmt.Errorf("%w: unexpected entry %q", ErrSnapshotFormat, hdr.Name)
	}
	return hdr, nil
}

// readEntry reads the current entry's body into rd.buf, which grows with
// the bytes that actually arrive rather than with the size the entry
// claims.
func (rd *snapshotReader) readEntry(hdr *tar.Header) ([]byte, error) {
	rd.buf.Reset()
	rd.buf.Grow(int(min(hdr.Size, snapshotSegmentMax)))
	if _, err := io.CopyN(&rd.buf, rd.tr, hdr.Size); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSnapshotFormat, hdr.Name, describeS2Error(err))
	}
	return rd.buf.Bytes(), nil
}

// readJSON decodes the current entry.
func (rd *snapshotReader) readJSON(hdr *tar.Header, v any) error {
	b, err := rd.readEntry(hdr)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSnapshotFormat, hdr.Name, err)
	}
	return nil
}

// nextSegment returns the next message segment's bytes (valid until the
// next call), or nil once the messages end.
func (rd *snapshotReader) nextSegment() ([]byte, error) {
	if rd.phase != 0 {
		return nil, nil
	}
	hdr, err := rd.next()
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("%s%08d.dat", dirMsgs, rd.segments+1)
	if !strings.HasPrefix(hdr.Name, dirMsgs) {
		rd.phase, rd.pending = 1, hdr
		return nil, nil
	}
	if hdr.Name != want {
		return nil, fmt.Errorf("%w: entry %q where %q belongs", ErrSnapshotFormat, hdr.Name, want)
	}
	rd.segments++
	return rd.readEntry(hdr)
}

// eachMsg calls fn for every message of a segment, checking that the
// sequences increase.
func (rd *snapshotReader) eachMsg(seg []byte, fn func(m *store.Msg) error) error {
	var m store.Msg
	for len(seg) > 0 {
		n, err := parseSnapshotRecord(seg, &m)
		if err != nil {
			return fmt.Errorf("segment %d: %w", rd.segments, err)
		}
		if m.Seq <= rd.lastSeq {
			return fmt.Errorf("%w: segment %d: sequence %d after %d", ErrSnapshotFormat, rd.segments, m.Seq, rd.lastSeq)
		}
		rd.lastSeq = m.Seq
		rd.msgs++
		if err := fn(&m); err != nil {
			return err
		}
		seg = seg[n:]
	}
	return nil
}

// nextConsumer returns the next consumer, or nil after the trailer, which
// it checks against what was read.
func (rd *snapshotReader) nextConsumer() (*snapshotConsumer, error) {
	for rd.phase == 0 {
		if _, err := rd.nextSegment(); err != nil {
			return nil, err
		}
	}
	if rd.phase == 2 {
		return nil, nil
	}
	hdr := rd.pending
	rd.pending = nil
	if hdr == nil {
		var err error
		if hdr, err = rd.next(); err != nil {
			return nil, err
		}
	}
	if hdr.Name == entryEnd {
		var end snapshotEnd
		if err := rd.readJSON(hdr, &end); err != nil {
			return nil, err
		}
		if end.Msgs != rd.msgs || end.Segments != rd.segments || end.Consumers != rd.consumers || end.LastSeq != rd.lastSeq {
			return nil, fmt.Errorf("%w: trailer counts %d messages in %d segments and %d consumers, the archive holds %d, %d and %d",
				ErrSnapshotFormat, end.Msgs, end.Segments, end.Consumers, rd.msgs, rd.segments, rd.consumers)
		}
		rd.phase = 2
		return nil, nil
	}
	name, ok := strings.CutPrefix(hdr.Name, dirConsumers)
	if !ok || !strings.HasSuffix(name, ".json") {
		return nil, fmt.Errorf("%w: unexpected entry %q", ErrSnapshotFormat, hdr.Name)
	}
	var c snapshotConsumer
	if err := rd.readJSON(hdr, &c); err != nil {
		return nil, err
	}
	if c.Name+".json" != name || !jsapi.ValidName(c.Name) {
		return nil, fmt.Errorf("%w: consumer entry %q names %q", ErrSnapshotFormat, hdr.Name, c.Name)
	}
	rd.consumers++
	return &c, nil
}

// peekReader lets openSnapshot look at the first bytes and then hand
// them, unread, to the tar reader.
type peekReader struct {
	r    io.Reader
	head []byte
}

func newPeekReader(r io.Reader) *peekReader { return &peekReader{r: r} }

// peek reads n bytes without consuming them.
func (p *peekReader) peek(n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(p.r, buf)
	p.head = buf[:k]
	if err != nil {
		return nil, err
	}
	return p.head, nil
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}
