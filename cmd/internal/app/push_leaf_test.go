package app

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestPushConsumerHubInterest: a push consumer on the gateway whose
// deliver subject only a client of the nats-server hub subscribes to
// (interest that reaches the gateway over its leaf link) starts
// delivering when that subscription arrives, without polling for it,
// and is unbound once it leaves; a later subscription over the link
// wakes it again.
func TestPushConsumerHubInterest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	defer cancel()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-push"})
	a := startGateway(t, "server_name: gw1\nhttp_port: -1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	js, err := jetstream.New(gw)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	for i := range 3 {
		_, err := js.Publish(ctx, "events.door", []byte(strconv.Itoa(i)))
		require.NoError(t, err)
	}
	legacy, err := gw.JetStream()
	require.NoError(t, err)
	_, err = legacy.AddConsumer("EVENTS", &nats.ConsumerConfig{Durable: "TOHUB", DeliverSubject: "site1.events", AckPolicy: nats.AckNonePolicy})
	require.NoError(t, err)
	bound := func(want bool) {
		t.Helper()
		for {
			info, err := legacy.ConsumerInfo("EVENTS", "TOHUB")
			require.NoError(t, err)
			if info.PushBound == want {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("push_bound never became %v", want)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	bound(false)

	hc := natsConnect(t, hub.ClientURL())
	sub, err := hc.SubscribeSync("site1.events")
	require.NoError(t, err)
	for i := range 3 {
		m := nextMsg(t, sub)
		require.Equal(t, string(m.Data), strconv.Itoa(i))
		require.Equal(t, m.Subject, "events.door")
	}
	require.NoError(t, sub.Unsubscribe())
	bound(false)
	_, err = js.Publish(ctx, "events.door", []byte("3"))
	require.NoError(t, err)
	sub, err = hc.SubscribeSync("site1.events")
	require.NoError(t, err)
	require.Equal(t, string(nextMsg(t, sub).Data), "3")
}
