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
	"github.com/leafbox/leafbox/store/jsapi"
)

// errAck answers p with a JetStream error PubAck.
func errAck(ob *Outbox, p sent, code, errCode int, desc string) {
	ob.HandleReply(p.reply, fmt.Appendf(nil, `{"error":{"code":%d,"err_code":%d,"description":%q}}`, code, errCode, desc))
}

func TestClassifyAPIError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		errCode int
		reason  string // "" is transient
	}{
		{"expected stream mismatch", 10060, ReasonWrongStream},
		{"message too large for the stream", 10054, ReasonTooLarge},
		{"header too large", 10097, ReasonTooLarge},
		{"wrong last sequence", 10071, ReasonHubError},
		{"wrong last msg id", 10070, ReasonHubError},
		{"sealed stream", 10109, ReasonHubError},
		{"ttl disabled", 10166, ReasonHubError},
		{"cluster temporarily unavailable (leader election)", 10008, ""},
		{"insufficient resources", 10023, ""},
		{"JetStream not enabled (hub restarting)", 10076, ""},
		{"JetStream not enabled for account", 10039, ""},
		{"store failed (full stream, discard new)", 10077, ""},
		{"stream offline", 10118, ""},
		{"duplicate in process", 10158, ""},
		{"temporarily unavailable", 10163, ""},
		{"unknown code", 19999, ""},
		{"no err_code", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &jsapi.APIError{Code: 400, ErrCode: uint16(tc.errCode), Description: tc.name}
			err := classifyAPIError(e, e)
			var rf *RefusedError
			got := ""
			if errors.As(err, &rf) {
				got = rf.Reason
			}
			if got != tc.reason {
				t.Fatalf("err_code %d: reason %q, want %q", tc.errCode, got, tc.reason)
			}
		})
	}
}

func TestParseStreamNames(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string // "refused", "ok" or "transient"
	}{
		{"none", `{"type":"io.nats.jetstream.api.v1.stream_names_response","total":0,"offset":0,"limit":1024,"streams":null}`, "refused"},
		{"one", `{"type":"io.nats.jetstream.api.v1.stream_names_response","total":1,"offset":0,"limit":1024,"streams":["S"]}`, "ok"},
		{"api error", `{"type":"io.nats.jetstream.api.v1.stream_names_response","error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`, "transient"},
		{"not a names response", `{}`, "transient"},
		{"garbage", `nope`, "transient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseStreamNames("site.x", []byte(tc.data))
			var rf *RefusedError
			got := "transient"
			switch {
			case err == nil:
				got = "ok"
			case errors.As(err, &rf) && rf.Reason == ReasonNoStream:
				got = "refused"
			}
			if got != tc.want {
				t.Fatalf("%s: %v (%s), want %s", tc.data, err, got, tc.want)
			}
		})
	}
}

// newDLOutbox returns a started outbox over a memory stream with a
// memory dead-letter stream.
func newDLOutbox(t *testing.T, hub Hub, cfg Config) (*Outbox, store.Stream, store.Stream) {
	t.Helper()
	s := newMem(t, store.Config{})
	dl := newMem(t, store.Config{})
	cfg.DeadLetter = dl
	if cfg.RetryMin == 0 {
		cfg.RetryMin, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	}
	return newOutbox(t, s, hub, cfg), s, dl
}

// TestPermanentRefusalDeadLetters: a message the hub refuses with
// 10060 is retried DeadLetterAfter times, then dead-lettered with the
// hub's error in its headers, and the messages after it are forwarded
// in order.
func TestPermanentRefusalDeadLetters(t *testing.T) {
	hub := newFakeHub(true)
	ob, _, dl := newDLOutbox(t, hub, Config{Stream: "S", Window: 1, DeadLetterAfter: 2})
	capture(t, ob, 3, 0)
	require.NoError(t, ob.Start(context.Background()))
	ack(ob, hub.next(t), "S") // telemetry.0
	for range 2 {
		p := hub.next(t)
		if p.subject != "telemetry.1" {
			t.Fatalf("sent %q, want the refused telemetry.1 again", p.subject)
		}
		errAck(ob, p, 400, 10060, "expected stream does not match")
	}
	p := hub.next(t)
	if p.subject != "telemetry.2" {
		t.Fatalf("after the dead letter: sent %q, want telemetry.2", p.subject)
	}
	ack(ob, p, "S")
	waitStatus(t, ob, "backlog drained", func(st Status) bool { return st.BacklogMsgs == 0 })
	st := ob.Status()
	if st.Acked != 2 || st.DeadLettered != 1 || st.DeadLetterMsgs != 1 || st.Refusals != 2 ||
		st.Dropped[DropRejectedByHub] != 1 || st.Dropped[DropLimits] != 0 {
		t.Fatalf("status %+v", st)
	}
	if !strings.Contains(st.LastRejection, "expected stream does not match") || st.LastRejectionAt.IsZero() {
		t.Fatalf("last rejection %q at %v", st.LastRejection, st.LastRejectionAt)
	}
	var sm store.Msg
	m, err := dl.LoadNext("", 0, &sm)
	require.NoError(t, err)
	if m.Subject != "telemetry.1" || string(m.Data) != "m1" {
		t.Fatalf("dead letter %q %q", m.Subject, m.Data)
	}
	for name, want := range map[string]string{
		HeaderDeadReason: ReasonWrongStream, HeaderDeadSeq: "2", HeaderDeadRefusals: "2", HeaderMsgID: ob.IDPrefix() + "2",
	} {
		if v, _ := headerValue(m.Header, name); v != want {
			t.Errorf("%s: %q, want %q (header %q)", name, v, want, m.Header)
		}
	}
	if v, _ := headerValue(m.Header, HeaderDeadError); !strings.Contains(v, "10060") {
		t.Errorf("%s: %q", HeaderDeadError, v)
	}
	list, err := ob.DeadLetters(0, 0)
	require.NoError(t, err)
	if len(list) != 1 || list[0].OutboxSeq != 2 || list[0].Reason != ReasonWrongStream || list[0].Time.IsZero() || list[0].MsgID != ob.IDPrefix()+"2" {
		t.Fatalf("list %+v", list)
	}
}

// TestTransientErrorsNotDeadLettered: transient PubAck errors, a
// missing PubAck and a failed publish are retried in order, however
// often, and nothing is dead-lettered.
func TestTransientErrorsNotDeadLettered(t *testing.T) {
	hub := newFakeHub(true)
	ob, _, dl := newDLOutbox(t, hub, Config{Stream: "S", Window: 1, DeadLetterAfter: 1, AckTimeout: 20 * time.Millisecond})
	capture(t, ob, 2, 0)
	require.NoError(t, ob.Start(context.Background()))
	errAck(ob, hub.next(t), 503, 10008, "JetStream system temporarily unavailable")
	errAck(ob, hub.next(t), 503, 10077, "maximum messages exceeded")
	hub.next(t) // no PubAck: times out
	hub.fail <- fmt.Errorf("link down: %w", ErrNoResponders)
	p := hub.next(t)
	if p.subject != "telemetry.0" {
		t.Fatalf("sent %q before telemetry.0 was acked", p.subject)
	}
	ack(ob, p, "S")
	ack(ob, hub.next(t), "S")
	waitStatus(t, ob, "backlog drained", func(st Status) bool { return st.BacklogMsgs == 0 })
	if st := ob.Status(); st.DeadLettered != 0 || dl.State().Msgs != 0 || st.Refusals != 0 || st.Acked != 2 {
		t.Fatalf("status %+v", st)
	}
}

// refusingHub refuses every publish to one subject before sending.
type refusingHub struct {
	*fakeHub
	subject string
	err     error
}

func (h *refusingHub) Publish(subject, reply string, hdr, data []byte) error {
	if subject == h.subject {
		return h.err
	}
	return h.fakeHub.Publish(subject, reply, hdr, data)
}

// TestPublishRefusalDeadLetters: a refusal the Hub knows before sending
// (a message above the hub's max_payload) dead-letters the message and
// the round goes on with the next.
func TestPublishRefusalDeadLetters(t *testing.T) {
	hub := &refusingHub{fakeHub: newFakeHub(true), subject: "telemetry.0",
		err: Refused(ReasonTooLarge, errors.New("leaf: message exceeds the hub's max_payload"))}
	ob, _, _ := newDLOutbox(t, hub, Config{})
	capture(t, ob, 2, 0)
	require.NoError(t, ob.Start(context.Background()))
	p := hub.next(t)
	if p.subject != "telemetry.1" {
		t.Fatalf("sent %q", p.subject)
	}
	ack(ob, p, "S")
	waitStatus(t, ob, "dead-lettered", func(st Status) bool { return st.DeadLettered == 1 })
	list, err := ob.DeadLetters(0, 0)
	require.NoError(t, err)
	if len(list) != 1 || list[0].Reason != ReasonTooLarge || list[0].Refusals != DefaultDeadLetterAfter {
		t.Fatalf("list %+v", list)
	}
}

// lookupHub has no interest in one subject and answers stream lookups
// with the given names response.
type lookupHub struct {
	*fakeHub
	ob      *Outbox
	subject string
	answer  string // "" answers nothing
	lookups chan string
}

func (h *lookupHub) Publish(subject, reply string, hdr, data []byte) error {
	switch {
	case strings.HasPrefix(subject, "$JS.hub.API.STREAM.NAMES"):
		h.lookups <- string(data)
		if h.answer != "" {
			go h.ob.HandleReply(reply, []byte(h.answer))
		}
		return nil
	case subject == h.subject:
		return fmt.Errorf("leaf: no interest: %w", ErrNoResponders)
	}
	return h.fakeHub.Publish(subject, reply, hdr, data)
}

// TestNoStreamConfirmedByLookup: no responders for a subject is
// permanent only when the hub's JetStream says no stream captures it.
func TestNoStreamConfirmedByLookup(t *testing.T) {
	t.Run("no stream", func(t *testing.T) {
		hub := &lookupHub{fakeHub: newFakeHub(true), subject: "telemetry.0", lookups: make(chan string, 100),
			answer: `{"type":"io.nats.jetstream.api.v1.stream_names_response","total":0,"streams":null}`}
		ob, _, _ := newDLOutbox(t, hub, Config{HubDomain: "hub"})
		hub.ob = ob
		capture(t, ob, 2, 0)
		require.NoError(t, ob.Start(context.Background()))
		ack(ob, hub.next(t), "S")
		waitStatus(t, ob, "dead-lettered", func(st Status) bool { return st.DeadLettered == 1 })
		if q := <-hub.lookups; q != `{"subject":"telemetry.0"}` {
			t.Fatalf("lookup %s", q)
		}
		list, err := ob.DeadLetters(0, 0)
		require.NoError(t, err)
		if len(list) != 1 || list[0].Reason != ReasonNoStream || list[0].Subject != "telemetry.0" {
			t.Fatalf("list %+v", list)
		}
	})
	for _, answer := range []string{
		`{"type":"io.nats.jetstream.api.v1.stream_names_response","total":1,"streams":["S"]}`,
		`{"type":"io.nats.jetstream.api.v1.stream_names_response","error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`,
		"", // no answer
	} {
		t.Run("transient "+answer, func(t *testing.T) {
			hub := &lookupHub{fakeHub: newFakeHub(true), subject: "telemetry.0", lookups: make(chan string, 100), answer: answer}
			ob, _, _ := newDLOutbox(t, hub, Config{HubDomain: "hub", DeadLetterAfter: 1})
			hub.ob = ob
			capture(t, ob, 2, 0)
			require.NoError(t, ob.Start(context.Background()))
			for range 2 {
				<-hub.lookups
			}
			hub.requireNone(t) // telemetry.1 waits behind telemetry.0
			if st := ob.Status(); st.DeadLettered != 0 || st.Refusals != 0 {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// TestUnexpectedDuplicate: a duplicate PubAck for a message sent for
// the first time is counted, not acked, and dead-lettered as
// duplicate_id; requeued, it is sent with a new Nats-Msg-Id. A duplicate
// after a resend stays an ordinary ack.
func TestUnexpectedDuplicate(t *testing.T) {
	hub := newFakeHub(true)
	ob, _, _ := newDLOutbox(t, hub, Config{Stream: "S", Window: 1, AckTimeout: 30 * time.Millisecond})
	capture(t, ob, 2, 0)
	require.NoError(t, ob.Start(context.Background()))
	p := hub.next(t) // telemetry.0, first send
	ackSeq(ob, p, "S", 7, true)
	p = hub.next(t)
	if p.subject != "telemetry.1" {
		t.Fatalf("sent %q", p.subject)
	}
	// No PubAck: the round times out and telemetry.1 is sent again; its
	// duplicate PubAck then is ordinary.
	p = hub.next(t)
	if p.subject != "telemetry.1" {
		t.Fatalf("resent %q", p.subject)
	}
	ackSeq(ob, p, "S", 8, true)
	waitStatus(t, ob, "backlog drained", func(st Status) bool { return st.BacklogMsgs == 0 })
	st := ob.Status()
	if st.HubDuplicatesUnexpected != 1 || st.Acked != 1 || st.DeadLettered != 1 {
		t.Fatalf("status %+v", st)
	}
	list, err := ob.DeadLetters(0, 0)
	require.NoError(t, err)
	if len(list) != 1 || list[0].Reason != ReasonDuplicateID || list[0].MsgID != ob.IDPrefix()+"1" {
		t.Fatalf("list %+v", list)
	}
	n, err := ob.Requeue([]uint64{list[0].Seq})
	if err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	p = hub.next(t)
	id, _ := headerValue(p.hdr, HeaderMsgID)
	if p.subject != "telemetry.0" || id == list[0].MsgID || !strings.HasPrefix(id, ob.IDPrefix()) {
		t.Fatalf("requeued: sent %q with id %q, want telemetry.0 with a new id after %s", p.subject, id, list[0].MsgID)
	}
	if _, ok := headerValue(p.hdr, HeaderDeadReason); ok {
		t.Fatalf("requeued message still carries %s: %q", HeaderDeadReason, p.hdr)
	}
	ackSeq(ob, p, "S", 9, false)
	waitStatus(t, ob, "requeued message acked", func(st Status) bool { return st.Acked == 2 })
	if st := ob.Status(); st.Requeued != 1 || st.DeadLetterMsgs != 0 || st.Dropped[DropLimits] != 0 {
		t.Fatalf("status after requeue %+v", st)
	}
}

// TestRequeueKeepsOriginalID: a message dead-lettered for another
// reason is sent again with the Nats-Msg-Id it was first sent with;
// requeueing a sequence that is not dead-lettered is an error.
func TestRequeueKeepsOriginalID(t *testing.T) {
	hub := newFakeHub(true)
	ob, _, _ := newDLOutbox(t, hub, Config{Stream: "S", DeadLetterAfter: 1})
	capture(t, ob, 1, 0)
	require.NoError(t, ob.Start(context.Background()))
	errAck(ob, hub.next(t), 400, 10060, "expected stream does not match")
	waitStatus(t, ob, "dead-lettered", func(st Status) bool { return st.DeadLettered == 1 })
	if _, err := ob.Requeue([]uint64{99}); err == nil {
		t.Fatal("requeue of an unknown sequence succeeded")
	}
	n, err := ob.RequeueAll()
	if err != nil || n != 1 {
		t.Fatalf("requeue all: %d %v", n, err)
	}
	p := hub.next(t)
	if id, _ := headerValue(p.hdr, HeaderMsgID); id != ob.IDPrefix()+"1" {
		t.Fatalf("requeued with id %q, want the original %s1", id, ob.IDPrefix())
	}
	if strings.Count(string(p.hdr), HeaderMsgID) != 1 {
		t.Fatalf("header %q", p.hdr)
	}
	ack(ob, p, "S")
	waitStatus(t, ob, "acked", func(st Status) bool { return st.Acked == 1 })
}

// TestMissingPubAckConfirmedByLookup: a message the hub receives (a
// plain subscriber has interest) but no stream stores gets no PubAck;
// the lookup after the timeout finds no stream and dead-letters it.
func TestMissingPubAckConfirmedByLookup(t *testing.T) {
	hub := &lookupHub{fakeHub: newFakeHub(true), subject: "-", lookups: make(chan string, 100),
		answer: `{"type":"io.nats.jetstream.api.v1.stream_names_response","total":0,"streams":null}`}
	ob, _, _ := newDLOutbox(t, hub, Config{HubDomain: "hub", DeadLetterAfter: 1, Window: 1, AckTimeout: 20 * time.Millisecond})
	hub.ob = ob
	capture(t, ob, 2, 0)
	require.NoError(t, ob.Start(context.Background()))
	if p := hub.next(t); p.subject != "telemetry.0" {
		t.Fatalf("sent %q", p.subject)
	}
	if q := <-hub.lookups; q != `{"subject":"telemetry.0"}` {
		t.Fatalf("lookup %s", q)
	}
	p := hub.next(t)
	if p.subject != "telemetry.1" {
		t.Fatalf("after the dead letter: sent %q", p.subject)
	}
	ack(ob, p, "S")
	waitStatus(t, ob, "acked", func(st Status) bool { return st.Acked == 1 })
	if st := ob.Status(); st.DeadLettered != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestDeadLetterLimitsCounted: a dead-letter stream full under its
// limits evicts its oldest entry, and Status counts it as dropped.
func TestDeadLetterLimitsCounted(t *testing.T) {
	hub := newFakeHub(true)
	s := newMem(t, store.Config{})
	dl := newMem(t, store.Config{MaxMsgs: 1})
	ob := newOutbox(t, s, hub, Config{Stream: "S", DeadLetter: dl, DeadLetterAfter: 1, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	capture(t, ob, 2, 0)
	require.NoError(t, ob.Start(context.Background()))
	for range 2 {
		errAck(ob, hub.next(t), 400, 10060, "expected stream does not match")
	}
	waitStatus(t, ob, "both dead-lettered", func(st Status) bool { return st.DeadLettered == 2 })
	if st := ob.Status(); st.DeadLetterMsgs != 1 || st.Dropped[DropDeadLetterLimits] != 1 || st.Dropped[DropLimits] != 0 {
		t.Fatalf("status %+v", st)
	}
}
