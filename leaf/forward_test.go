package leaf

import (
	"net"
	"testing"
	"time"
)

// newTestSession returns a registered-looking session over a pipe, for
// exercising the forwarding path without a hub.
func newTestSession(t *testing.T) *session {
	t.Helper()
	cfg := Config{URLs: []string{"nats-leaf://hub"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := New(cfg, newFakeLocal(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	s := newSession(l, l.remotes[0], ours, time.Now())
	s.perms.Store(newPerms(&l.cfg, nil, nil))
	s.headers = true
	return s
}

func TestForwardOnce(t *testing.T) {
	s := newTestSession(t)
	for _, e := range []struct{ subj, queue string }{{"t.>", ""}, {"t.*", ""}, {"t.a", "workers"}, {"t.a", "local"}} {
		if _, err := s.hub.add(e.subj, e.queue, 1); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.link.localQueues.Insert("t.*", "local", struct{}{})
	m := Msg{Subject: []byte("t.a"), Reply: []byte("_INBOX.1"), Header: []byte("NATS/1.0\r\nK: v\r\n\r\n"), Data: []byte("hi")}
	// Every matching pattern's handler sees the message; one sends it,
	// naming only the queue group without a local member.
	for _, pattern := range []string{"t.>", "t.*", "t.a"} {
		s.forward(pattern, m)
	}
	want := "HMSG t.a + _INBOX.1 workers 18 20\r\nNATS/1.0\r\nK: v\r\n\r\nhi\r\n"
	if got := string(s.out); got != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
	// Denied subjects never leave.
	s.out = s.out[:0]
	if _, err := s.hub.add("$KV.>", "", 0); err != nil {
		t.Fatal(err)
	}
	s.forward("$KV.>", Msg{Subject: []byte("$KV.b.k"), Data: []byte("x")})
	if len(s.out) != 0 {
		t.Fatalf("sent %q", s.out)
	}
}

// TestForwardAllocs budgets the hot path: a local message matching cached
// hub interest is copied into the outbound buffer without allocating.
func TestForwardAllocs(t *testing.T) {
	s := newTestSession(t)
	if _, err := s.hub.add("telemetry.>", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.hub.add("telemetry.*", "workers", 1); err != nil {
		t.Fatal(err)
	}
	m := Msg{Subject: []byte("telemetry.temp"), Data: []byte(`{"c":21.5}`)}
	s.forward("telemetry.*", m) // warm the match caches and the buffer
	allocs := testing.AllocsPerRun(200, func() {
		s.out = s.out[:0]
		s.forward("telemetry.*", m)
		s.forward("telemetry.>", m)
	})
	if allocs != 0 {
		t.Fatalf("forward allocates %.1f times per message", allocs)
	}
}
