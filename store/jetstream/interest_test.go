package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// awaitConsumer waits until cond holds for the named consumer, under its
// lock.
func awaitConsumer(t *testing.T, env *testEnv, stream, name, what string, cond func(c *consumer) bool) *consumer {
	t.Helper()
	ctx := testCtx(t)
	for {
		if s := env.eng.lookup(stream); s != nil {
			if c := s.lookupConsumer(name); c != nil {
				c.mu.Lock()
				ok := cond(c)
				c.mu.Unlock()
				if ok {
					return c
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// requireIdle fails unless a step of c, a push consumer without interest,
// publishes nothing and asks for no wake-up: its pump sleeps until a
// subscription change kicks it.
func requireIdle(t *testing.T, c *consumer) {
	t.Helper()
	st := c.step(time.Now())
	if !st.wake.IsZero() || st.more || len(st.out) != 0 {
		t.Fatalf("idle push consumer step: wake in %v, more %v, %d messages", time.Until(st.wake), st.more, len(st.out))
	}
}

// TestPushInterestEventDriven: a push consumer whose deliver subject has
// no interest sets no timer; a subscription wakes it and delivery starts
// at once; the subscriber leaving is noticed without a message or
// heartbeat; the same holds for a deliver_group, whose queue members
// share the messages and whose interest a plain subscriber is not.
func TestPushInterestEventDriven(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	if !env.eng.pushes.watching {
		t.Fatal("the test bus reports no interest changes")
	}
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s", 3)
	js, err := env.nc.JetStream()
	require.NoError(t, err)
	_, err = js.AddConsumer("S", &nats.ConsumerConfig{Durable: "IDLE", DeliverSubject: "idle.out", AckPolicy: nats.AckNonePolicy})
	require.NoError(t, err)
	noInterest := func(c *consumer) bool { return !c.active && !c.inactiveSince.IsZero() }
	c := awaitConsumer(t, env, "S", "IDLE", "the consumer to find no interest", noInterest)
	requireIdle(t, c)

	// A wildcard covering the deliver subject is interest too.
	nc, _ := env.newClient()
	subscribed := time.Now()
	sub, err := nc.SubscribeSync("idle.*")
	require.NoError(t, err)
	for i := range 3 {
		m, err := sub.NextMsg(10 * time.Second)
		require.NoError(t, err)
		require.Equal(t, string(m.Data), string(rune('0'+i)))
	}
	t.Logf("three deliveries %v after subscribing", time.Since(subscribed))
	require.NoError(t, sub.Unsubscribe())
	require.NoError(t, nc.Flush())
	awaitConsumer(t, env, "S", "IDLE", "the unsubscribe to be noticed", noInterest)
	requireIdle(t, c)
	publishN(t, env.js, "s", 1)
	awaitConsumer(t, env, "S", "IDLE", "the new message to be counted", func(c *consumer) bool { return c.numPending == 1 })
	requireIdle(t, c)
	sub, err = nc.SubscribeSync("idle.out")
	require.NoError(t, err)
	m, err := sub.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, string(m.Data), "0")

	// deliver_group: queue members share the deliveries.
	_, err = js.AddConsumer("S", &nats.ConsumerConfig{Durable: "Q", DeliverSubject: "q.out", DeliverGroup: "workers", AckPolicy: nats.AckNonePolicy})
	require.NoError(t, err)
	q := awaitConsumer(t, env, "S", "Q", "the queue consumer to find no interest", noInterest)
	requireIdle(t, q)
	// A plain subscriber is not the group's interest (as on nats-server):
	// the consumer stays idle and unbound.
	plain, err := nc.SubscribeSync("q.out")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	requireIdle(t, q)
	qi, err := js.ConsumerInfo("S", "Q")
	require.NoError(t, err)
	if qi.PushBound {
		t.Fatal("a plain subscriber binds a deliver_group consumer")
	}
	require.NoError(t, plain.Unsubscribe())
	got := make(chan string, 16)
	var members []*nats.Subscription
	for range 2 {
		qs, err := nc.QueueSubscribe("q.out", "workers", func(m *nats.Msg) { got <- string(m.Data) })
		require.NoError(t, err)
		members = append(members, qs)
	}
	require.NoError(t, nc.Flush())
	publishN(t, env.js, "s", 4)
	seen := map[string]int{}
	for range 8 {
		select {
		case d := <-got:
			seen[d]++
		case <-ctx.Done():
			t.Fatalf("queue deliveries: have %v", seen)
		}
	}
	// Stream messages 0,1,2,0 then 0..3: each delivered once.
	require.Equal(t, seen["0"], 3)
	require.Equal(t, seen["1"], 2)
	require.Equal(t, seen["3"], 1)
	for _, qs := range members {
		require.NoError(t, qs.Unsubscribe())
	}
	require.NoError(t, nc.Flush())
	awaitConsumer(t, env, "S", "Q", "the queue group to leave", noInterest)
	requireIdle(t, q)
	publishN(t, env.js, "s", 1)
	qs, err := nc.QueueSubscribe("q.out", "workers", func(m *nats.Msg) { got <- string(m.Data) })
	require.NoError(t, err)
	defer qs.Unsubscribe()
	select {
	case d := <-got:
		require.Equal(t, d, "0")
	case <-ctx.Done():
		t.Fatal("no delivery after the queue group came back")
	}
	select {
	case d := <-got:
		t.Fatalf("extra delivery %q", d)
	default:
	}
}
