package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStartLogsReadyLast(t *testing.T) {
	// The hub is a closed port: the link keeps trying in the background,
	// which is "started" as far as Start is concerned.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hub := ln.Addr().String()
	require.NoError(t, ln.Close())

	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	c := gatewayConfig(t, "http_port: -1\njetstream: {enabled: true}\n"+
		"leafnodes: {remotes: [{url: 'nats-leaf://"+hub+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n")
	startConfig(t, c, Flags{Logger: logger})

	// Start has returned: everything it logs is in the buffer.
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		msgs = append(msgs, rec.Msg)
	}
	index := func(msg string) int {
		for i, m := range msgs {
			if m == msg {
				return i
			}
		}
		t.Fatalf("no %q in the start-up log %q", msg, msgs)
		return -1
	}
	ready := index("ready for clients")
	for _, before := range []string{"listening for client connections", "serving monitoring", "jetstream enabled", "uplink started", "leafnode remote connecting"} {
		if i := index(before); i > ready {
			t.Errorf("%q logged after \"ready for clients\": %q", before, msgs)
		}
	}
	if n := strings.Count(strings.Join(msgs, "\n"), "ready for clients"); n != 1 {
		t.Errorf("\"ready for clients\" logged %d times", n)
	}
}
