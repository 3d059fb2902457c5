package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/vfs"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 10 * time.Second

// sent is one message the fake hub received.
type sent struct {
	subject, reply string
	hdr, data      []byte
}

// fakeHub is the Hub of the unit tests: it is ready once ready is closed
// and hands every publish to the test on pubs.
type fakeHub struct {
	ready chan struct{}
	pubs  chan sent
	fail  chan error // a value here fails the next Publish
}

func newFakeHub(ready bool) *fakeHub {
	h := &fakeHub{ready: make(chan struct{}), pubs: make(chan sent, 10000), fail: make(chan error, 1)}
	if ready {
		close(h.ready)
	}
	return h
}

func (h *fakeHub) WaitReady(ctx context.Context) error {
	select {
	case <-h.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *fakeHub) Publish(subject, reply string, hdr, data []byte) error {
	select {
	case err := <-h.fail:
		return err
	default:
	}
	h.pubs <- sent{subject, reply, append([]byte(nil), hdr...), append([]byte(nil), data...)}
	return nil
}

// next returns the next publish, failing the test after waitTimeout.
func (h *fakeHub) next(t *testing.T) sent {
	t.Helper()
	select {
	case p := <-h.pubs:
		return p
	case <-time.After(waitTimeout):
		t.Fatal("no publish toward the hub")
		return sent{}
	}
}

// requireNone fails if a publish is already queued.
func (h *fakeHub) requireNone(t *testing.T) {
	t.Helper()
	select {
	case p := <-h.pubs:
		t.Fatalf("unexpected publish %q", p.subject)
	default:
	}
}

func ack(ob *Outbox, p sent, stream string) {
	ob.HandleReply(p.reply, fmt.Appendf(nil, `{"stream":%q,"seq":1}`, stream))
}

func newMem(t *testing.T, cfg store.Config) store.Stream {
	t.Helper()
	s, err := memstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newOutbox(t *testing.T, s store.Stream, h Hub, cfg Config) *Outbox {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "up"
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "gw"
	}
	ob, err := New(s, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ob.Close() })
	return ob
}

func capture(t *testing.T, ob *Outbox, n, from int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := ob.Capture(fmt.Sprintf("telemetry.%d", i), nil, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// waitStatus waits until cond holds for ob's Status (Outbox.Wait),
// failing after waitTimeout.
func waitStatus(t *testing.T, ob *Outbox, what string, cond func(Status) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := ob.Wait(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v; status %+v", what, err, ob.Status())
	}
}

func TestForwardInOrderWithinWindow(t *testing.T) {
	s := newMem(t, store.Config{})
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{HubPrefix: "site1.", Stream: "HUB", Window: 8})
	capture(t, ob, 20, 0)
	if err := ob.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var window []sent
	for i := range 8 {
		p := hub.next(t)
		if want := fmt.Sprintf("site1.telemetry.%d", i); p.subject != want {
			t.Fatalf("publish %d on %q, want %q", i, p.subject, want)
		}
		wantHdr := fmt.Sprintf("NATS/1.0\r\nNats-Msg-Id: %s%d\r\nNats-Expected-Stream: HUB\r\n\r\n", ob.IDPrefix(), i+1)
		if string(p.hdr) != wantHdr {
			t.Fatalf("header %q, want %q", p.hdr, wantHdr)
		}
		if !strings.HasPrefix(p.reply, ob.InboxPrefix()) {
			t.Fatalf("reply %q outside the inbox %q", p.reply, ob.InboxPrefix())
		}
		window = append(window, p)
	}
	// The window is full: nothing more until a PubAck, and nothing is
	// removed before its PubAck.
	waitStatus(t, ob, "8 in flight", func(st Status) bool { return st.InFlight == 8 })
	hub.requireNone(t)
	if got := s.State().Msgs; got != 20 {
		t.Fatalf("stream holds %d, want 20 before any ack", got)
	}
	ack(ob, window[0], "HUB")
	p := hub.next(t)
	if p.subject != "site1.telemetry.8" {
		t.Fatalf("after one ack got %q, want site1.telemetry.8", p.subject)
	}
	window = append(window[1:], p)
	for _, w := range window {
		ack(ob, w, "HUB")
	}
	for i := 9; i < 20; i++ {
		p := hub.next(t)
		if want := fmt.Sprintf("site1.telemetry.%d", i); p.subject != want {
			t.Fatalf("publish on %q, want %q", p.subject, want)
		}
		ack(ob, p, "HUB")
	}
	waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
	st := ob.Status()
	if st.Captured != 20 || st.Stored != 20 || st.Acked != 20 || st.Forwarded != 20 || len(st.Dropped) != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestRetryAfterErrorAck(t *testing.T) {
	s := newMem(t, store.Config{})
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	capture(t, ob, 3, 0)
	require.NoError(t, ob.Start(context.Background()))
	p1, p2, p3 := hub.next(t), hub.next(t), hub.next(t)
	ack(ob, p1, "S") // stored
	ob.HandleReply(p2.reply, []byte(`{"error":{"code":503,"err_code":10077,"description":"resource limits exceeded"}}`))
	_ = p3
	// The round ends; the next starts from the oldest unacknowledged.
	r1 := hub.next(t)
	if want := "NATS/1.0\r\nNats-Msg-Id: " + ob.IDPrefix() + "2\r\n\r\n"; r1.subject != "telemetry.1" || string(r1.hdr) != want {
		t.Fatalf("retry sent %q %q, want telemetry.1 %q", r1.subject, r1.hdr, want)
	}
	r2 := hub.next(t)
	if r2.subject != "telemetry.2" {
		t.Fatalf("retry sent %q, want telemetry.2", r2.subject)
	}
	// A late PubAck of the failed round still removes its message.
	ack(ob, p3, "S")
	ack(ob, r1, "S")
	waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
	st := ob.Status()
	if st.Retries != 1 || st.Acked != 3 || !strings.Contains(st.LastError, "resource limits") {
		t.Fatalf("status %+v", st)
	}
}

func TestRetryAfterAckTimeoutAndPublishError(t *testing.T) {
	s := newMem(t, store.Config{})
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{AckTimeout: 20 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	hub.fail <- errors.New("no interest")
	capture(t, ob, 1, 0)
	require.NoError(t, ob.Start(context.Background()))
	p := hub.next(t) // after the failed publish
	again := hub.next(t)
	if p.reply == again.reply || p.subject != again.subject {
		t.Fatalf("timeout did not resend in a new round: %q then %q", p.reply, again.reply)
	}
	if got := s.State().Msgs; got != 1 {
		t.Fatalf("stream holds %d, want 1 before any ack", got)
	}
	ack(ob, again, "S")
	waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
	if st := ob.Status(); st.Retries < 2 {
		t.Fatalf("retries %d, want ≥ 2", st.Retries)
	}
}

func TestWrongStreamKeepsMessage(t *testing.T) {
	s := newMem(t, store.Config{})
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{Stream: "HUB", RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	capture(t, ob, 1, 0)
	require.NoError(t, ob.Start(context.Background()))
	ack(ob, hub.next(t), "OTHER")
	again := hub.next(t)
	if got := s.State().Msgs; got != 1 {
		t.Fatalf("stream holds %d, want the message kept", got)
	}
	ack(ob, again, "HUB")
	waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
	if st := ob.Status(); st.WrongStream != 1 || st.Acked != 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestResumeAfterReopen(t *testing.T) {
	dir := t.TempDir()
	open := func() *filestore.Stream {
		s, err := filestore.Open(vfs.OS, dir, filestore.Config{Config: store.Config{Name: "up"}})
		require.NoError(t, err)
		return s
	}
	s := open()
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{})
	capture(t, ob, 10, 0)
	require.NoError(t, ob.Start(context.Background()))
	for range 4 {
		ack(ob, hub.next(t), "S")
	}
	waitStatus(t, ob, "4 acked", func(st Status) bool { return st.Acked == 4 })
	require.NoError(t, ob.Close())
	require.NoError(t, s.Close())

	s = open()
	defer s.Close()
	hub = newFakeHub(true)
	first := ob.IDPrefix()
	ob = newOutbox(t, s, hub, Config{})
	if ob.IDPrefix() == first || !strings.HasPrefix(first, "gw.up.") || !strings.HasPrefix(ob.IDPrefix(), "gw.up.") {
		t.Fatalf("id prefixes %q then %q: want gw.up.<epoch>. with a new epoch", first, ob.IDPrefix())
	}
	require.NoError(t, ob.Start(context.Background()))
	// The backlog is re-sent with the ids it was captured with.
	for i := 4; i < 10; i++ {
		p := hub.next(t)
		want := fmt.Sprintf("NATS/1.0\r\nNats-Msg-Id: %s%d\r\n\r\n", first, i+1)
		if p.subject != fmt.Sprintf("telemetry.%d", i) || string(p.hdr) != want {
			t.Fatalf("after reopen sent %q %q, want telemetry.%d %q", p.subject, p.hdr, i, want)
		}
		ack(ob, p, "S")
	}
	waitStatus(t, ob, "empty outbox", func(st Status) bool { return st.BacklogMsgs == 0 })
	// New captures get ids of the new epoch.
	capture(t, ob, 1, 10)
	if p := hub.next(t); string(p.hdr) != "NATS/1.0\r\nNats-Msg-Id: "+ob.IDPrefix()+"1\r\n\r\n" {
		t.Fatalf("new message header %q", p.hdr)
	}
}

func TestDropsCounted(t *testing.T) {
	old := newOutbox(t, newMem(t, store.Config{MaxMsgs: 5}), newFakeHub(false), Config{})
	capture(t, old, 8, 0)
	if st := old.Status(); st.Dropped[DropLimits] != 3 || st.BacklogMsgs != 5 || st.Stored != 8 {
		t.Fatalf("discard old: status %+v", st)
	}
	nu := newOutbox(t, newMem(t, store.Config{MaxMsgs: 5, Discard: store.DiscardNew}), newFakeHub(false), Config{})
	for i := range 8 {
		_ = nu.Capture("telemetry.x", nil, []byte{byte(i)})
	}
	if st := nu.Status(); st.Dropped[DropRejected] != 3 || st.Dropped[DropLimits] != 0 || st.BacklogMsgs != 5 {
		t.Fatalf("discard new: status %+v", st)
	}
}

// TestHeaderMerge: what the forwarder adds to a stored message's header;
// a message stored without a Nats-Msg-Id (captured before Capture fixed
// the ids) is sent with "<server>.<uplink>.<sequence>", as it was then.
func TestHeaderMerge(t *testing.T) {
	ob := newOutbox(t, newMem(t, store.Config{}), newFakeHub(false), Config{Stream: "S"})
	cases := []struct{ in, want string }{
		{"", "NATS/1.0\r\nNats-Msg-Id: gw.up.7\r\nNats-Expected-Stream: S\r\n\r\n"},
		{"NATS/1.0\r\nA: b\r\n\r\n", "NATS/1.0\r\nA: b\r\nNats-Msg-Id: gw.up.7\r\nNats-Expected-Stream: S\r\n\r\n"},
		{"NATS/1.0\r\nnats-msg-id: mine\r\n\r\n", "NATS/1.0\r\nnats-msg-id: mine\r\nNats-Expected-Stream: S\r\n\r\n"},
	}
	for _, c := range cases {
		if got := string(ob.header([]byte(c.in), 7)); got != c.want {
			t.Errorf("header(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
