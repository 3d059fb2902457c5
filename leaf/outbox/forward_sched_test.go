package outbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

func ackSeq(ob *Outbox, p sent, stream string, seq uint64, dup bool) {
	ob.HandleReply(p.reply, fmt.Appendf(nil, `{"stream":%q,"seq":%d,"duplicate":%t}`, stream, seq, dup))
}

// TestWatchdogRearmsStuckRound: a message reaches the stream without
// waking the forwarder (a lost signal); the watchdog notices the ready
// link with a backlog and no progress, and restarts the round.
func TestWatchdogRearmsStuckRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem(t, store.Config{})
		hub := newFakeHub(true)
		ob := newOutbox(t, s, hub, Config{AckTimeout: 50 * time.Millisecond, WatchdogAfter: 200 * time.Millisecond})
		require.NoError(t, ob.Start(context.Background()))
		synctest.Wait() // the round found nothing to send and waits
		seq, _, err := s.Store("telemetry.x", nil, []byte("lost wakeup"), 0)
		if err != nil {
			t.Fatal(err)
		}
		ob.durable.Store(seq) // what Capture does, without its wakeup
		synctest.Wait()
		hub.requireNone(t)
		start := time.Now()
		p := hub.next(t)
		if p.subject != "telemetry.x" || time.Since(start) < 150*time.Millisecond {
			t.Fatalf("forwarded %q after %v", p.subject, time.Since(start))
		}
		st := ob.Status()
		if st.WatchdogRearms != 1 || st.Retries != 1 || !strings.Contains(st.LastError, "watchdog") {
			t.Fatalf("status after the watchdog: %+v", st)
		}
		ackSeq(ob, p, "S", 1, false)
		synctest.Wait()
		if st := ob.Status(); st.Acked != 1 || st.WatchdogRearms != 1 {
			t.Fatalf("status %+v", st)
		}
		require.NoError(t, ob.Close())
	})
}

// TestStreamResetDetected: hub sequences must grow; a new ack below the
// last one, also after a restart, counts a reset and forwarding goes on.
// Duplicate acks carry the original sequence and are not counted.
func TestStreamResetDetected(t *testing.T) {
	state := filepath.Join(t.TempDir(), "up.state.json")
	s := newMem(t, store.Config{})
	hub := newFakeHub(true)
	// Captured by an earlier process, which may have sent them: a
	// duplicate PubAck is an ordinary one.
	ob := newOutbox(t, s, hub, Config{StateFile: state, Stream: "S"})
	capture(t, ob, 3, 0)
	require.NoError(t, ob.Close())
	ob = newOutbox(t, s, hub, Config{StateFile: state, Stream: "S"})
	require.NoError(t, ob.Start(context.Background()))
	ackSeq(ob, hub.next(t), "S", 10, false)
	ackSeq(ob, hub.next(t), "S", 11, false)
	ackSeq(ob, hub.next(t), "S", 5, true) // duplicate: an earlier copy's sequence
	waitStatus(t, ob, "3 acked", func(st Status) bool { return st.Acked == 3 })
	if st := ob.Status(); st.StreamResets != 0 || st.HubStream != "S" || st.HubSeq != 11 {
		t.Fatalf("status %+v", st)
	}
	require.NoError(t, ob.Close())

	// The gateway restarts; meanwhile the hub stream was deleted and
	// created again.
	hub = newFakeHub(true)
	ob = newOutbox(t, s, hub, Config{StateFile: state, Stream: "S"})
	if st := ob.Status(); st.HubSeq != 11 {
		t.Fatalf("hub sequence after restart: %d", st.HubSeq)
	}
	capture(t, ob, 2, 3)
	require.NoError(t, ob.Start(context.Background()))
	ackSeq(ob, hub.next(t), "S", 1, false)
	ackSeq(ob, hub.next(t), "S", 2, false)
	waitStatus(t, ob, "2 acked", func(st Status) bool { return st.Acked == 2 })
	if st := ob.Status(); st.StreamResets != 1 || st.HubSeq != 2 || st.BacklogMsgs != 0 {
		t.Fatalf("status after the reset: %+v", st)
	}
}

// autoAckHub acknowledges every publish at once, numbering the hub
// stream's messages.
type autoAckHub struct {
	ob  *Outbox
	seq uint64
}

func (h *autoAckHub) WaitReady(context.Context) error { return nil }

func (h *autoAckHub) Publish(_, reply string, _, _ []byte) error {
	h.seq++
	h.ob.HandleReply(reply, fmt.Appendf(nil, `{"stream":"S","seq":%d}`, h.seq))
	return nil
}

// TestRateCapDrainRateAndETA drains a backlog under a per-uplink cap in
// fake time: the cap holds, and Status reports the drain rate and an ETA
// while it drains.
func TestRateCapDrainRateAndETA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem(t, store.Config{})
		hub := &autoAckHub{}
		const rateCap = 10_000
		ob := newOutbox(t, s, hub, Config{MaxRate: rateCap})
		hub.ob = ob
		payload := make([]byte, 90)
		for range 300 {
			require.NoError(t, ob.Capture("t.x", nil, payload))
		}
		perMsg := len("t.x") + len(payload) + len("NATS/1.0\r\nNats-Msg-Id: "+ob.IDPrefix()+"100\r\n\r\n") // ±1 digit
		start := time.Now()
		require.NoError(t, ob.Start(context.Background()))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mid := ob.Status()
		if mid.BacklogMsgs == 0 || mid.RateBytes < 0.4*rateCap || mid.RateBytes > 1.05*rateCap || mid.ETA <= 0 {
			t.Fatalf("while draining: %+v", mid)
		}
		waitStatus(t, ob, "the backlog drains", func(st Status) bool { return st.BacklogMsgs == 0 })
		elapsed := time.Since(start).Seconds()
		st := ob.Status()
		got := float64(st.AckedBytes) / elapsed
		t.Logf("drained %d bytes (~%d per message) in %.2fs: %.0f B/s, EWMA %.0f B/s, ETA at 2s was %v",
			st.AckedBytes, perMsg, elapsed, got, st.RateBytes, mid.ETA)
		if got < 0.9*rateCap || got > 1.1*rateCap {
			t.Fatalf("drain rate %.0f B/s, cap %d", got, rateCap)
		}
		if st.Acked != 300 || st.MaxRate != rateCap || st.ETA != 0 {
			t.Fatalf("status %+v", st)
		}
		require.NoError(t, ob.Close())
	})
}

// TestDrainJitterDelaysBacklog: with a backlog, the first round waits a
// random delay of at most DrainJitter after the hub became ready.
func TestDrainJitterDelaysBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem(t, store.Config{})
		hub := newFakeHub(true)
		ob := newOutbox(t, s, hub, Config{DrainJitter: 10 * time.Second})
		capture(t, ob, 1, 0)
		start := time.Now()
		require.NoError(t, ob.Start(context.Background()))
		synctest.Wait()
		p := hub.next(t) // fake time runs until the delay ends
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("drain started after %v", d)
		}
		ack(ob, p, "S")
		synctest.Wait()
		require.NoError(t, ob.Close())
	})
}
