package mqtt_test

import (
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
)

// No-local keeps a client's own messages from its subscription; the
// subscription identifier comes back on deliveries; retain handling 2
// sends no retained message; retain-as-published keeps the flag.
func TestV5SubscriptionOptions(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	c, _ := e.v5Client(t, "opts", nil)
	ctx := context.Background()
	id := 7
	_, err := c.Subscribe(ctx, &paho.Subscribe{Properties: &paho.SubscribeProperties{SubscriptionIdentifier: &id},
		Subscriptions: []paho.SubscribeOptions{{Topic: "loop/#", QoS: 1, NoLocal: true}}})
	require.NoError(t, err)
	_, err = c.Publish(ctx, &paho.Publish{Topic: "loop/self", QoS: 1, Payload: []byte("mine")})
	require.NoError(t, err)
	nc := e.natsConn(t)
	require.NoError(t, nc.Publish("loop.other", []byte("theirs")))
	m := c.next(t)
	require.Equal(t, string(m.Payload), "theirs", "own message not delivered")
	require.Equal(t, *m.Properties.SubscriptionIdentifier, 7)

	pub, _ := e.v5Client(t, "pub", nil)
	_, err = pub.Publish(ctx, &paho.Publish{Topic: "keep/x", QoS: 1, Retain: true, Payload: []byte("kept")})
	require.NoError(t, err)
	s, _ := e.v5Client(t, "rh", nil)
	_, err = s.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "keep/#", QoS: 1, RetainHandling: 2, RetainAsPublished: true}}})
	require.NoError(t, err)
	_, err = pub.Publish(ctx, &paho.Publish{Topic: "keep/x", QoS: 1, Retain: true, Payload: []byte("again")})
	require.NoError(t, err)
	got := s.next(t)
	require.Equal(t, string(got.Payload), "again", "no retained message with retain handling 2")
	require.Equal(t, got.Retain, true, "retain as published")
}

// A topic alias set by the client names the topic of later publishes.
func TestV5TopicAlias(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	sub, err := nc.SubscribeSync("alias.topic")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	r := e.raw(t)
	r.connect5("aliaser")
	one := uint16(1)
	r.write(&packets.Publish{Topic: "alias/topic", Payload: []byte("a"), Properties: &packets.Properties{TopicAlias: &one}})
	r.write(&packets.Publish{Topic: "", Payload: []byte("b"), Properties: &packets.Properties{TopicAlias: &one}})
	require.Equal(t, string(nextNATS(t, sub).Data), "a")
	require.Equal(t, string(nextNATS(t, sub).Data), "b")
	two := uint16(2)
	r.write(&packets.Publish{Topic: "", Payload: []byte("c"), Properties: &packets.Properties{TopicAlias: &two}})
	r.expectDisconnect(0x82)
}

// An incoming QoS 2 message sent again (DUP) before PUBREL is delivered
// once; PUBREL completes it.
func TestQoS2ExactlyOnceInbound(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	sub, err := nc.SubscribeSync("once")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	r := e.raw(t)
	r.connect5("twice")
	p := &packets.Publish{Topic: "once", QoS: 2, PacketID: 9, Payload: []byte("x"), Properties: &packets.Properties{}}
	r.write(p)
	require.Equal(t, r.read().Type, packets.PUBREC)
	p.Duplicate = true
	r.write(p)
	require.Equal(t, r.read().Type, packets.PUBREC)
	r.write(&packets.Pubrel{PacketID: 9, Properties: &packets.Properties{}})
	comp := r.read()
	require.Equal(t, comp.Type, packets.PUBCOMP)
	require.Equal(t, comp.Content.(*packets.Pubcomp).ReasonCode, byte(0))
	nextNATS(t, sub)
	_, err = sub.NextMsg(100 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout)
}

// At most MaxInflight (the client's receive maximum, when lower) QoS 1
// messages are unacknowledged at a time; acknowledging one sends the next.
func TestInflightWindow(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	r := e.raw(t)
	rm := uint16(2)
	cp := connect5("window", 30)
	cp.Properties.ReceiveMaximum = &rm
	r.write(cp)
	require.Equal(t, r.read().Type, packets.CONNACK)
	r.write(&packets.Subscribe{PacketID: 1, Subscriptions: []packets.SubOptions{{Topic: "w", QoS: 1}}, Properties: &packets.Properties{}})
	require.Equal(t, r.read().Type, packets.SUBACK)
	pub := e.v3Client(t, "p", nil)
	for i := range 4 {
		tok := pub.Publish("w", 1, false, []byte{byte('0' + i)})
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
	}
	first, second := r.read(), r.read()
	require.Equal(t, string(first.Content.(*packets.Publish).Payload), "0")
	require.Equal(t, string(second.Content.(*packets.Publish).Payload), "1")
	_ = r.nc.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	_, err := packets.ReadPacket(r.r)
	require.Equal(t, err != nil, true, "a third message waits for an acknowledgement")
	r.r.Reset(r.nc)
	r.write(&packets.Puback{PacketID: first.Content.(*packets.Publish).PacketID, Properties: &packets.Properties{}})
	require.Equal(t, string(r.read().Content.(*packets.Publish).Payload), "2")
}

// A will with a will delay is held back for the delay, and dropped when
// the client comes back in time.
func TestWillDelay(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	sub, err := nc.SubscribeSync("lwt.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	connectWithWill := func() *raw {
		r := e.raw(t)
		expiry, delay := uint32(60), uint32(1)
		cp := connect5("delayed", 30)
		cp.CleanStart = false
		cp.Properties.SessionExpiryInterval = &expiry
		cp.WillFlag, cp.WillTopic, cp.WillMessage, cp.WillQOS = true, "lwt/delayed", []byte("gone"), 0
		cp.WillProperties = &packets.Properties{WillDelayInterval: &delay}
		r.write(cp)
		require.Equal(t, r.read().Type, packets.CONNACK)
		return r
	}
	r := connectWithWill()
	_ = r.nc.Close()
	r = connectWithWill() // back within the delay: no will
	_, err = sub.NextMsg(1500 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout)
	start := time.Now()
	_ = r.nc.Close()
	m := nextNATS(t, sub)
	require.Equal(t, string(m.Data), "gone")
	require.Equal(t, time.Since(start) >= 900*time.Millisecond, true, "held for the will delay")
}

// A queued message past its message expiry is not delivered; one within
// it arrives with the expiry reduced by its wait.
func TestV5MessageExpiry(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	expiry := uint32(60)
	connect := func() *v5Client {
		c, _ := e.v5Client(t, "expiring", &paho.Connect{KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
		return c
	}
	c := connect()
	c.sub(t, "exp/#", 1)
	require.NoError(t, c.Disconnect(&paho.Disconnect{}))
	pub, _ := e.v5Client(t, "pub", nil)
	short, long := uint32(1), uint32(100)
	ctx := context.Background()
	_, err := pub.Publish(ctx, &paho.Publish{Topic: "exp/short", QoS: 1, Payload: []byte("short"), Properties: &paho.PublishProperties{MessageExpiry: &short}})
	require.NoError(t, err)
	_, err = pub.Publish(ctx, &paho.Publish{Topic: "exp/long", QoS: 1, Payload: []byte("long"), Properties: &paho.PublishProperties{MessageExpiry: &long}})
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // the expiry is the condition under test
	c = connect()
	m := c.next(t)
	require.Equal(t, string(m.Payload), "long")
	require.Equal(t, *m.Properties.MessageExpiry <= 99, true, "expiry reduced by the wait")
}

// The window moves by acknowledgements in any order: with 3 in flight,
// acknowledging the second sends the fourth, then the first the fifth;
// after a reconnect the three still unacknowledged come again with DUP,
// in order, before the rest.
func TestInflightWindowOutOfOrderAcksAndResend(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	expiry, rm := uint32(60), uint16(3)
	connect := func() *raw {
		r := e.raw(t)
		cp := connect5("ooo", 30)
		cp.CleanStart = false
		cp.Properties.SessionExpiryInterval = &expiry
		cp.Properties.ReceiveMaximum = &rm
		r.write(cp)
		require.Equal(t, r.read().Type, packets.CONNACK)
		return r
	}
	r := connect()
	r.write(&packets.Subscribe{PacketID: 1, Subscriptions: []packets.SubOptions{{Topic: "w", QoS: 1}}, Properties: &packets.Properties{}})
	require.Equal(t, r.read().Type, packets.SUBACK)
	pub := e.v3Client(t, "p", nil)
	for i := range 8 {
		tok := pub.Publish("w", 1, false, []byte{byte('0' + i)})
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
	}
	next := func(r *raw, want string, dup bool) uint16 {
		t.Helper()
		p := r.read().Content.(*packets.Publish)
		require.Equal(t, string(p.Payload), want)
		require.Equal(t, p.Duplicate, dup)
		return p.PacketID
	}
	ack := func(r *raw, pid uint16) {
		r.write(&packets.Puback{PacketID: pid, Properties: &packets.Properties{}})
	}
	p0, p1 := next(r, "0", false), next(r, "1", false)
	next(r, "2", false)
	ack(r, p1)
	p3 := next(r, "3", false)
	ack(r, p0)
	next(r, "4", false)
	ack(r, p3)
	next(r, "5", false)
	_ = r.nc.Close()
	r = connect()
	// Unacknowledged: 2, 4, 5, sent again with DUP, then 6 as each is
	// acknowledged.
	q2, q4, q5 := next(r, "2", true), next(r, "4", true), next(r, "5", true)
	ack(r, q4)
	next(r, "6", false)
	ack(r, q2)
	ack(r, q5)
	next(r, "7", false)
}
