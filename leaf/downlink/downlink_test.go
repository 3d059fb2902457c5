package downlink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// published is one message the downlink sent toward the hub.
type published struct {
	subject, reply, body string
}

// scriptHub answers consumer creation at once and hands pulls and acks to
// the test, which plays the hub's part by calling HandleMsg.
type scriptHub struct {
	d *Downlink
	// autoConfirm answers every ack at once, as a hub does.
	autoConfirm bool
	// createAnswer, when set, answers consumer creation instead of the
	// default success.
	createAnswer string
	creates      chan published
	pulls        chan published
	acks         chan published // acks and naks
}

func newScriptHub() *scriptHub {
	return &scriptHub{creates: make(chan published, 100), pulls: make(chan published, 100), acks: make(chan published, 100)}
}

func (h *scriptHub) WaitReady(ctx context.Context) error { return nil }

func (h *scriptHub) Publish(subject, reply string, hdr, data []byte) error {
	p := published{subject, reply, string(data)}
	switch {
	case strings.HasPrefix(subject, "$JS.hub.API.CONSUMER.CREATE."):
		h.creates <- p
		answer := `{"num_pending":0,"ack_floor":{"stream_seq":0}}`
		if h.createAnswer != "" {
			answer = h.createAnswer
		}
		h.d.HandleMsg(reply, "", nil, []byte(answer))
	case strings.HasPrefix(subject, "$JS.hub.API.CONSUMER.MSG.NEXT."):
		h.pulls <- p
	case strings.HasPrefix(subject, "$JS.ACK."):
		h.acks <- p
		if h.autoConfirm && reply != "" {
			h.d.HandleMsg(reply, "", nil, nil)
		}
	default:
		return fmt.Errorf("unexpected publish on %s", subject)
	}
	return nil
}

// send delivers stream sequence seq (delivery count dc) to the downlink
// as the hub would.
func (h *scriptHub) send(seq, dc uint64) {
	reply := fmt.Sprintf("$JS.ACK.CMDS.gw_cmds.%d.%d.%d.1700000000000000000.0", dc, seq, seq+dc*100)
	h.d.HandleMsg(fmt.Sprintf("cmd.site1.m%d", seq), reply, nil, fmt.Appendf(nil, "%d", seq))
}

// confirm answers the downlink's ack of seq.
func (h *scriptHub) confirm(seq uint64) {
	h.d.HandleMsg(fmt.Sprintf("%sa.%d", h.d.InboxPrefix(), seq), "", nil, nil)
}

// recvOn returns the next value on ch or fails.
func recvOn[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// recordLocal records deliveries and fails those listed in fail once.
type recordLocal struct {
	mu        sync.Mutex
	fail      map[uint64]bool
	delivered chan Msg
}

func (l *recordLocal) Deliver(_ context.Context, m Msg) error {
	l.mu.Lock()
	fail := l.fail[m.Seq]
	delete(l.fail, m.Seq)
	l.mu.Unlock()
	if fail {
		return errors.New("local failure")
	}
	m.Data = append([]byte(nil), m.Data...)
	l.delivered <- m
	return nil
}

func newTestDownlink(t *testing.T, cfg Config, autoConfirm bool, fail ...uint64) (*Downlink, *scriptHub, *recordLocal) {
	t.Helper()
	hub := newScriptHub()
	hub.autoConfirm = autoConfirm
	local := &recordLocal{fail: map[uint64]bool{}, delivered: make(chan Msg, 100)}
	for _, s := range fail {
		local.fail[s] = true
	}
	cfg.Name, cfg.Stream, cfg.Durable = "cmds", "CMDS", "gw_cmds"
	cfg.HubPrefix, cfg.LocalPrefix = "cmd.site1.", "cmd."
	d, err := New(hub, local, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hub.d = d
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	recvOn(t, hub.creates, "consumer create")
	recvOn(t, hub.pulls, "first pull")
	return d, hub, local
}

func TestDownlinkAcksAfterDeliveryAndSkipsRedeliveredDuplicates(t *testing.T) {
	d, hub, local := newTestDownlink(t, Config{MaxAckPending: 4}, false)
	hub.send(1, 1)
	hub.send(2, 1)
	for seq := uint64(1); seq <= 2; seq++ {
		m := recvOn(t, local.delivered, "delivery")
		if m.Seq != seq || m.Subject != fmt.Sprintf("cmd.m%d", seq) || m.HubSubject != fmt.Sprintf("cmd.site1.m%d", seq) ||
			m.ID != fmt.Sprintf("CMDS.%d", seq) || string(m.Data) != fmt.Sprint(seq) {
			t.Fatalf("delivery %d: %+v", seq, m)
		}
		a := recvOn(t, hub.acks, "ack")
		if a.body != "+ACK" || a.reply != fmt.Sprintf("%sa.%d", d.InboxPrefix(), seq) || !strings.Contains(a.subject, fmt.Sprintf(".%d.", seq)) {
			t.Fatalf("ack %d: %+v", seq, a)
		}
	}
	// The ack of 1 is confirmed; that of 2 is lost with the link, and the
	// hub sends 2 again: acked again, not delivered twice.
	hub.confirm(1)
	hub.send(2, 2)
	if a := recvOn(t, hub.acks, "second ack of 2"); a.body != "+ACK" {
		t.Fatalf("redelivered duplicate answered %+v", a)
	}
	hub.confirm(2)
	hub.send(3, 1)
	if m := recvOn(t, local.delivered, "delivery of 3"); m.Seq != 3 {
		t.Fatalf("delivered %d after the duplicate, want 3", m.Seq)
	}
	recvOn(t, hub.acks, "ack of 3")
	hub.confirm(3)
	waitStatus(t, d, func(st Status) bool { return st.Acked == 3 })
	if st := d.Status(); st.Delivered != 3 || st.Duplicates != 1 || st.Redelivered != 1 || st.LastSeq != 3 || st.State != StatePulling {
		t.Fatalf("status %+v", st)
	}
}

// A local failure naks the message and holds every later one back until
// it is delivered, so the local order is the stream's.
func TestDownlinkLocalFailureKeepsOrder(t *testing.T) {
	d, hub, local := newTestDownlink(t, Config{MaxAckPending: 4}, true, 3)
	hub.send(3, 1)
	hub.send(4, 1)
	hub.send(5, 1)
	for _, seq := range []int{3, 4, 5} {
		a := recvOn(t, hub.acks, "nak")
		if !strings.HasPrefix(a.body, `-NAK {"delay":`) || !strings.Contains(a.subject, fmt.Sprintf(".1.%d.", seq)) {
			t.Fatalf("want a nak with delay for %d, got %+v", seq, a)
		}
	}
	if st := d.Status(); st.Failed != 1 || st.Delivered != 0 || !strings.Contains(st.LastError, "local failure") {
		t.Fatalf("status after the failure: %+v", st)
	}
	// The hub sends 4 back before 3: still held.
	hub.send(4, 2)
	if a := recvOn(t, hub.acks, "nak of 4"); !strings.HasPrefix(a.body, "-NAK") {
		t.Fatalf("4 before 3 answered %+v", a)
	}
	for _, seq := range []uint64{3, 4, 5} {
		hub.send(seq, 3)
		if m := recvOn(t, local.delivered, "delivery"); m.Seq != seq {
			t.Fatalf("delivered %d, want %d", m.Seq, seq)
		}
		if a := recvOn(t, hub.acks, "ack"); a.body != "+ACK" {
			t.Fatalf("ack of %d: %+v", seq, a)
		}
	}
}

// Once the failed message is delivered, a new one the hub sends at once
// (an ack freed a slot) still waits behind those held back earlier, which
// the hub sends only when their nak delay ends.
func TestDownlinkNewMessageWaitsBehindHeldOnes(t *testing.T) {
	_, hub, local := newTestDownlink(t, Config{MaxAckPending: 2}, true, 5)
	hub.send(5, 1)
	hub.send(6, 1)
	recvOn(t, hub.acks, "nak of 5")
	recvOn(t, hub.acks, "nak of 6")
	hub.send(5, 2)
	if m := recvOn(t, local.delivered, "delivery of 5"); m.Seq != 5 {
		t.Fatalf("delivered %d, want 5", m.Seq)
	}
	recvOn(t, hub.acks, "ack of 5")
	hub.send(7, 1)
	if a := recvOn(t, hub.acks, "answer to 7"); !strings.HasPrefix(a.body, "-NAK") {
		t.Fatalf("7 before the held 6 answered %+v", a)
	}
	for _, seq := range []uint64{6, 7} {
		hub.send(seq, 2)
		if m := recvOn(t, local.delivered, "delivery"); m.Seq != seq {
			t.Fatalf("delivered %d, want %d", m.Seq, seq)
		}
		recvOn(t, hub.acks, "ack")
	}
}

// A failed message that never comes back (the hub stream dropped it)
// stops holding the later ones back after twice its delay plus the ack
// wait. Time is the bubble's.
func TestDownlinkReleasesHoldWhenFailedMessageIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{MaxAckPending: 4, AckWait: time.Second, RetryMin: 100 * time.Millisecond, RetryMax: 100 * time.Millisecond}
		d, hub, local := newTestDownlink(t, cfg, true, 3)
		hub.send(3, 1)
		recvOn(t, hub.acks, "nak of 3")
		hub.send(4, 1)
		if a := recvOn(t, hub.acks, "nak of 4"); !strings.HasPrefix(a.body, "-NAK") {
			t.Fatalf("4 answered %+v while 3 is held", a)
		}
		time.Sleep(2*(cfg.RetryMax+cfg.AckWait) + time.Millisecond)
		hub.send(4, 2)
		if m := recvOn(t, local.delivered, "delivery of 4"); m.Seq != 4 {
			t.Fatalf("delivered %d, want 4", m.Seq)
		}
		recvOn(t, hub.acks, "ack of 4")
		if st := d.Status(); st.Skipped != 1 || st.Failed != 1 {
			t.Fatalf("status %+v", st)
		}
		_ = d.Close()
	})
}

// With one message outstanding the hub sends the stream in order, so an
// earlier sequence is a repeat even after its ack was confirmed (a hub
// that crashed before persisting it).
func TestDownlinkMaxAckPendingOneSkipsEarlierSequences(t *testing.T) {
	d, hub, local := newTestDownlink(t, Config{}, true)
	hub.send(7, 1)
	recvOn(t, local.delivered, "delivery of 7")
	recvOn(t, hub.acks, "ack of 7")
	hub.send(6, 1)
	hub.send(7, 2)
	for range 2 {
		if a := recvOn(t, hub.acks, "ack of a repeat"); a.body != "+ACK" {
			t.Fatalf("repeat answered %+v", a)
		}
	}
	hub.send(8, 1)
	if m := recvOn(t, local.delivered, "delivery of 8"); m.Seq != 8 {
		t.Fatalf("delivered %d, want 8", m.Seq)
	}
	// Counted once Deliver has returned, a moment after the delivery.
	waitStatus(t, d, func(st Status) bool { return st.Delivered == 2 })
	if st := d.Status(); st.Duplicates != 2 || st.Delivered != 2 {
		t.Fatalf("status %+v", st)
	}
}

// A request that ends (408) is renewed; a pull that hears nothing for two
// heartbeats ends the session, and the consumer is bound again.
func TestDownlinkRenewsPullsAndRebindsWithoutHeartbeat(t *testing.T) {
	d, hub, local := newTestDownlink(t, Config{Expires: time.Second, Batch: 2}, true)
	// newTestDownlink took the first pull; look at the next ones.
	pull := func(what string) published {
		t.Helper()
		p := recvOn(t, hub.pulls, what)
		if !strings.HasSuffix(p.subject, ".CMDS.gw_cmds") || p.body != `{"batch":2,"expires":1000000000,"idle_heartbeat":250000000}` {
			t.Fatalf("pull %+v", p)
		}
		return p
	}
	first := d.inbox + "p.2" // the create was request 1
	d.HandleMsg(first, "", []byte("NATS/1.0 100 Idle Heartbeat\r\n\r\n"), nil)
	d.HandleMsg(first, "", []byte("NATS/1.0 408 Request Timeout\r\n\r\n"), nil)
	second := pull("a pull after 408")
	// A batch filled renews too.
	hub.send(1, 1)
	hub.send(2, 1)
	recvOn(t, local.delivered, "delivery")
	recvOn(t, local.delivered, "delivery")
	third := pull("a pull after a full batch")
	if second.reply == third.reply {
		t.Fatalf("pulls share reply %s", third.reply)
	}
	// Silence for two heartbeats: the session ends and binds again.
	recvOn(t, hub.creates, "a second consumer create")
	pull("the pull of the new session")
	waitStatus(t, d, func(st Status) bool { return st.Pulls == 4 })
	if st := d.Status(); st.Sessions != 2 || !strings.Contains(st.LastError, "no heartbeat") {
		t.Fatalf("status %+v", st)
	}
}

// Close waits for the hub to confirm the acks sent, so that a stopping
// gateway leaves nothing delivered for the hub to send again.
func TestDownlinkCloseWaitsForAckConfirmations(t *testing.T) {
	d, hub, local := newTestDownlink(t, Config{}, false)
	hub.send(1, 1)
	recvOn(t, local.delivered, "delivery")
	recvOn(t, hub.acks, "ack")
	closed := make(chan error)
	go func() { closed <- d.Close() }()
	waitStatus(t, d, func(st Status) bool { return st.State == StateClosed })
	select {
	case <-closed:
		t.Fatal("Close returned with an ack unconfirmed")
	default:
	}
	hub.confirm(1)
	if err := recvOn(t, closed, "Close"); err != nil {
		t.Fatal(err)
	}
	if st := d.Status(); st.Acked != 1 || st.State != StateClosed {
		t.Fatalf("status after Close: %+v", st)
	}
}

// A hub error on consumer creation (no such stream) is reported and
// retried with backoff; the consumer asked for is durable, explicit-ack,
// unlimited redelivery, filtered.
func TestDownlinkReportsBindErrors(t *testing.T) {
	hub := newScriptHub()
	hub.createAnswer = `{"type":"io.nats.jetstream.api.v1.consumer_create_response","error":{"code":404,"err_code":10059,"description":"stream not found"}}`
	local := &recordLocal{delivered: make(chan Msg, 1)}
	d, err := New(hub, local, Config{Name: "cmds", Stream: "CMDS", Durable: "gw_cmds", FilterSubjects: []string{"cmd.site1.>"},
		AckWait: 3 * time.Second, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hub.d = d
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	create := recvOn(t, hub.creates, "consumer create")
	want := `{"stream_name":"CMDS","config":{"durable_name":"gw_cmds","deliver_policy":"all","ack_policy":"explicit",` +
		`"ack_wait":3000000000,"max_deliver":-1,"filter_subject":"cmd.site1.\u003e","replay_policy":"instant","max_ack_pending":1}}`
	if create.subject != "$JS.hub.API.CONSUMER.CREATE.CMDS.gw_cmds" || create.body != want {
		t.Fatalf("create %s\n%s\nwant\n%s", create.subject, create.body, want)
	}
	recvOn(t, hub.creates, "a second attempt")
	st := d.Status()
	if !strings.Contains(st.LastError, "hub error 404 (10059): stream not found") || st.Pulls != 0 {
		t.Fatalf("status %+v", st)
	}
}

// waitStatus waits until cond holds for d's Status (Downlink.Wait),
// failing after waitTimeout.
func waitStatus(t *testing.T, d *Downlink, cond func(Status) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := d.Wait(ctx, cond); err != nil {
		t.Fatalf("status never reached the condition (%v): %+v", err, d.Status())
	}
}

func TestParseAck(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  ackMeta
		ok    bool
	}{
		{"$JS.ACK.S.C.2.10.11.1700000000000000000.5", ackMeta{delivered: 2, streamSeq: 10, consumerSeq: 11, pending: 5}, true},
		{"$JS.ACK.hub.ACCHASH.S.C.1.3.4.1700000000000000000.0", ackMeta{delivered: 1, streamSeq: 3, consumerSeq: 4}, true},
		{"$JS.ACK.hub.ACCHASH.S.C.1.3.4.1700000000000000000.0.extra", ackMeta{delivered: 1, streamSeq: 3, consumerSeq: 4}, true},
		{"$JS.ACK.S.C.x.10.11.1.5", ackMeta{}, false},
		{"$JS.ACK.S.C.1", ackMeta{}, false},
	} {
		got, ok := parseAck(tc.reply)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseAck(%q) = %+v, %v; want %+v, %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStatusLine(t *testing.T) {
	for hdr, want := range map[string]string{
		"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\n\r\n": "408 Request Timeout",
		"NATS/1.0 100 Idle Heartbeat\r\n\r\n":                              "100 Idle Heartbeat",
		"NATS/1.0\r\nFoo: bar\r\n\r\n":                                     "0 ",
		"":                                                                 "0 ",
	} {
		code, desc := status([]byte(hdr))
		if got := fmt.Sprintf("%d %s", code, desc); got != want {
			t.Errorf("status(%q) = %q, want %q", hdr, got, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	hub, local := newScriptHub(), &recordLocal{}
	for _, cfg := range []Config{
		{Stream: "S", Durable: "D"},
		{Name: "n", Stream: "S.x", Durable: "D"},
		{Name: "n", Stream: "S", Durable: ""},
		{Name: "n", Stream: "S", Durable: "D", Domain: "a b"},
	} {
		if _, err := New(hub, local, cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
	d, err := New(hub, local, Config{Name: "n", Stream: "S", Durable: "D", HubPrefix: "cmd.site1.", LocalPrefix: "local."})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"cmd.site1.door": "local.door", "other.x": "local.other.x", "cmd.site1.": "local.cmd.site1."} {
		if got := d.LocalSubject(in); got != want {
			t.Errorf("LocalSubject(%q) = %q, want %q", in, got, want)
		}
	}
}
