package downlink

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// watchHub is a scriptHub that reports link losses (LinkWatcher), answers
// consumer resets, and fails its first readyFails WaitReady calls.
type watchHub struct {
	*scriptHub
	resets chan published

	mu         sync.Mutex
	lost       chan struct{} // closed when the current connection drops
	readyFails int
}

var _ LinkWatcher = (*watchHub)(nil)

func newWatchHub() *watchHub {
	return &watchHub{scriptHub: newScriptHub(), resets: make(chan published, 10), lost: make(chan struct{})}
}

func (h *watchHub) WaitReady(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readyFails > 0 {
		h.readyFails--
		return errors.New("hub unreachable")
	}
	return nil
}

func (h *watchHub) Lost(ctx context.Context) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// drop ends the current connection; the next one is up at once.
func (h *watchHub) drop() {
	h.mu.Lock()
	close(h.lost)
	h.lost = make(chan struct{})
	h.mu.Unlock()
}

func (h *watchHub) Publish(subject, reply string, hdr, data []byte) error {
	if strings.HasPrefix(subject, "$JS.hub.API.CONSUMER.RESET.") {
		h.resets <- published{subject, reply, string(data)}
		h.d.HandleMsg(reply, "", nil, []byte(`{"type":"io.nats.jetstream.api.v1.consumer_reset_response","reset_seq":5}`))
		return nil
	}
	return h.scriptHub.Publish(subject, reply, hdr, data)
}

func startWatchDownlink(t *testing.T, hub *watchHub, cfg Config) (*Downlink, *recordLocal) {
	t.Helper()
	local := &recordLocal{fail: map[uint64]bool{}, delivered: make(chan Msg, 100)}
	cfg.Name, cfg.Stream, cfg.Durable = "cmds", "CMDS", "gw_cmds"
	d, err := New(hub, local, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hub.d = d
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, local
}

// When the Hub reports the link lost, the session ends at once, not two
// heartbeats later, and the new one asks the hub to resend the message it
// has outstanding (max ack pending 1), instead of leaving it to the ack
// wait.
func TestDownlinkRebindsAtOnceWhenLinkLost(t *testing.T) {
	hub := newWatchHub()
	hub.autoConfirm = true
	d, local := startWatchDownlink(t, hub, Config{Expires: 30 * time.Second})
	t.Cleanup(func() { _ = d.Close() })
	recvOn(t, hub.creates, "consumer create")
	recvOn(t, hub.pulls, "first pull")
	hub.send(4, 1)
	recvOn(t, local.delivered, "delivery of 4")
	// Seq 5 was sent when the link dropped, and lost with it.
	hub.createAnswer = `{"num_pending":0,"num_ack_pending":1,"ack_floor":{"stream_seq":4}}`
	dropped := time.Now()
	hub.drop()
	recvOn(t, hub.creates, "the consumer bound again")
	if took := time.Since(dropped); took > 5*time.Second {
		t.Fatalf("bound again %v after the drop: the heartbeat, not the drop, ended the session", took)
	}
	r := recvOn(t, hub.resets, "a consumer reset")
	if r.subject != "$JS.hub.API.CONSUMER.RESET.CMDS.gw_cmds" || r.body != "{}" || !strings.HasPrefix(r.reply, d.InboxPrefix()) {
		t.Fatalf("reset %+v", r)
	}
	recvOn(t, hub.pulls, "the pull of the new session")
	hub.send(5, 1) // the delivery count starts over after a reset
	if m := recvOn(t, local.delivered, "delivery of 5"); m.Seq != 5 {
		t.Fatalf("delivered %d", m.Seq)
	}
	if st := d.Status(); st.Sessions != 2 || st.Resends != 1 || !strings.Contains(st.LastError, "connection to the hub dropped") {
		t.Fatalf("status %+v", st)
	}
}

// With several messages outstanding a reset would send acked ones again,
// so the downlink leaves lost ones to the ack wait.
func TestDownlinkNoResetWithMaxAckPending(t *testing.T) {
	hub := newWatchHub()
	hub.createAnswer = `{"num_pending":0,"num_ack_pending":3,"ack_floor":{"stream_seq":4}}`
	d, _ := startWatchDownlink(t, hub, Config{MaxAckPending: 8})
	t.Cleanup(func() { _ = d.Close() })
	recvOn(t, hub.creates, "consumer create")
	recvOn(t, hub.pulls, "first pull")
	hub.drop()
	recvOn(t, hub.creates, "the consumer bound again")
	recvOn(t, hub.pulls, "the pull of the new session")
	if len(hub.resets) != 0 || d.Status().Resends != 0 {
		t.Fatalf("reset with max ack pending 8: %d", len(hub.resets))
	}
}

// A long outage in which WaitReady fails again and again does not
// stretch the backoff: the session starts soon after the hub is back.
func TestDownlinkWaitReadyFailuresDoNotStretchBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := newWatchHub()
		hub.readyFails = 20
		start := time.Now()
		d, _ := startWatchDownlink(t, hub, Config{RetryMin: 100 * time.Millisecond, RetryMax: 10 * time.Second})
		defer d.Close()
		<-hub.creates
		// 20 waits of RetryMin at most; growing backoffs would take
		// minutes.
		if took := time.Since(start); took > 20*100*time.Millisecond {
			t.Errorf("bound %v after start", took)
		}
	})
}
