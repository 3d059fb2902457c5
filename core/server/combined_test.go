package server_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestInProcessCombined: a combined connection gets each message once for
// all its matching subscriptions, with the queue groups in which its
// member was chosen; other queue members are preferred; its own no-echo
// publishes skip it.
func TestInProcessCombined(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	var mu sync.Mutex
	var got []string
	leaf := s.InProcessCombined("", func(m server.Msg, plain bool, queues []string) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %v %v", m.Subject, plain, queues))
		mu.Unlock()
	})
	leaf.SetNoEcho()
	t.Cleanup(leaf.Close)
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
	for _, sub := range [][2]string{{"job", ""}, {"job.>", ""}, {"job", "q"}, {"job", "q"}, {"job", "r"}} {
		_, err := leaf.Subscribe(sub[0], sub[1], nil)
		require.NoError(t, err)
	}

	pub := s.InProcess("")
	t.Cleanup(pub.Close)
	if n := pub.Publish("job", "", nil, []byte("x")); n != 3 {
		t.Fatalf("%d deliveries, want 3 (plain, q, r)", n)
	}
	if g := take(); !slices.Equal(g, []string{"job true [q r]"}) {
		t.Fatalf("combined handler got %q", g)
	}

	// A local member of q is preferred over the combined one.
	var local []string
	_, err := pub.Subscribe("job", "q", func(m server.Msg) { local = append(local, string(m.Data)) })
	require.NoError(t, err)
	for range 20 {
		pub.Publish("job", "", nil, []byte("y"))
	}
	if len(local) != 20 {
		t.Fatalf("the local member got %d of 20", len(local))
	}
	for _, g := range take() {
		if g != "job true [r]" {
			t.Fatalf("combined handler got %q", g)
		}
	}

	// PublishQueues names the groups; the connection's own publish skips it.
	pub.PublishQueues("job", "job", "", [][]byte{[]byte("r")}, nil, []byte("z"))
	if g := take(); !slices.Equal(g, []string{"job true [r]"}) {
		t.Fatalf("combined handler got %q", g)
	}
	leaf.Publish("job", "", nil, []byte("echo"))
	if g := take(); len(g) != 0 {
		t.Fatalf("no-echo combined connection got its own message: %q", g)
	}
}
