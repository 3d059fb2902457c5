package mqtt_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
)

// A 3.1.1 session with clean session 0 keeps its subscription while the
// client is away; the QoS 1 messages published meanwhile arrive when it
// comes back, and session present is set.
func TestPersistentSessionV311(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	persistent := func(o *pahov3.ClientOptions) { o.SetCleanSession(false) }
	c := e.v3Client(t, "keeper", persistent)
	v3Sub(t, c, "jobs/#", 1)
	c.Disconnect(100)

	pub := e.v3Client(t, "pub", nil)
	for _, p := range []string{"1", "2", "3"} {
		tok := pub.Publish("jobs/x", 1, false, []byte(p))
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
	}
	got := make(chan pahov3.Message, 10)
	c2 := e.v3Client(t, "keeper", func(o *pahov3.ClientOptions) {
		o.SetCleanSession(false).SetOrderMatters(true) // the handler sees them in order
		o.SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) { got <- m })
	})
	_ = c2
	for _, want := range []string{"1", "2", "3"} {
		m := nextV3(t, got)
		require.Equal(t, string(m.Payload()), want)
		require.Equal(t, m.Qos(), byte(1))
	}
}

// An MQTT 5 session with a session expiry survives the disconnect; clean
// start discards it.
func TestSessionExpiryV5(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	expiry := uint32(60)
	c, ack := e.v5Client(t, "v5keeper", &paho.Connect{KeepAlive: 30, CleanStart: true, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
	require.Equal(t, ack.SessionPresent, false)
	c.sub(t, "orders/+", 2)
	require.NoError(t, c.Disconnect(&paho.Disconnect{}))

	nc := e.natsConn(t)
	msg := nats.NewMsg("orders.7")
	msg.Header.Set("Nmqtt-Pub", "2") // a NATS publisher asking for QoS 2
	msg.Data = []byte("seven")
	require.NoError(t, nc.PublishMsg(msg))
	require.NoError(t, nc.Flush())

	c2, ack := e.v5Client(t, "v5keeper", &paho.Connect{KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
	require.Equal(t, ack.SessionPresent, true)
	m := c2.next(t)
	require.Equal(t, string(m.Payload), "seven")
	require.Equal(t, m.QoS, byte(2))
	require.NoError(t, c2.Disconnect(&paho.Disconnect{}))

	_, ack = e.v5Client(t, "v5keeper", &paho.Connect{KeepAlive: 30, CleanStart: true})
	require.Equal(t, ack.SessionPresent, false)
}

// Retained messages: set, replaced, delivered on subscribe with the retain
// flag, cleared by an empty payload.
func TestRetained(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	pub := e.v3Client(t, "pub", nil)
	publish := func(payload string) {
		tok := pub.Publish("status/pump", 1, true, []byte(payload))
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
	}
	publish("old")
	publish("on")
	s := e.v3Client(t, "sub", nil)
	m := nextV3(t, v3Sub(t, s, "status/#", 1))
	require.Equal(t, string(m.Payload()), "on")
	require.Equal(t, m.Retained(), true)

	s5, _ := e.v5Client(t, "sub5", nil)
	s5.sub(t, "status/+", 0)
	m5 := s5.next(t)
	require.Equal(t, string(m5.Payload), "on")
	require.Equal(t, m5.Retain, true)

	publish("")
	s2 := e.v3Client(t, "sub2", nil)
	ch := v3Sub(t, s2, "status/#", 1)
	select {
	case m := <-ch:
		t.Fatalf("cleared retained message delivered: %q", m.Payload())
	case <-time.After(200 * time.Millisecond):
	}
}

// The will is published when a client goes away without DISCONNECT, and
// not after a DISCONNECT.
func TestWill(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	sub, err := nc.SubscribeSync("devices.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	nc1, err := net.Dial("tcp", e.addr)
	require.NoError(t, err)
	c := paho.NewClient(paho.ClientConfig{Conn: nc1})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err = c.Connect(ctx, &paho.Connect{ClientID: "dying", KeepAlive: 30, CleanStart: true, WillMessage: &paho.WillMessage{Topic: "devices/dying/status", Payload: []byte("offline"), QoS: 1}})
	require.NoError(t, err)
	require.NoError(t, nc1.Close()) // abrupt
	m := nextNATS(t, sub)
	require.Equal(t, m.Subject, "devices.dying.status")
	require.Equal(t, string(m.Data), "offline")

	polite := e.v3Client(t, "polite", func(o *pahov3.ClientOptions) { o.SetWill("devices/polite/status", "offline", 1, false) })
	polite.Disconnect(100)
	_, err = sub.NextMsg(200 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout)
}

// $share/<group>/<filter> is a queue group: MQTT and NATS members of one
// group share the messages, each delivered once.
func TestSharedSubscriptionWithNATSQueue(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	qs, err := nc.QueueSubscribeSync("work.*", "workers")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	m1, _ := e.v5Client(t, "w1", nil)
	m1.sub(t, "$share/workers/work/+", 0)
	c3 := e.v3Client(t, "w3", nil)
	ch3 := v3Sub(t, c3, "$share/workers/work/+", 0)
	const n = 300
	for range n {
		require.NoError(t, nc.Publish("work.item", []byte("x")))
	}
	require.NoError(t, nc.Flush())
	count := func(ch func() bool) int {
		k := 0
		for ch() {
			k++
		}
		return k
	}
	total, mqtt5, mqtt3, natsN := 0, 0, 0, 0
	deadline := time.After(wait)
	for total < n {
		select {
		case <-m1.msgs:
			mqtt5++
		case <-ch3:
			mqtt3++
		case <-deadline:
			t.Fatalf("got %d of %d", total, n)
		default:
			if _, err := qs.NextMsg(10 * time.Millisecond); err == nil {
				natsN++
			}
		}
		total = mqtt5 + mqtt3 + natsN
	}
	_ = count
	require.Equal(t, total, n)
	require.Equal(t, mqtt5 > 0 && mqtt3 > 0 && natsN > 0, true, "every member got some")
}

// A NATS request is answered by an MQTT 5 device (response topic is the
// reply subject), and an MQTT 5 request is answered by a NATS responder
// (the reply arrives on the response topic with the correlation data).
func TestRequestResponse(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	dev, _ := e.v5Client(t, "responder", nil)
	dev.sub(t, "rpc/temp", 1)
	go func() {
		m := <-dev.msgs
		_, _ = dev.Publish(context.Background(), &paho.Publish{Topic: m.Properties.ResponseTopic, Payload: []byte("21.5"),
			Properties: &paho.PublishProperties{CorrelationData: m.Properties.CorrelationData}})
	}()
	reply, err := nc.Request("rpc.temp", []byte("?"), wait)
	require.NoError(t, err)
	require.Equal(t, string(reply.Data), "21.5")

	_, err = nc.Subscribe("svc.time", func(m *nats.Msg) { _ = m.Respond([]byte("noon")) })
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	req, _ := e.v5Client(t, "requester", nil)
	req.sub(t, "answers/me", 1)
	_, err = req.Publish(context.Background(), &paho.Publish{Topic: "svc/time", QoS: 1, Payload: []byte("?"),
		Properties: &paho.PublishProperties{ResponseTopic: "answers/me", CorrelationData: []byte("c-42")}})
	require.NoError(t, err)
	m := req.next(t)
	require.Equal(t, m.Topic, "answers/me")
	require.Equal(t, string(m.Payload), "noon")
	require.Equal(t, string(m.Properties.CorrelationData), "c-42")
}
