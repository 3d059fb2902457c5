package outbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/changes"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// errPowerLost is what every file operation returns after a simulated
// power cut, until the machine "boots" again on the underlying MemFS.
var errPowerLost = errors.New("power lost")

// crashFS is a vfs.FS over a strict MemFS that can lose power at any
// moment: crash waits for the operations in progress, discards every
// unsynced byte (ResetToSyncedState) and fails every later operation of
// the old process, whose goroutines may still be running.
type crashFS struct {
	mem  *vfs.MemFS
	mu   sync.RWMutex // held shared by each operation, exclusively by crash
	dead bool
	// syncHook, when set, runs before (before true) and after every
	// File.Sync; an error before skips the sync and is returned.
	syncHook func(before bool) error
	// writeHook, when set, runs after every File.Write and WriteAt.
	writeHook func()
}

func (c *crashFS) crash() {
	c.mu.Lock()
	c.dead = true
	c.mem.ResetToSyncedState()
	c.mu.Unlock()
}

// do runs op unless the power is lost.
func (c *crashFS) do(op func() error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.dead {
		return errPowerLost
	}
	return op()
}

func (c *crashFS) file(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashFile{fs: c, f: f}, nil
}

func (c *crashFS) Create(name string) (f vfs.File, err error) {
	err = c.do(func() error { f, err = c.file(c.mem.Create(name)); return err })
	return f, err
}

func (c *crashFS) Open(name string) (f vfs.File, err error) {
	err = c.do(func() error { f, err = c.file(c.mem.Open(name)); return err })
	return f, err
}

func (c *crashFS) OpenFile(name string, flag int, perm fs.FileMode) (f vfs.File, err error) {
	err = c.do(func() error { f, err = c.file(c.mem.OpenFile(name, flag, perm)); return err })
	return f, err
}

func (c *crashFS) Rename(o, n string) error { return c.do(func() error { return c.mem.Rename(o, n) }) }
func (c *crashFS) Remove(n string) error    { return c.do(func() error { return c.mem.Remove(n) }) }
func (c *crashFS) RemoveAll(n string) error { return c.do(func() error { return c.mem.RemoveAll(n) }) }
func (c *crashFS) MkdirAll(d string, p fs.FileMode) error {
	return c.do(func() error { return c.mem.MkdirAll(d, p) })
}

func (c *crashFS) ReadDir(d string) (es []fs.DirEntry, err error) {
	err = c.do(func() error { es, err = c.mem.ReadDir(d); return err })
	return es, err
}

func (c *crashFS) Stat(n string) (fi fs.FileInfo, err error) {
	err = c.do(func() error { fi, err = c.mem.Stat(n); return err })
	return fi, err
}

type crashFile struct {
	fs *crashFS
	f  vfs.File
}

func (f *crashFile) Read(p []byte) (n int, err error) {
	err = f.fs.do(func() error { n, err = f.f.Read(p); return err })
	return n, err
}

func (f *crashFile) ReadAt(p []byte, off int64) (n int, err error) {
	err = f.fs.do(func() error { n, err = f.f.ReadAt(p, off); return err })
	return n, err
}

func (f *crashFile) Write(p []byte) (n int, err error) {
	err = f.fs.do(func() error { n, err = f.f.Write(p); return err })
	if f.fs.writeHook != nil {
		f.fs.writeHook()
	}
	return n, err
}

func (f *crashFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.fs.do(func() error { n, err = f.f.WriteAt(p, off); return err })
	if f.fs.writeHook != nil {
		f.fs.writeHook()
	}
	return n, err
}

func (f *crashFile) Sync() error {
	if h := f.fs.syncHook; h != nil {
		if err := h(true); err != nil {
			return err
		}
		defer func() { _ = h(false) }()
	}
	return f.fs.do(f.f.Sync)
}

func (f *crashFile) Truncate(n int64) error { return f.fs.do(func() error { return f.f.Truncate(n) }) }
func (f *crashFile) Close() error           { return f.f.Close() }
func (f *crashFile) Stat() (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := f.fs.do(func() (err error) { fi, err = f.f.Stat(); return err })
	return fi, err
}

// dedupHub is a Hub that behaves like a hub JetStream stream with a
// duplicate window: it stores each Nats-Msg-Id once, in arrival order, and
// acknowledges every publish at once. It outlives the gateway's crashes,
// as a real hub does.
type dedupHub struct {
	mu      sync.Mutex
	ob      *Outbox
	ids     map[string]bool
	stored  []sent
	changes changes.Notifier // notified when stored grows
	// batched makes it take fast batches as nats-server does (batch_test.go).
	batched bool
	batches map[string]*hubBatch
}

func newDedupHub() *dedupHub {
	return &dedupHub{ids: map[string]bool{}, batched: batchedTests, batches: map[string]*hubBatch{}}
}

func (h *dedupHub) attach(ob *Outbox) {
	h.mu.Lock()
	h.ob = ob
	h.mu.Unlock()
}

func (h *dedupHub) WaitReady(context.Context) error { return nil }

func (h *dedupHub) Publish(subject, reply string, hdr, data []byte) error {
	if h.batched && strings.HasSuffix(reply, batchSuffix) {
		return h.publishBatch(subject, reply, hdr, data)
	}
	id := ""
	for _, line := range strings.Split(string(hdr), "\r\n") {
		if v, ok := strings.CutPrefix(line, HeaderMsgID+": "); ok {
			id = v
		}
	}
	h.mu.Lock()
	dup := h.ids[id]
	if !dup {
		h.ids[id] = true
		h.stored = append(h.stored, sent{subject: subject, data: append([]byte(nil), data...)})
	}
	ob := h.ob
	seq := len(h.stored)
	h.mu.Unlock()
	h.changes.Notify()
	ob.HandleReply(reply, fmt.Appendf(nil, `{"stream":"S","seq":%d,"duplicate":%v}`, seq, dup))
	return nil
}

// waitStored waits until the hub has stored n messages, failing after
// waitTimeout.
func (h *dedupHub) waitStored(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := h.changes.Wait(ctx, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.stored) == n }); err != nil {
		t.Fatalf("waiting for the hub to store %d: %v", n, err)
	}
}

// perProducer returns the payloads the hub stored for each producer
// (subject telemetry.p<k>), in the order stored.
func (h *dedupHub) perProducer(t *testing.T, producers int) [][]int {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]int, producers)
	for _, m := range h.stored {
		k, err1 := strconv.Atoi(strings.TrimPrefix(m.subject, "telemetry.p"))
		i, err2 := strconv.Atoi(string(m.data))
		if err1 != nil || err2 != nil || k < 0 || k >= producers {
			t.Fatalf("hub stored an unexpected message %q %q", m.subject, m.data)
		}
		out[k] = append(out[k], i)
	}
	return out
}

// TestPowerCutKeepsAcceptedMessages cuts the power of a gateway while
// producers capture and the forwarder forwards to a deduplicating hub, at
// several points, with both kinds of outbox stream: one that syncs in
// Store (SyncInterval 0: accepted when Capture returns) and one with a
// SyncInterval (what cmd/internal/app opens: accepted when a Sync after the
// Capture returned, as the broker runs before a PONG; its own timer is
// set too long to help). After each cut the outbox is recovered from the
// synced state alone and captures go on: the hub ends with every accepted
// message exactly once, in per-producer order, then possibly some of the
// unconfirmed ones that survived, then the messages captured after the
// reboot.
func TestPowerCutKeepsAcceptedMessages(t *testing.T) {
	const producers, after, syncEvery = 4, 50, 8
	// The outbox streams run plaintext and encrypted (jetstream.cipher
	// seals them in the app), with both ciphers.
	key := []byte("outbox test key, 32 bytes long..")
	for _, mode := range []struct {
		deferred bool
		cipher   filestore.Cipher
	}{{false, filestore.CipherNone}, {true, filestore.CipherNone}, {true, filestore.CipherChaCha}, {false, filestore.CipherAES}} {
		deferred := mode.deferred
		open := func(fsys vfs.FS) (*filestore.Stream, Config) {
			cfg := filestore.Config{
				Config:    store.Config{Name: "tel"},
				BlockSize: 16 << 10, // several blocks, so cuts hit rolls too
			}
			if mode.cipher != filestore.CipherNone {
				cfg.Encryption = filestore.Encryption{Cipher: mode.cipher, Key: key}
			}
			if deferred {
				cfg.SyncInterval = time.Hour
			}
			s, err := filestore.Open(fsys, "outbox/tel", cfg)
			require.NoError(t, err)
			return s, Config{Name: "tel", ServerName: "gw", Stream: "S", Batch: batchedTests}
		}
		for round, cutAt := range []int64{1, 40, 200, 555, 1500} {
			t.Run(fmt.Sprintf("deferred=%v/%s/cut%d_after%d", deferred, mode.cipher, round, cutAt), func(t *testing.T) {
				mem := vfs.NewStrictMem()
				cfs := &crashFS{mem: mem}
				hub := newDedupHub()
				s, oc := open(cfs)
				ob, err := New(s, hub, oc)
				require.NoError(t, err)
				hub.attach(ob)
				require.NoError(t, ob.Start(context.Background()))

				// captured[k] counts producer k's messages whose Capture
				// returned nil; confirmed[k] those accepted: all of them
				// without a Syncer, else those a later Sync covered.
				captured := make([]atomic.Int64, producers)
				confirmed := make([]atomic.Int64, producers)
				var total atomic.Int64
				var wg sync.WaitGroup
				for k := range producers {
					wg.Go(func() {
						subj := "telemetry.p" + strconv.Itoa(k)
						for i := 0; ; i++ {
							if err := ob.Capture(subj, nil, []byte(strconv.Itoa(i))); err != nil {
								if !errors.Is(err, errPowerLost) {
									t.Errorf("producer %d message %d: %v", k, i, err)
								}
								return
							}
							captured[k].Add(1)
							total.Add(1)
							switch {
							case !deferred:
								confirmed[k].Store(int64(i + 1))
							case (i+1)%syncEvery == 0:
								if err := ob.Sync(); err != nil {
									if !errors.Is(err, errPowerLost) {
										t.Errorf("producer %d sync: %v", k, err)
									}
									return
								}
								confirmed[k].Store(int64(i + 1))
							}
						}
					})
				}
				waitStatus(t, ob, fmt.Sprintf("%d captures", cutAt), func(st Status) bool { return st.Stored >= uint64(cutAt) })
				cfs.crash()
				wg.Wait()
				_ = ob.Close()
				_ = s.Close() // fails: the old process has no power

				// Reboot on what was synced; capture more, then drain.
				s, oc = open(mem)
				defer s.Close()
				ob, err = New(s, hub, oc)
				require.NoError(t, err)
				defer ob.Close()
				hub.attach(ob)
				recovered := s.State().Msgs
				require.NoError(t, ob.Start(context.Background()))
				next := make([]int64, producers)
				for k := range producers {
					// The message in flight at the cut (index captured[k])
					// may have survived; the new ones continue after it.
					next[k] = captured[k].Load() + 1
					for i := next[k]; i < next[k]+after; i++ {
						require.NoError(t, ob.Capture("telemetry.p"+strconv.Itoa(k), nil, []byte(strconv.FormatInt(i, 10))))
					}
				}
				require.NoError(t, ob.Sync())
				waitStatus(t, ob, "the outbox drains", func(st Status) bool { return st.BacklogMsgs == 0 })

				got := hub.perProducer(t, producers)
				for k := range producers {
					conf, nxt := int(confirmed[k].Load()), int(next[k])
					var want []int
					for i := range conf {
						want = append(want, i)
					}
					// Unconfirmed survivors: a prefix of the rest.
					for i := conf; i < nxt && len(got[k]) > i && got[k][i] == i; i++ {
						want = append(want, i)
					}
					for i := nxt; i < nxt+after; i++ {
						want = append(want, i)
					}
					if fmt.Sprint(got[k]) != fmt.Sprint(want) {
						t.Fatalf("producer %d (%d accepted, %d captured before the cut): hub holds %v,\nwant %v",
							k, conf, nxt-1, got[k], want)
					}
				}
				t.Logf("cut after %d captures: %d recovered in the outbox, hub holds %d", total.Load(), recovered, len(hub.stored))
			})
		}
	}
}

// TestForwardsOnlyDurableMessages lets the forwarder run while a
// captured message is written and indexed but its fsync is still pending,
// then cuts the power before the fsync completes. The lost message must
// not have been sent to the hub: after the reboot the next message reuses
// its sequence, and so its Nats-Msg-Id, and the hub's duplicate window
// would drop that message although its Capture returned.
func TestForwardsOnlyDurableMessages(t *testing.T) {
	mem := vfs.NewStrictMem()
	// Syncs are numbered once armed: the first (message B's) completes,
	// then waits for release[0] before it returns; the second (message
	// A's) waits for release[1] and fails, as a power cut in the middle
	// of it would.
	var armed atomic.Bool
	var syncs atomic.Int32
	entered := []chan struct{}{make(chan struct{}), make(chan struct{})}
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	cfs := &crashFS{mem: mem, syncHook: func(before bool) error {
		if !armed.Load() {
			return nil
		}
		if before {
			if syncs.Add(1) == 2 {
				close(entered[1])
				<-release[1]
				return errPowerLost
			}
			return nil
		}
		if syncs.Load() == 1 {
			close(entered[0])
			<-release[0]
		}
		return nil
	}}
	// aWritten hears of the writes made while B's fsync runs: A's record.
	aWritten := make(chan struct{}, 16)
	cfs.writeHook = func() {
		if armed.Load() && syncs.Load() == 1 {
			aWritten <- struct{}{}
		}
	}
	fsys := vfs.FS(cfs)
	open := func(fsys vfs.FS) *filestore.Stream {
		s, err := filestore.Open(fsys, "outbox/tel", filestore.Config{Config: store.Config{Name: "tel"}})
		require.NoError(t, err)
		return s
	}
	s := open(fsys)
	hub := newFakeHub(true)
	ob, err := New(s, hub, Config{Name: "tel", ServerName: "gw"})
	require.NoError(t, err)
	require.NoError(t, ob.Start(context.Background()))
	waitStatus(t, ob, "the forwarder waits for messages", func(st Status) bool { return st.State == StateForwarding })

	armed.Store(true)
	doneB, doneA := make(chan error, 1), make(chan error, 1)
	go func() { doneB <- ob.Capture("telemetry.b", nil, []byte("B")) }()
	<-entered[0] // B written, its fsync running
	go func() { doneA <- ob.Capture("telemetry.a", nil, []byte("A")) }()
	select {
	case <-aWritten: // A's record is written, under the stream's lock
	case <-time.After(waitTimeout):
		t.Fatal("A is not written while B's fsync runs")
	}
	if last := s.State().LastSeq; last != 2 { // State waits for A's Store to let go of the lock
		t.Fatalf("last sequence %d once A is written, want 2", last)
	}
	close(release[0])
	require. // B is durable: its Capture returns and wakes the forwarder
			NoError(t, <-doneB)
	<-entered[1] // A's fsync is running
	if p := hub.next(t); string(p.data) != "B" {
		t.Fatalf("sent %q first, want B", p.data)
	}
	// A buggy forwarder sends A right after B; give it the moment it
	// needs (a correct one never does).
	var early []sent
	select {
	case p := <-hub.pubs:
		early = append(early, p)
	case <-time.After(100 * time.Millisecond):
	}
	cfs.crash()
	close(release[1])
	if err := <-doneA; err == nil {
		t.Fatal("the capture whose fsync failed returned nil")
	}
	_ = ob.Close()
	_ = s.Close()
	for len(hub.pubs) > 0 {
		early = append(early, <-hub.pubs)
	}

	s = open(mem)
	defer s.Close()
	hub2 := newFakeHub(true)
	ob2 := newOutbox(t, s, hub2, Config{Name: "tel", ServerName: "gw"})
	require.NoError(t, ob2.Capture("telemetry.c", nil, []byte("C")))
	require.NoError(t, ob2.Start(context.Background()))
	var c sent
	for c = hub2.next(t); string(c.data) != "C"; c = hub2.next(t) { // B again first: its PubAck never came
	}
	for _, e := range early {
		if string(e.hdr) == string(c.hdr) {
			t.Fatalf("C is sent with the Nats-Msg-Id of %q, which was sent before its fsync and lost (%q): the hub would drop C as a duplicate",
				e.data, c.hdr)
		}
	}
}

// TestDeferredSyncForwardsOnlySynced captures with a Syncer and never
// calls Sync itself: the forwarder must sync before it sends, so after a
// power cut no message the hub stored has vanished from the outbox, and
// the messages captured after the reboot get sequences, so Nats-Msg-Ids,
// of their own: the hub ends with all ten.
func TestDeferredSyncForwardsOnlySynced(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfs := &crashFS{mem: mem}
	open := func(fsys vfs.FS) (*filestore.Stream, Config) {
		s, err := filestore.Open(fsys, "outbox/tel", filestore.Config{Config: store.Config{Name: "tel"}, SyncInterval: time.Hour})
		require.NoError(t, err)
		return s, Config{Name: "tel", ServerName: "gw", Stream: "S", Batch: batchedTests}
	}
	hub := newDedupHub()
	s, oc := open(cfs)
	ob, err := New(s, hub, oc)
	require.NoError(t, err)
	hub.attach(ob)
	require.NoError(t, ob.Start(context.Background()))
	for i := range 5 {
		require.NoError(t, ob.Capture("telemetry.p0", nil, []byte(strconv.Itoa(i))))
	}
	hub.waitStored(t, 5)
	cfs.crash()
	_ = ob.Close()
	_ = s.Close()

	s, oc = open(mem)
	defer s.Close()
	ob, err = New(s, hub, oc)
	require.NoError(t, err)
	defer ob.Close()
	hub.attach(ob)
	require.NoError(t, ob.Start(context.Background()))
	for i := 5; i < 10; i++ {
		require.NoError(t, ob.Capture("telemetry.p0", nil, []byte(strconv.Itoa(i))))
	}
	waitStatus(t, ob, "the outbox drains", func(st Status) bool { return st.BacklogMsgs == 0 })
	if got := fmt.Sprint(hub.perProducer(t, 1)[0]); got != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("hub holds %s, want 0 to 9 once each", got)
	}
}
