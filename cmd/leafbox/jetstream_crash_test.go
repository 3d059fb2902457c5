//go:build unix

package main

import (
	"context"
	binenc "encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Crash tests of JetStream on the real binary (ARCHITECTURE principle 6):
// durability is proven by killing the process, or damaging its files, and
// checking what a restart recovers.

// jsTestConfig writes a configuration with JetStream on storeDir, synced
// before every acknowledgement, and returns its path.
func jsTestConfig(t *testing.T, dir, storeDir string) string {
	t.Helper()
	cfg := filepath.Join(dir, "leafbox-"+filepath.Base(storeDir)+".yaml")
	body := fmt.Sprintf("listen: 127.0.0.1\nport: -1\nhttp_port: 0\njetstream:\n  store_dir: %q\n  sync_interval: always\n", storeDir)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startJS runs leafbox with cfg and returns it with its client URL.
func startJS(t *testing.T, cfg, portsDir string) (*proc, *url.URL) {
	t.Helper()
	if raceEnabled && !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		// The race runtime sleeps 1s before exiting so that late reports
		// get out; reports during the run are unaffected.
		t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	p := start(t, "run", "--config", cfg, "--ports-file-dir", portsDir)
	pf, _ := p.waitPorts(portsDir)
	return p, loopbackURL(t, pf.Nats)
}

// jsConnect opens a connection and a JetStream context on it; the
// connection is closed in t.Cleanup.
func jsConnect(t *testing.T, u *url.URL, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(u.String(), nats.Timeout(waitTimeout))
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// testContext bounds a whole test's client calls; it is cancelled at the
// end of t.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// stopJS stops p with SIGTERM and requires a clean exit.
func stopJS(t *testing.T, p *proc) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, p.log())
	}
	checkNoPanic(t, p)
}

// checkNoPanic fails t if p's log shows a panic or a race report.
func checkNoPanic(t *testing.T, p *proc) {
	t.Helper()
	if log := p.log(); strings.Contains(log, "panic") || strings.Contains(log, "DATA RACE") {
		t.Fatalf("log shows a panic or race:\n%s", log)
	}
}

// storedMsg is a message a test expects at seq: one whose PubAck a client
// received.
type storedMsg struct {
	seq           uint64
	subj, payload string
}

// checkStored requires every message in want to be in the stream at its
// sequence with its subject and payload.
func checkStored(t *testing.T, ctx context.Context, s jetstream.Stream, want []storedMsg) {
	t.Helper()
	bad := 0
	for _, m := range want {
		got, err := s.GetMsg(ctx, m.seq)
		switch {
		case err != nil:
			t.Errorf("acked seq %d (%s %q): %v", m.seq, m.subj, m.payload, err)
		case got.Subject != m.subj || string(got.Data) != m.payload:
			t.Errorf("seq %d holds %s %q, want %s %q", m.seq, got.Subject, got.Data, m.subj, m.payload)
		default:
			continue
		}
		if bad++; bad == 10 {
			t.Fatalf("giving up after %d bad messages", bad)
		}
	}
}

// awaitAck waits for f; once abandon is closed it gives up on a future
// that has no answer yet (its connection is gone, so none can come).
func awaitAck(f jetstream.PubAckFuture, abandon <-chan struct{}) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-abandon:
		select {
		case ack := <-f.Ok():
			return ack, nil
		default:
			return nil, nats.ErrDisconnected
		}
	}
}

// waitDisconnected waits until none of conns is connected.
func waitDisconnected(t *testing.T, conns []*nats.Conn) {
	t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for _, nc := range conns {
		for nc.Status() == nats.CONNECTED {
			select {
			case <-deadline:
				t.Fatalf("connection still up %v after the server died", waitTimeout)
			case <-tick.C:
			}
		}
	}
}

// TestJetStreamKill9DuringPublishStorm kills the server with SIGKILL while
// several connections publish asynchronously into a file stream in
// sync-always mode, then restarts it on the same store: every message whose
// PubAck reached a client must be there at its sequence, each publisher's
// messages in the order it sent them, and the durable consumer must resume
// at its ack floor with nothing pending.
func TestJetStreamKill9DuringPublishStorm(t *testing.T) {
	const (
		initial    = 300  // synchronous publishes before the storm
		acked      = 100  // of those, fetched and double-acked
		publishers = 4    // storm goroutines, one connection each
		killAfter  = 2000 // storm PubAcks before the kill
	)
	dir := t.TempDir()
	cfg := jsTestConfig(t, dir, filepath.Join(dir, "store"))
	ctx := testContext(t)

	p, u := startJS(t, cfg, dir)
	_, js := jsConnect(t, u)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CRASH", Subjects: []string{"crash.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	var all []storedMsg
	for i := 1; i <= initial; i++ {
		payload := fmt.Sprintf("init-%d", i)
		ack, err := js.Publish(ctx, "crash.init", []byte(payload))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if ack.Sequence != uint64(i) {
			t.Fatalf("publish %d got seq %d", i, ack.Sequence)
		}
		all = append(all, storedMsg{ack.Sequence, "crash.init", payload})
	}
	batch, err := cons.Fetch(acked, jetstream.FetchMaxWait(waitTimeout))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		md, err := m.Metadata()
		if err != nil || md.Sequence.Stream != uint64(n) {
			t.Fatalf("fetched message %d: metadata %+v, %v", n, md, err)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("double-ack of seq %d: %v", n, err)
		}
	}
	if err := batch.Error(); err != nil || n != acked {
		t.Fatalf("fetched %d of %d: %v", n, acked, err)
	}

	// The storm. Each publisher has its own connection and numbers its
	// messages; a collector per publisher records the PubAcks in publish
	// order.
	type stormMsg struct {
		storedMsg
		i int
	}
	type sent struct {
		i    int
		subj string
		data string
		f    jetstream.PubAckFuture
	}
	var (
		killed   atomic.Bool
		abandon  = make(chan struct{})
		reached  = make(chan struct{})
		stopOnce sync.Once
		hitOnce  sync.Once
		stormAck atomic.Int64
		pubWG    sync.WaitGroup
		colWG    sync.WaitGroup
		results  = make([][]stormMsg, publishers)
		conns    []*nats.Conn
	)
	stop := func() {
		stopOnce.Do(func() {
			killed.Store(true)
			close(abandon)
		})
	}
	defer func() { stop(); pubWG.Wait(); colWG.Wait() }()
	for g := range publishers {
		nc, pjs := jsConnect(t, u, jetstream.WithPublishAsyncMaxPending(256))
		conns = append(conns, nc)
		queue := make(chan sent, 1024)
		pubWG.Go(func() {
			defer close(queue)
			subj := fmt.Sprintf("crash.%d", g)
			for i := 0; !killed.Load(); i++ {
				data := fmt.Sprintf("%d-%d", g, i)
				f, err := pjs.PublishAsync(subj, []byte(data))
				if err != nil {
					// Stalled at max pending, or the connection is gone:
					// message i was not sent.
					continue
				}
				queue <- sent{i, subj, data, f}
			}
		})
		colWG.Go(func() {
			for m := range queue {
				ack, err := awaitAck(m.f, abandon)
				if err != nil {
					var apiErr *jetstream.APIError
					if errors.As(err, &apiErr) {
						t.Errorf("publisher %d message %d: error ack %v", g, m.i, err)
					}
					continue
				}
				results[g] = append(results[g], stormMsg{storedMsg{ack.Sequence, m.subj, m.data}, m.i})
				if stormAck.Add(1) >= killAfter {
					hitOnce.Do(func() { close(reached) })
				}
			}
		})
	}
	select {
	case <-reached:
	case <-time.After(2 * waitTimeout):
		t.Fatalf("only %d PubAcks within %v; log:\n%s", stormAck.Load(), 2*waitTimeout, p.log())
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	p.wait()
	// Once every connection has seen the server go, no further PubAck can
	// arrive; the collectors give up on what is still unanswered.
	waitDisconnected(t, conns)
	stop()
	pubWG.Wait()
	colWG.Wait()
	for _, nc := range conns {
		nc.Close()
	}
	t.Logf("storm: %d PubAcks before the kill confirmed", stormAck.Load())

	// Restart on the same store and check every acknowledged message.
	bySeq := make(map[uint64]storedMsg)
	var maxSeq uint64
	for g, msgs := range results {
		for k, m := range msgs {
			if k > 0 && (m.i <= msgs[k-1].i || m.seq <= msgs[k-1].seq) {
				t.Errorf("publisher %d: message %d got seq %d after message %d got seq %d", g, m.i, m.seq, msgs[k-1].i, msgs[k-1].seq)
			}
			all = append(all, m.storedMsg)
		}
	}
	for _, m := range all {
		if prev, dup := bySeq[m.seq]; dup && prev != m {
			t.Errorf("seq %d acked twice: %s %q and %s %q", m.seq, prev.subj, prev.payload, m.subj, m.payload)
		}
		bySeq[m.seq] = m
		maxSeq = max(maxSeq, m.seq)
	}

	p2, u2 := startJS(t, cfg, dir)
	_, js2 := jsConnect(t, u2)
	s2, err := js2.Stream(ctx, "CRASH")
	if err != nil {
		t.Fatalf("stream after restart: %v; log:\n%s", err, p2.log())
	}
	c2, err := s2.Consumer(ctx, "D")
	if err != nil {
		t.Fatalf("consumer after restart: %v; log:\n%s", err, p2.log())
	}
	ci := c2.CachedInfo()
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != acked || ci.Delivered.Stream != acked {
		t.Errorf("consumer after restart: ack floor %d, delivered %d, ack pending %d; want %d, %d, 0",
			ci.AckFloor.Stream, ci.Delivered.Stream, ci.NumAckPending, acked, acked)
	}
	si := s2.CachedInfo()
	if si.State.LastSeq < maxSeq {
		t.Errorf("stream last seq %d below the highest acked seq %d", si.State.LastSeq, maxSeq)
	}
	checkStored(t, ctx, s2, all)

	next, err := c2.Fetch(1, jetstream.FetchMaxWait(waitTimeout))
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for m := range next.Messages() {
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, md.Sequence.Stream)
	}
	if !slices.Equal(got, []uint64{acked + 1}) {
		t.Errorf("first fetch after restart got stream seqs %v (%v), want [%d]", got, next.Error(), acked+1)
	}
	t.Logf("restart: %d acked messages checked, stream %d msgs, last seq %d (max acked %d)",
		len(all), si.State.Msgs, si.State.LastSeq, maxSeq)
	stopJS(t, p2)
}

// TestJetStreamRecoversDamagedBlocks damages the block file of a stream
// written by a cleanly stopped server and restarts on it: (a) the last
// record cut short, (b) a byte flipped inside a record in the middle of a
// block without an index file (as after a crash, so Open reads every
// record), (c) the same flip under a valid index file (so only reading the
// record finds it). Each time the server must start, serve every other
// message, let a consumer read past the damage and take new messages; in
// (a) and (b) it must also say in its log what recovery dropped.
func TestJetStreamRecoversDamagedBlocks(t *testing.T) {
	const (
		total   = 300
		flipped = total / 2 // seq of the record whose payload is damaged
	)
	dir := t.TempDir()
	stores := map[string]string{}
	for _, name := range []string{"truncated", "flipped", "flipped-indexed"} {
		stores[name] = filepath.Join(dir, name)
	}
	ctx := testContext(t)

	p, u := startJS(t, jsTestConfig(t, dir, stores["truncated"]), dir)
	_, js := jsConnect(t, u)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DMG", Subjects: []string{"dmg.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	var msgs []storedMsg
	for i := 1; i <= total; i++ {
		m := storedMsg{uint64(i), fmt.Sprintf("dmg.%d", i%7), fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%50))}
		ack, err := js.Publish(ctx, m.subj, []byte(m.payload))
		if err != nil || ack.Sequence != m.seq {
			t.Fatalf("publish %d: %+v, %v", i, ack, err)
		}
		msgs = append(msgs, m)
	}
	stopJS(t, p)
	copyTree(t, stores["truncated"], stores["flipped"])
	copyTree(t, stores["truncated"], stores["flipped-indexed"])
	msgsDir := func(name string) string { return filepath.Join(stores[name], "streams", "DMG", "msgs") }

	// (a) The last block loses the end of its last record.
	blk := lastBlock(t, msgsDir("truncated"))
	fi, err := os.Stat(blk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blk, fi.Size()-5); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, ctx, jsTestConfig(t, dir, stores["truncated"]), dir, damaged{
		want: msgs[:total-1], lastSeq: total - 1, log: "truncated_bytes=5",
	})

	// (b) A byte in the payload of the record in the middle flips, and
	// there is no index file.
	survivors := slices.Concat(msgs[:flipped-1], msgs[flipped:])
	flipPayloadByte(t, lastBlock(t, msgsDir("flipped")), flipped)
	indexes, err := filepath.Glob(filepath.Join(msgsDir("flipped"), "*.idx"))
	if err != nil || len(indexes) == 0 {
		t.Fatalf("no index files after a clean stop: %v", err)
	}
	for _, idx := range indexes {
		if err := os.Remove(idx); err != nil {
			t.Fatal(err)
		}
	}
	checkRecovered(t, ctx, jsTestConfig(t, dir, stores["flipped"]), dir, damaged{
		want: survivors, lastSeq: total, log: "corrupt_records=1",
	})

	// (c) The same flip under a valid index file: Open does not read the
	// record, so the stream still counts it, but it is never served.
	flipPayloadByte(t, lastBlock(t, msgsDir("flipped-indexed")), flipped)
	checkRecovered(t, ctx, jsTestConfig(t, dir, stores["flipped-indexed"]), dir, damaged{
		want: survivors, lastSeq: total, countsLost: true,
	})
}

// damaged is what checkRecovered expects of stream DMG after damage.
type damaged struct {
	// want is every message that must survive, in sequence order.
	want []storedMsg
	// lastSeq is the stream's last sequence.
	lastSeq uint64
	// log is part of the recovery report the log must show; "" expects
	// no recovery warning.
	log string
	// countsLost is set when the stream's message count may still
	// include the damaged messages (damage Open did not read).
	countsLost bool
}

// checkRecovered starts leafbox on a damaged store and checks stream DMG
// against d: its state, every surviving message, the damaged sequences
// not found, a new consumer delivering exactly the survivors, the log, and
// a new publish.
func checkRecovered(t *testing.T, ctx context.Context, cfg, portsDir string, d damaged) {
	t.Helper()
	p, u := startJS(t, cfg, portsDir)
	_, js := jsConnect(t, u)
	s, err := js.Stream(ctx, "DMG")
	if err != nil {
		t.Fatalf("stream after damage: %v; log:\n%s", err, p.log())
	}
	st := s.CachedInfo().State
	msgsOK := st.Msgs == uint64(len(d.want)) || d.countsLost && st.Msgs == d.lastSeq
	if !msgsOK || st.FirstSeq != d.want[0].seq || st.LastSeq != d.lastSeq {
		t.Errorf("state after damage: msgs %d, first %d, last %d; want %d, %d, %d",
			st.Msgs, st.FirstSeq, st.LastSeq, len(d.want), d.want[0].seq, d.lastSeq)
	}
	checkStored(t, ctx, s, d.want)
	kept := make(map[uint64]bool, len(d.want))
	for _, m := range d.want {
		kept[m.seq] = true
	}
	for seq := uint64(1); seq <= d.lastSeq; seq++ {
		if kept[seq] {
			continue
		}
		if m, err := s.GetMsg(ctx, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("damaged seq %d: got %+v, %v; want not found", seq, m, err)
		}
	}

	// A consumer reads through the damage: every survivor, in order. The
	// request ends early (no wait) once nothing more is available.
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	var delivered []storedMsg
	for len(delivered) < len(d.want) {
		batch, err := c.FetchNoWait(len(d.want) - len(delivered))
		if err != nil {
			t.Fatal(err)
		}
		before := len(delivered)
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			delivered = append(delivered, storedMsg{md.Sequence.Stream, m.Subject(), string(m.Data())})
		}
		if len(delivered) == before {
			break
		}
	}
	if !slices.Equal(delivered, d.want) {
		last := delivered[max(len(delivered)-1, 0):]
		t.Errorf("consumer delivered %d messages, want %d; last delivered %+v", len(delivered), len(d.want), last)
	}

	log := p.log()
	if d.log == "" {
		if strings.Contains(log, "jetstream: stream store recovered") {
			t.Errorf("unexpected recovery warning:\n%s", log)
		}
	} else if !strings.Contains(log, "jetstream: stream store recovered") || !strings.Contains(log, d.log) {
		t.Errorf("log does not report the recovery (%q):\n%s", d.log, log)
	}
	ack, err := js.Publish(ctx, "dmg.new", []byte("after recovery"))
	if err != nil || ack.Sequence != d.lastSeq+1 {
		t.Fatalf("publish after recovery: %+v, %v; want seq %d", ack, err, d.lastSeq+1)
	}
	if m, err := s.GetMsg(ctx, ack.Sequence); err != nil || string(m.Data) != "after recovery" {
		t.Fatalf("new message: %+v, %v", m, err)
	}
	stopJS(t, p)
}

// lastBlock returns the highest-numbered block file in a stream's msgs
// directory.
func lastBlock(t *testing.T, dir string) string {
	t.Helper()
	blocks, err := filepath.Glob(filepath.Join(dir, "*.blk"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no block files in %s: %v", dir, err)
	}
	slices.Sort(blocks)
	return blocks[len(blocks)-1]
}

// Block layout from store/filestore/doc.go.
const (
	blockHeaderSize = 48
	recordFixedSize = 40 // framing before the subject; a 4-byte crc32c ends the record
	recordMagic     = 0xB7
	recordKindMsg   = 1
)

// flipPayloadByte inverts the middle byte of the payload of the message
// record with sequence seq in the block file path.
func flipPayloadByte(t *testing.T, path string, seq uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := blockHeaderSize
	for off+recordFixedSize+4 <= len(b) {
		r := b[off:]
		if r[0] != recordMagic {
			t.Fatalf("%s: no record magic at offset %d", path, off)
		}
		subjLen := int(binenc.LittleEndian.Uint16(r[2:]))
		length := int(binenc.LittleEndian.Uint32(r[4:]))
		hdrLen := int(binenc.LittleEndian.Uint32(r[8:]))
		if r[1] == recordKindMsg && binenc.LittleEndian.Uint64(r[12:]) == seq {
			data := off + recordFixedSize + subjLen + hdrLen
			end := off + length - 4
			if data >= end {
				t.Fatalf("record of seq %d has no payload", seq)
			}
			b[(data+end)/2] ^= 0xFF
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		off += length
	}
	t.Fatalf("%s: no record of seq %d", path, seq)
}

// copyTree copies the directory tree src to dst, keeping each entry's
// permission bits (as `cp -a` would: the identity stays 0600).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm())
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
