//go:build linux

package mqtt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/require"
)

// parkAfter is the tests' Config.ParkAfter: idle connections park soon.
const parkAfter = 20 * time.Millisecond

func parkQuickly(c *mqtt.Config) { c.ParkAfter = parkAfter }

// waitParked waits until n connections are parked.
func waitParked(t *testing.T, e *testEnv, n int64) {
	t.Helper()
	waitStat(t, "parked connections", func() int64 { return e.mqtt.Stats().Parked }, n)
}

// waitStat waits until get returns want.
func waitStat(t *testing.T, what string, get func() int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for get() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, get(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A parked client (no reader, no buffer) is woken by its own bytes and
// by deliveries: it publishes and receives, both MQTT versions, and
// parks again after each exchange.
func TestParkedClientPublishesAndReceives(t *testing.T) {
	e := newTestEnv(t, nil, parkQuickly)
	v5, _ := e.v5Client(t, "v5", nil)
	v5.sub(t, "park/v5", 0)
	v3 := e.v3Client(t, "v3", nil)
	v3msgs := v3Sub(t, v3, "park/v3", 0)
	nc := e.natsConn(t)
	natsSub, err := nc.SubscribeSync("park.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	for round := range 3 {
		waitParked(t, e, 2)
		for _, ci := range e.mqtt.Conns() {
			require.Equal(t, ci.Parked, true, ci.ClientID+" parked")
		}
		parks := e.mqtt.Stats().Parks
		// Parked v3 publishes to parked v5, parked v5 to parked v3.
		body := fmt.Sprintf("round %d", round)
		tok := v3.Publish("park/v5", 0, false, body)
		require.Equal(t, tok.WaitTimeout(wait), true, "publish in time")
		require.NoError(t, tok.Error())
		require.Equal(t, string(v5.next(t).Payload), body)
		require.Equal(t, string(nextNATS(t, natsSub).Data), body)
		waitParked(t, e, 2)
		pubV5(t, v5, "park/v3", 0, body)
		require.Equal(t, string(nextV3(t, v3msgs).Payload()), body)
		require.Equal(t, string(nextNATS(t, natsSub).Data), body)
		waitParked(t, e, 2)
		require.Equal(t, e.mqtt.Stats().Parks >= parks+2, true, "parked again after waking")
	}
	require.Equal(t, e.mqtt.Stats().Connections, int64(2))
}

// A parked client past 1.5 times its keep alive is cut by the sweeper
// (MQTT 5: DISCONNECT 0x8D), not earlier; one that pings in time stays,
// parking between its pings.
func TestParkedClientPastKeepAliveIsCut(t *testing.T) {
	e := newTestEnv(t, nil, parkQuickly)
	quiet := e.raw(t)
	since := time.Now() // no later than the listener's last byte from it
	quiet.write(connect5("quiet", 1))
	require.Equal(t, quiet.read().Type, packets.CONNACK)
	pinger := e.raw(t)
	pinger.write(connect5("pinger", 1))
	require.Equal(t, pinger.read().Type, packets.CONNACK)
	waitParked(t, e, 2)
	stop := make(chan struct{})
	pinged := make(chan error, 1)
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			if _, err := (&packets.Pingreq{}).WriteTo(pinger.nc); err != nil {
				pinged <- err
				return
			}
		}
	}()
	quiet.expectDisconnect(0x8D)
	close(stop)
	require.Equal(t, time.Since(since) >= 1500*time.Millisecond, true, "cut after 1.5 times the keep alive, not before")
	require.NoError(t, <-pinged)
	// The pinger is still there: its PINGRESPs are all waiting.
	require.Equal(t, pinger.read().Type, packets.PINGRESP)
	waitStat(t, "connections", func() int64 { return e.mqtt.Stats().Connections }, 1)
	require.Equal(t, e.mqtt.Stats().Parks >= 3, true, "the pinger parked between pings")
}

// QoS 1 deliveries to a parked subscriber: the writer sends them, each
// PUBACK wakes the reader, and the in-flight window (4) moves on, so all
// of 40 arrive, and the session's queue drains.
func TestQoS1ToParkedSubscriber(t *testing.T) {
	e := newTestEnv(t, nil, func(c *mqtt.Config) { parkQuickly(c); c.MaxInflight = 4 })
	sub := e.v3Client(t, "sub", func(o *pahov3.ClientOptions) { o.SetCleanSession(false) })
	msgs := v3Sub(t, sub, "q1/#", 1)
	pub := e.v3Client(t, "pub", nil)
	waitParked(t, e, 2)
	const n = 40
	for i := range n {
		tok := pub.Publish("q1/x", 1, false, fmt.Sprint(i))
		require.Equal(t, tok.WaitTimeout(wait), true, "PUBACK in time")
		require.NoError(t, tok.Error())
	}
	for i := range n {
		m := nextV3(t, msgs)
		require.Equal(t, string(m.Payload()), fmt.Sprint(i))
		require.Equal(t, m.Qos(), byte(1))
	}
	// The last PUBACKs may still be on their way: wait for the queue to
	// drain.
	waitStat(t, "unacknowledged messages", func() int64 {
		q, err := e.state.Queue("sub", 0, 0)
		require.NoError(t, err)
		return int64(len(q))
	}, 0)
	waitParked(t, e, 2)
}

// With every connection parked before the flood, a subscriber that stops
// reading is still cut off alone.
func TestSlowParkedSubscriberCutOffAlone(t *testing.T) {
	slowSubscriberCutOffAlone(t, func(c *mqtt.Config) { parkQuickly(c); c.MaxPending = 1 << 20 }, func(e *testEnv) { waitParked(t, e, 2) })
}

// pubV5 publishes from an MQTT 5 client.
func pubV5(t *testing.T, c *v5Client, topic string, qos byte, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: qos, Payload: []byte(body)})
	require.NoError(t, err)
}

// Deliveries larger than the socket takes at once reach a parked
// subscriber whole and in order: the writer writes what the socket takes
// and waits for the rest on a connection made again for it.
func TestLargeDeliveriesToParkedSubscriber(t *testing.T) {
	e := newTestEnv(t, nil, parkQuickly)
	sub := e.raw(t)
	sub.connect5("big")
	sub.write(&packets.Subscribe{PacketID: 1, Subscriptions: []packets.SubOptions{{Topic: "big/#"}}, Properties: &packets.Properties{}})
	require.Equal(t, sub.read().Type, packets.SUBACK)
	waitParked(t, e, 1)
	nc := e.natsConn(t)
	const n, size = 8, 512 << 10 // 4MiB: more than loopback's socket buffers
	for i := range n {
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(i + j)
		}
		require.NoError(t, nc.Publish("big.x", payload))
	}
	require.NoError(t, nc.Flush())
	for i := range n {
		cp := sub.read()
		require.Equal(t, cp.Type, packets.PUBLISH)
		p := cp.Content.(*packets.Publish)
		require.Equal(t, len(p.Payload), size)
		for j, b := range p.Payload {
			if b != byte(i+j) {
				t.Fatalf("message %d byte %d is %d, want %d", i, j, b, byte(i+j))
			}
		}
	}
	waitParked(t, e, 1)
	require.Equal(t, e.mqtt.Stats().SlowConsumers, int64(0))
}
