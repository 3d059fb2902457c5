package jetstream

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/vfs"
)

// STREAM.SNAPSHOT and STREAM.RESTORE as nats-server serves them, which is
// how `nats stream backup` and `nats stream restore` (jsm.go) use them:
//
//   - SNAPSHOT.<stream> {deliver_subject, chunk_size, window_size, jsck,
//     no_consumers} is answered with {config, state}; the archive
//     (snapshot.go) then goes to deliver_subject in chunks of chunk_size,
//     each with a reply subject $JS.SNAPSHOT.ACK.<stream>.<id>.<len>.<n>
//     the receiver answers. At most window_size/chunk_size chunks are
//     unanswered; a 5 s wait for an answer, or the receiver's interest
//     going away, ends the transfer with a 408 status. The end is an
//     empty message with status 204 (500 and the reason on a failure).
//   - RESTORE.<stream> {config, state} is answered with a deliver_subject
//     ($JS.SNAPSHOT.RESTORE.<stream>.<id>). The client sends the archive
//     there in chunks, each a request answered once it is consumed (an
//     error response stops it), then an empty message, answered with a
//     stream_create_response once the stream is live.
//
// A restore writes into StoreDir/.restore-<stream> and renames it into
// place when the whole archive has checked, so a failed or cut restore
// leaves nothing behind; the name stays reserved while it runs. A
// restored mirror or stream with sources starts copying once it is
// live, from where its messages say, as after a restart.

const (
	snapshotAckPrefix     = "$JS.SNAPSHOT.ACK."
	restoreDeliverPrefix  = "$JS.SNAPSHOT.RESTORE."
	defaultSnapshotChunk  = 128 << 10
	defaultSnapshotWindow = 8 << 20
	// snapshotAckTimeout ends a snapshot whose receiver stopped answering.
	snapshotAckTimeout = 5 * time.Second
	// snapshotInterestWait is how long a snapshot waits for the receiver
	// to subscribe to deliver_subject (clients subscribe after the reply).
	snapshotInterestWait = 2 * time.Second
	// restoreStallTimeout ends a restore whose client stopped sending.
	restoreStallTimeout = 10 * time.Second
	// restoreChunkQueue bounds the chunks a restore holds unconsumed.
	restoreChunkQueue = 4
	// restoreGapSubject carries the placeholders a restore stores, and
	// removes at once, to recreate deleted sequences.
	restoreGapSubject = "_"
	restoreDirPrefix  = ".restore-"
)

// snapshotRequest is STREAM.SNAPSHOT's body.
type snapshotRequest struct {
	DeliverSubject string `json:"deliver_subject"`
	NoConsumers    bool   `json:"no_consumers,omitempty"`
	ChunkSize      int    `json:"chunk_size,omitempty"`
	WindowSize     int    `json:"window_size,omitempty"`
	CheckMsgs      bool   `json:"jsck,omitempty"`
}

// snapshotResponse answers STREAM.SNAPSHOT.
type snapshotResponse struct {
	jsapi.APIResponse
	Config *jsapi.StreamConfig `json:"config,omitempty"`
	State  *jsapi.StreamState  `json:"state,omitempty"`
}

// restoreRequest is STREAM.RESTORE's body. The state is what the backup
// recorded; the archive's own counts are what gets checked.
type restoreRequest struct {
	Config jsapi.StreamConfig `json:"config"`
	State  jsonRaw            `json:"state"`
}

// jsonRaw accepts any JSON value and keeps nothing.
type jsonRaw struct{}

// UnmarshalJSON accepts any value.
func (*jsonRaw) UnmarshalJSON([]byte) error { return nil }

// restoreResponse answers STREAM.RESTORE.
type restoreResponse struct {
	jsapi.APIResponse
	DeliverSubject string `json:"deliver_subject,omitempty"`
}

// snapshotBegin is what a snapshot captures when it is requested.
type snapshotBegin struct {
	cfg       jsapi.StreamConfig
	created   time.Time
	state     store.State
	consumers []snapshotConsumer
}

// apiStreamSnapshot answers STREAM.SNAPSHOT.<name>.
func (e *Engine) apiStreamSnapshot(name, reply string, data []byte) {
	const typ = jsapi.StreamSnapshotResponseType
	if jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	s := e.lookup(name)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	var req snapshotRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if !subject.ValidLiteral(req.DeliverSubject) {
		e.respondError(reply, typ, jsapi.NewSnapshotDeliverSubjectInvalidError())
		return
	}
	begin := s.beginSnapshot(!req.NoConsumers)
	ws := stateInfo(begin.state)
	ws.Consumers = len(begin.consumers)
	e.respond(reply, &snapshotResponse{APIResponse: jsapi.APIResponse{Type: typ}, Config: &begin.cfg, State: &ws}, nil)
	go func() {
		if err := e.sendSnapshot(s, &req, begin); err != nil {
			e.log.Warn("jetstream: snapshot failed", "stream", s.name, "err", err)
		}
	}()
}

// beginSnapshot captures the configuration, the state and the consumers'
// states; the messages are read as they are sent.
func (s *stream) beginSnapshot(withConsumers bool) *snapshotBegin {
	s.mu.Lock()
	b := &snapshotBegin{cfg: s.cfg, created: s.created, state: s.store.State()}
	s.mu.Unlock()
	if !withConsumers {
		return b
	}
	for _, c := range s.sortedConsumers() {
		c.mu.Lock()
		sc := snapshotConsumer{Name: c.name, Created: c.created, Config: c.cfg, State: fromConsumerState(c.snapshotLocked())}
		c.mu.Unlock()
		b.consumers = append(b.consumers, sc)
	}
	return b
}

// sendSnapshot streams the archive to the request's deliver subject with
// nats-server's flow control, then the final status message.
func (e *Engine) sendSnapshot(s *stream, req *snapshotRequest, begin *snapshotBegin) error {
	chunkSize := req.ChunkSize
	if chunkSize == 0 {
		chunkSize = defaultSnapshotChunk
	}
	window := req.WindowSize
	if window == 0 {
		window = defaultSnapshotWindow
	}
	chunkSize = min(max(chunkSize, 1<<10), 1<<20)
	window = max(min(max(window, 1<<10), 32<<20), chunkSize)
	inflight := window / chunkSize

	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeSnapshot(pw, s, begin)) }()
	defer pr.Close()

	slots := make(chan struct{}, inflight)
	for range inflight {
		slots <- struct{}{}
	}
	done := make(chan struct{})
	defer close(done)
	ackSubj := snapshotAckPrefix + s.name + "." + newName() + newName()
	unsub, err := e.bus.Subscribe(ackSubj+".>", "", func(_, _, _, _ []byte) {
		select {
		case slots <- struct{}{}:
		case <-done:
		default:
		}
	})
	if err != nil {
		return e.endSnapshot(req.DeliverSubject, 500, err.Error(), err)
	}
	defer unsub()

	if !e.awaitInterest(req.DeliverSubject, snapshotInterestWait) {
		return e.endSnapshot(req.DeliverSubject, 408, "No Interest", errors.New("no interest"))
	}
	timer := time.NewTimer(snapshotAckTimeout)
	defer timer.Stop()
	chunk := make([]byte, chunkSize)
	for index := 1; ; index++ {
		select {
		case <-slots:
		default:
			// The window is full: the receiver has snapshotAckTimeout
			// to answer a chunk.
			timer.Reset(snapshotAckTimeout)
			select {
			case <-slots:
			case <-timer.C:
				return e.endSnapshot(req.DeliverSubject, 408, "No Flow Response", errors.New("no flow response"))
			}
		}
		n, rerr := io.ReadFull(pr, chunk)
		if n > 0 {
			if !e.receiverInterest(req.DeliverSubject) {
				return e.endSnapshot(req.DeliverSubject, 408, "No Interest", errors.New("no interest"))
			}
			e.bus.Publish(req.DeliverSubject, ackSubj+"."+strconv.Itoa(n)+"."+strconv.Itoa(index), nil, chunk[:n])
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			return e.endSnapshot(req.DeliverSubject, 204, "", nil)
		}
		if rerr != nil {
			return e.endSnapshot(req.DeliverSubject, 500, rerr.Error(), rerr)
		}
	}
}

// endSnapshot sends the empty message that ends a snapshot, with its
// status, and returns err.
func (e *Engine) endSnapshot(deliver string, code int, desc string, err error) error {
	hdr := "NATS/1.0 " + strconv.Itoa(code)
	if desc != "" {
		hdr += " " + strings.NewReplacer("\r", " ", "\n", " ").Replace(desc)
	}
	e.bus.Publish(deliver, "", []byte(hdr+"\r\n\r\n"), nil)
	return err
}

// ExactInterester is the optional ability of a Bus to tell a subscription
// for exactly a subject from a wildcard covering it. A snapshot's
// receiver (jsm.go) subscribes to an inbox under its response wildcard
// after the reply, and chunks sent before that subscription would be lost
// to the wildcard; without it a snapshot trusts HasInterest.
type ExactInterester interface {
	HasExactInterest(subject string) bool
}

// receiverInterest reports whether the snapshot receiver subj listens.
func (e *Engine) receiverInterest(subj string) bool {
	if x, ok := e.bus.(ExactInterester); ok {
		return x.HasExactInterest(subj)
	}
	return e.bus.HasInterest(subj)
}

// awaitInterest waits up to d for the receiver subj to subscribe.
func (e *Engine) awaitInterest(subj string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if e.receiverInterest(subj) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// writeSnapshot writes the archive of s as begin captured it: every
// message up to its last sequence then, the consumers, the trailer.
func writeSnapshot(w io.Writer, s *stream, begin *snapshotBegin) error {
	sw, err := newSnapshotWriter(w, s.name)
	if err != nil {
		return err
	}
	st := begin.state
	if err := sw.writeJSON(entryStream, snapshotStream{
		Config: begin.cfg, Created: begin.created,
		State: snapshotState{Msgs: st.Msgs, Bytes: st.Bytes, FirstSeq: st.FirstSeq, LastSeq: st.LastSeq},
	}); err != nil {
		return err
	}
	// Each load reuses one buffer (Msg.Buf): the record is copied into
	// the segment before the next load.
	sm := store.Msg{Buf: make([]byte, 0, 64<<10)}
	for seq := max(st.FirstSeq, 1); st.LastSeq > 0 && seq <= st.LastSeq; {
		m, err := s.store.LoadNext("", seq, &sm)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("load %d: %w", seq, err)
		}
		if m.Seq > st.LastSeq {
			break
		}
		if err := sw.addMsg(m); err != nil {
			return err
		}
		seq = m.Seq + 1
	}
	for _, c := range begin.consumers {
		if err := sw.addConsumer(c); err != nil {
			return err
		}
	}
	return sw.close(len(begin.consumers))
}

// apiStreamRestore answers STREAM.RESTORE.<name>.
func (e *Engine) apiStreamRestore(name, reply string, data []byte) {
	const typ = jsapi.StreamRestoreResponseType
	if jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	var req restoreRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	cfg := req.Config
	if cfg.Name == "" {
		cfg.Name = name
	}
	if cfg.Name != name {
		e.respondError(reply, typ, jsapi.NewStreamMismatchError())
		return
	}
	if strings.ContainsAny(name, `\/`) {
		e.respondError(reply, typ, jsapi.NewStreamNameContainsPathSeparatorsError())
		return
	}
	if err := jsapi.CheckStreamCreate(name, &cfg); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := checkSupported(&cfg); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := cfg.NormalizeWith(jsapi.Options{}); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if cfg.Storage != jsapi.FileStorage || e.cfg.StoreDir == "" {
		e.respondError(reply, typ, jsapi.NewStreamRestoreError(errors.New("leafbox restores file streams only, onto a gateway with a store directory")))
		return
	}
	if apiErr := e.reserveRestore(&cfg); apiErr != nil {
		e.respondError(reply, typ, apiErr)
		return
	}
	job := &restoreJob{e: e, cfg: cfg, chunks: make(chan restoreChunk, restoreChunkQueue)}
	deliver := restoreDeliverPrefix + name + "." + newName() + newName()
	unsub, err := e.bus.Subscribe(deliver, "", job.receive)
	if err != nil {
		e.releaseRestore(name)
		e.respondError(reply, typ, jsapi.NewStreamRestoreError(err))
		return
	}
	job.unsub = unsub
	e.respond(reply, &restoreResponse{APIResponse: jsapi.APIResponse{Type: typ}, DeliverSubject: deliver}, nil)
	go job.run()
}

// reserveRestore refuses a restore onto a stream that exists, is being
// restored or overlaps another's subjects, and otherwise reserves the name.
func (e *Engine) reserveRestore(cfg *jsapi.StreamConfig) *jsapi.APIError {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return jsapi.NewNotEnabledError()
	}
	if e.streams[cfg.Name] != nil || e.restores[cfg.Name] {
		return jsapi.NewStreamNameExistRestoreFailedError()
	}
	for _, o := range e.streams {
		if overlaps(o.config().Subjects, cfg.Subjects) {
			return jsapi.NewStreamSubjectOverlapError()
		}
	}
	if err := e.checkReservation(cfg, ""); err != nil {
		return err
	}
	if _, err := e.fs.Stat(filepath.Join(e.cfg.StoreDir, cfg.Name)); !errors.Is(err, fs.ErrNotExist) {
		return jsapi.NewStreamRestoreError(fmt.Errorf("the store already holds a directory %s that is not a loaded stream", cfg.Name))
	}
	if e.restores == nil {
		e.restores = make(map[string]bool)
	}
	e.restores[cfg.Name] = true
	return nil
}

// releaseRestore frees a name reserveRestore took.
func (e *Engine) releaseRestore(name string) {
	e.mu.Lock()
	delete(e.restores, name)
	e.mu.Unlock()
}

// restoreChunk is one message a restore client sent.
type restoreChunk struct {
	data  []byte
	reply string
}

// restoreJob receives one restore's chunks and builds the stream.
type restoreJob struct {
	e      *Engine
	cfg    jsapi.StreamConfig
	chunks chan restoreChunk
	unsub  func()

	// Owned by run's goroutine.
	cur      []byte
	ack      string // reply of the chunk being consumed
	eof      bool
	endReply string
	received int64
}

// receive queues a chunk for run; it never blocks the publisher. A client
// that sends without waiting for answers gets an error answer.
func (j *restoreJob) receive(_, reply, _, data []byte) {
	c := restoreChunk{data: append([]byte(nil), data...), reply: string(reply)}
	select {
	case j.chunks <- c:
	default:
		if len(reply) > 0 {
			j.respondCreate(string(reply), nil, fmt.Errorf("chunk sent before the previous ones were answered"))
		}
	}
}

// Read hands run the chunks in order, answering each once it is consumed.
func (j *restoreJob) Read(p []byte) (int, error) {
	for len(j.cur) == 0 {
		if j.eof {
			return 0, io.EOF
		}
		if j.ack != "" {
			j.e.bus.Publish(j.ack, "", nil, nil)
			j.ack = ""
		}
		c, err := j.nextChunk()
		if err != nil {
			return 0, err
		}
		if len(c.data) == 0 {
			j.eof, j.endReply = true, c.reply
			return 0, io.EOF
		}
		j.cur, j.ack = c.data, c.reply
		j.received += int64(len(c.data))
	}
	n := copy(p, j.cur)
	j.cur = j.cur[n:]
	return n, nil
}

// nextChunk waits for the client's next chunk.
func (j *restoreJob) nextChunk() (restoreChunk, error) {
	t := time.NewTimer(restoreStallTimeout)
	defer t.Stop()
	select {
	case c := <-j.chunks:
		if c.reply == "" {
			return c, errors.New("a restore chunk came without a reply subject")
		}
		return c, nil
	case <-t.C:
		return restoreChunk{}, fmt.Errorf("restore stalled: no chunk for %v", restoreStallTimeout)
	}
}

// run builds the stream from the chunks and answers the final message.
func (j *restoreJob) run() {
	done := func() {
		j.unsub()
		j.e.releaseRestore(j.cfg.Name)
	}
	s, err := j.e.restoreArchive(j, j.cfg)
	if err == nil {
		// Take what follows the trailer (tar and S2 padding) up to the
		// empty message.
		_, err = io.Copy(io.Discard, j)
	}
	if err != nil {
		j.e.log.Warn("jetstream: restore failed", "stream", j.cfg.Name, "bytes", j.received, "err", err)
		j.fail(err, done)
		return
	}
	done()
	j.e.log.Info("jetstream: stream restored", "stream", j.cfg.Name, "bytes", j.received)
	j.respondCreate(j.endReply, s, nil)
}

// fail frees the name and answers err to the message in hand: the chunk
// being consumed, or the client's empty message. A client stops at an
// error answer, so later chunks find no subscription.
func (j *restoreJob) fail(err error, done func()) {
	done()
	switch {
	case j.ack != "":
		j.respondCreate(j.ack, nil, err)
		j.ack = ""
	case j.eof:
		j.respondCreate(j.endReply, nil, err)
	}
}

// respondCreate sends the stream_create_response a restore ends with.
func (j *restoreJob) respondCreate(reply string, s *stream, err error) {
	if reply == "" {
		return
	}
	const typ = jsapi.StreamCreateResponseType
	if err != nil {
		j.e.respondError(reply, typ, jsapi.NewStreamRestoreError(err))
		return
	}
	j.e.respond(reply, &jsapi.StreamCreateResponse{APIResponse: jsapi.APIResponse{Type: typ}, StreamInfo: s.info(false, ""), DidCreate: true}, nil)
}

// restoreArchive reads an archive from r into a new file stream cfg
// describes and loads it; on failure nothing is left in the store.
func (e *Engine) restoreArchive(r io.Reader, cfg jsapi.StreamConfig) (*stream, error) {
	rd, err := openSnapshot(r)
	if err != nil {
		return nil, err
	}
	if rd.stream.Config.Name != cfg.Name {
		return nil, fmt.Errorf("the snapshot holds stream %q, not %q", rd.stream.Config.Name, cfg.Name)
	}
	if e.limitExceeded(jsapi.FileStorage, rd.stream.State.Bytes) {
		return nil, jsapi.NewStorageResourcesExceededError()
	}
	tmp := filepath.Join(e.cfg.StoreDir, restoreDirPrefix+cfg.Name)
	final := filepath.Join(e.cfg.StoreDir, cfg.Name)
	if err := e.fs.RemoveAll(tmp); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = e.fs.RemoveAll(tmp)
		}
	}()
	if err := e.fs.MkdirAll(tmp, vfs.PermDir); err != nil {
		return nil, err
	}
	consumers, err := e.restoreData(rd, &cfg, tmp)
	if err != nil {
		return nil, err
	}
	if err := e.fs.Rename(tmp, final); err != nil {
		return nil, err
	}
	ok = true
	meta := streamMeta{Config: cfg, Created: rd.stream.Created}
	if meta.Created.IsZero() {
		meta.Created = time.Now().UTC()
	}
	if err := e.writeMeta(final, meta); err != nil {
		_ = e.fs.RemoveAll(final)
		return nil, err
	}
	e.mu.Lock()
	closed, exists := e.closed, e.streams[cfg.Name] != nil
	e.mu.Unlock()
	if closed || exists {
		if !exists {
			_ = e.fs.RemoveAll(final)
		}
		return nil, errors.New("the stream appeared or the engine closed while restoring")
	}
	if err := e.restoreStream(final, meta); err != nil {
		if s := e.lookup(cfg.Name); s != nil {
			e.mu.Lock()
			delete(e.streams, cfg.Name)
			e.mu.Unlock()
			_ = s.close(true)
		} else {
			_ = e.fs.RemoveAll(final)
		}
		return nil, err
	}
	s := e.lookup(cfg.Name)
	if s == nil {
		return nil, errors.New("the restored stream did not load")
	}
	// A mirror or sources resume from what the archive held, as at a
	// start: the mirror after its last sequence, each source after the
	// origin sequence its newest Nats-Stream-Source header names.
	s.startSources()
	var missing []string
	for _, name := range consumers {
		if s.lookupConsumer(name) == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the stream is restored but consumers %s did not load (see the log)", strings.Join(missing, ", "))
	}
	return s, nil
}

// restoreData writes the archive's messages and consumers under dir and
// returns the consumers' names.
func (e *Engine) restoreData(rd *snapshotReader, cfg *jsapi.StreamConfig, dir string) ([]string, error) {
	st, err := e.openStreamStore(cfg, dir)
	if err != nil {
		return nil, err
	}
	if err := restoreMsgs(rd, st, cfg); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	var names []string
	for {
		c, err := rd.nextConsumer()
		if err != nil {
			return nil, err
		}
		if c == nil {
			return names, nil
		}
		if err := e.restoreConsumerFiles(dir, cfg.Name, c); err != nil {
			return nil, fmt.Errorf("consumer %s: %w", c.Name, err)
		}
		names = append(names, c.Name)
	}
}

// restoreMsgs stores every message at its sequence, deleting the ones
// in between, and ends at the snapshot's last sequence.
func restoreMsgs(rd *snapshotReader, st store.Stream, cfg *jsapi.StreamConfig) error {
	next := uint64(1)
	// skipTo makes seq the next sequence the store assigns.
	skipTo := func(seq uint64) error {
		if next == 1 && seq > 1 {
			if _, err := st.Purge(store.PurgeOptions{Sequence: seq}); err != nil {
				return err
			}
			next = st.State().LastSeq + 1
		}
		for next < seq {
			got, _, err := st.Store(restoreGapSubject, nil, nil, 0)
			if err != nil {
				return err
			}
			if _, err := st.Remove(got, false); err != nil {
				return err
			}
			next = got + 1
		}
		if next != seq {
			return fmt.Errorf("the store is at sequence %d, the snapshot needs %d", next, seq)
		}
		return nil
	}
	for {
		seg, err := rd.nextSegment()
		if err != nil {
			return err
		}
		if seg == nil {
			break
		}
		err = rd.eachMsg(seg, func(m *store.Msg) error {
			if err := skipTo(m.Seq); err != nil {
				return err
			}
			got, _, err := st.Store(m.Subject, m.Header, m.Data, restoreTTL(cfg, m.Header))
			if err != nil {
				return fmt.Errorf("store %d: %w", m.Seq, err)
			}
			if got != m.Seq {
				return fmt.Errorf("message %d was stored as %d", m.Seq, got)
			}
			next = got + 1
			return nil
		})
		if err != nil {
			return err
		}
	}
	if last := rd.stream.State.LastSeq; last >= next {
		return skipTo(last + 1)
	}
	return nil
}

// restoreTTL is the store TTL of a message's Nats-TTL header, as publish
// derives it.
func restoreTTL(cfg *jsapi.StreamConfig, hdr []byte) int64 {
	if !cfg.AllowMsgTTL {
		return 0
	}
	v := proto.HeaderValue(hdr, jsapi.HeaderTTL)
	if len(v) == 0 {
		return 0
	}
	t, err := jsapi.ParseTTL(string(v))
	switch {
	case err != nil || t == 0:
		return 0
	case t < 0:
		return -1
	}
	return t * int64(time.Second)
}

// restoreConsumerFiles writes one consumer's meta and state under the
// stream directory dir, where Start's restore finds them.
func (e *Engine) restoreConsumerFiles(dir, streamName string, c *snapshotConsumer) error {
	cdir := filepath.Join(dir, "obs", c.Name)
	if err := e.writeMeta(cdir, consumerMeta{Stream: streamName, Name: c.Name, Config: c.Config, Created: c.Created}); err != nil {
		return err
	}
	cs, err := e.openConsumerStore(cdir)
	if err != nil {
		return err
	}
	if err := cs.Update(c.State.toConsumerState()); err != nil {
		_ = cs.Close()
		return err
	}
	return cs.Close()
}
