package app

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// threeLevels is a real nats-server hub, a leafbox App in the middle (a
// leaf of the hub that also accepts leafs) and a real nats-server leaf
// attached below it.
type threeLevels struct {
	hub, bottom *leaftest.Hub
	mid         *App
}

// startThreeLevels starts the chain and waits until both links are up.
// hubConfig and bottomConfig are extra top-level nats-server
// configuration; midConfig extra leafbox YAML.
func startThreeLevels(t *testing.T, hubConfig, midConfig, bottomConfig string) *threeLevels {
	t.Helper()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "top", Config: hubConfig})
	mid := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: mid\n%s"+
		"leafnodes: {listen: '127.0.0.1:-1', remotes: [{url: '%s'}]}\n", midConfig, hub.LeafURL()), Flags{})
	bottom := leaftest.StartHub(t, leaftest.HubOptions{Name: "bottom", Config: bottomConfig,
		Leaf: fmt.Sprintf(`remotes: [{url: "nats-leaf://%s"}]`, mid.LeafListener().Addr())})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, mid.node.Link(0).WaitConnected(ctx))
	waitLeafs(t, mid, "the bottom leaf", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 })
	return &threeLevels{hub: hub, bottom: bottom, mid: mid}
}

// sync waits until what the clients sent has crossed both links, both
// ways, and reached the clients.
func (c *threeLevels) sync(t *testing.T, conns ...*nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for range 2 {
		for _, nc := range conns {
			require.NoError(t, nc.Flush())
		}
		require.NoError(t, c.mid.node.Link(0).Flush(ctx))
		require.NoError(t, c.mid.LeafListener().Flush(ctx))
	}
	for _, nc := range conns {
		require.NoError(t, nc.Flush())
	}
}

// TestLeafQueueAcrossThreeLevels: a queue group with members on the hub
// and on a nats-server leaf attached to leafbox, which is itself the hub's
// leaf. The attached leaf's members become local queue members (one per
// unit of weight), so leafbox announces "job workers" to the hub as queue
// interest, and every message published on any level reaches exactly one
// member.
func TestLeafQueueAcrossThreeLevels(t *testing.T) {
	c := startThreeLevels(t, "", "", "")
	hubNC := natsConnect(t, c.hub.ClientURL())
	midNC := natsConnect(t, "nats://"+c.mid.Addr().String())
	bottomNC := natsConnect(t, c.bottom.ClientURL())

	hubWorker, err := hubNC.QueueSubscribeSync("job", "workers")
	require.NoError(t, err)
	var bottomWorkers []*nats.Subscription
	for range 2 {
		s, err := bottomNC.QueueSubscribeSync("job", "workers")
		require.NoError(t, err)
		bottomWorkers = append(bottomWorkers, s)
	}
	require.NoError(t, bottomNC.Flush())
	waitLeafs(t, c.mid, "LS+ job workers", hasLeafSubject("job workers", true))
	c.sync(t, hubNC, midNC, bottomNC)

	// The bottom leaf's weight 2 is two local members of "workers".
	members := 0
	for _, d := range c.mid.srv.Subscriptions("$G") {
		if d.Subject == "job" && d.Queue == "workers" {
			members++
		}
	}
	require.DeepEqual(t, members, 2)

	const n = 200
	want := make([]string, 0, 3*n)
	for i := range n {
		for level, nc := range map[string]*nats.Conn{"hub": hubNC, "mid": midNC, "bottom": bottomNC} {
			p := fmt.Sprint(level, "-", i)
			want = append(want, p)
			require.NoError(t, nc.Publish("job", []byte(p)))
		}
	}
	got := receiveAll(t, len(want), append([]*nats.Subscription{hubWorker}, bottomWorkers...)...)
	c.sync(t, hubNC, midNC, bottomNC)
	for _, s := range append([]*nats.Subscription{hubWorker}, bottomWorkers...) {
		if k, _, _ := s.Pending(); k != 0 {
			t.Fatalf("a member holds %d more messages: duplicates", k)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the members got %d messages, want each of %d once", len(got), len(want))
	}

	// Without members on the bottom leaf, the hub's member serves every
	// level.
	for _, s := range bottomWorkers {
		require.NoError(t, s.Unsubscribe())
	}
	require.NoError(t, bottomNC.Flush())
	waitLeafs(t, c.mid, "LS- job workers", hasLeafSubject("job workers", false))
	c.sync(t, hubNC, midNC, bottomNC)
	if slices.ContainsFunc(c.mid.srv.Subscriptions("$G"), func(d monitor.SubDetail) bool { return d.Queue == "workers" }) {
		t.Fatal("the bottom leaf's members outlived its LS-")
	}
	for _, nc := range []*nats.Conn{hubNC, midNC, bottomNC} {
		require.NoError(t, nc.Publish("job", []byte("last")))
	}
	receiveAll(t, 3, hubWorker)
	c.sync(t, hubNC, midNC, bottomNC)
	if k, _, _ := hubWorker.Pending(); k != 0 {
		t.Fatalf("the hub's member holds %d more messages: duplicates", k)
	}
}

// receiveAll receives n messages from subs and returns their payloads.
func receiveAll(t *testing.T, n int, subs ...*nats.Subscription) []string {
	t.Helper()
	got, extra := receiveN(n, subs...)
	if len(got) != n || extra != 0 {
		t.Fatalf("received %d messages (and %d more), want %d", len(got), extra, n)
	}
	return got
}

// receiveN receives from all of subs at once (a NextMsgWithContext per
// subscription, each in its own goroutine) until n messages have come or
// testTimeout passes, and returns their payloads in arrival order. extra
// counts the messages received beyond n before the receivers stopped.
func receiveN(n int, subs ...*nats.Subscription) (got []string, extra int) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	msgs := make(chan string)
	var wg sync.WaitGroup
	var more atomic.Int64
	for _, s := range subs {
		wg.Go(func() {
			for {
				m, err := s.NextMsgWithContext(ctx)
				if err != nil {
					return
				}
				select {
				case msgs <- string(m.Data):
				case <-ctx.Done():
					more.Add(1)
					return
				}
			}
		})
	}
	for len(got) < n {
		select {
		case m := <-msgs:
			got = append(got, m)
			continue
		case <-ctx.Done():
		}
		break
	}
	cancel()
	wg.Wait()
	return got, int(more.Load())
}
