package mqtt_test

import (
	"context"
	"testing"

	"github.com/eclipse/paho.golang/paho"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
)

// An MQTT 3.1.1 client and NATS clients see each other's messages through
// the topic mapping, at every QoS, with wildcards both ways.
func TestV311BothWays(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	c := e.v3Client(t, "dev1", nil)
	for _, qos := range []byte{0, 1, 2} {
		ch := v3Sub(t, c, "sensors/+/temp", qos)
		require.NoError(t, nc.Publish("sensors.floor3.temp", []byte("21.5")))
		m := nextV3(t, ch)
		require.Equal(t, m.Topic(), "sensors/floor3/temp")
		require.Equal(t, string(m.Payload()), "21.5")
		// A NATS publisher's message is QoS 0 unless Nmqtt-Pub says.
		require.Equal(t, m.Qos(), byte(0))
		tok := c.Unsubscribe("sensors/+/temp")
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
	}
	sub, err := nc.SubscribeSync("sensors.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	for _, qos := range []byte{0, 1, 2} {
		tok := c.Publish("sensors/floor3/temp", qos, false, []byte{'0' + qos})
		require.Equal(t, tok.WaitTimeout(wait), true)
		require.NoError(t, tok.Error())
		m := nextNATS(t, sub)
		require.Equal(t, m.Subject, "sensors.floor3.temp")
		require.Equal(t, string(m.Data), string([]byte{'0' + qos}))
		require.Equal(t, m.Header.Get("Nmqtt-Pub"), string([]byte{'0' + qos}))
	}
}

// MQTT to MQTT: QoS is the lower of the publish's and the subscription's,
// and '#' matches the parent level.
func TestMQTTToMQTTQoS(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	pub := e.v3Client(t, "pub", nil)
	s1 := e.v3Client(t, "sub1", nil)
	ch := v3Sub(t, s1, "a/#", 1)
	s5, _ := e.v5Client(t, "sub5", nil)
	s5.sub(t, "a/+", 2)
	for _, qos := range []byte{0, 1, 2} {
		tok := pub.Publish("a/b", qos, false, []byte("x"))
		tok.WaitTimeout(wait)
		require.NoError(t, tok.Error())
		m := nextV3(t, ch)
		require.Equal(t, m.Qos(), min(qos, 1))
		m5 := s5.next(t)
		require.Equal(t, m5.QoS, qos)
		require.Equal(t, m5.Topic, "a/b")
	}
	tok := pub.Publish("a", 1, false, []byte("parent"))
	tok.WaitTimeout(wait)
	require.Equal(t, string(nextV3(t, ch).Payload()), "parent")
}

// MQTT 5 user properties become NATS headers and back.
func TestV5Headers(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	nc := e.natsConn(t)
	c, _ := e.v5Client(t, "dev5", nil)
	sub, err := nc.SubscribeSync("plant.line1")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	ctx := context.Background()
	_, err = c.Publish(ctx, &paho.Publish{Topic: "plant/line1", QoS: 1, Payload: []byte("on"), Properties: &paho.PublishProperties{
		User: paho.UserProperties{{Key: "Site", Value: "north"}}, ContentType: "text/plain"}})
	require.NoError(t, err)
	m := nextNATS(t, sub)
	require.Equal(t, m.Header.Get("Site"), "north")
	require.Equal(t, m.Header.Get("Mqtt-Content-Type"), "text/plain")

	c.sub(t, "plant/#", 1)
	msg := nats.NewMsg("plant.line2")
	msg.Header.Set("Operator", "ann")
	msg.Data = []byte("off")
	require.NoError(t, nc.PublishMsg(msg))
	got := c.next(t)
	require.Equal(t, got.Topic, "plant/line2")
	require.Equal(t, got.Properties.User.Get("Operator"), "ann")
}

// Many publishers at once, to one QoS 1 subscriber and a NATS
// subscriber: every message arrives, under the race detector.
func TestConcurrentPublishers(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	s, _ := e.v5Client(t, "sink", nil)
	s.sub(t, "many/#", 1)
	nc := e.natsConn(t)
	ns, err := nc.SubscribeSync("many.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	const pubs, each = 8, 100
	done := make(chan error, pubs)
	for p := range pubs {
		c := e.v3Client(t, "p"+string(rune('a'+p)), nil)
		go func() {
			for i := range each {
				tok := c.Publish("many/"+string(rune('a'+p)), byte(i%2), false, []byte("m"))
				tok.WaitTimeout(wait)
				if tok.Error() != nil {
					done <- tok.Error()
					return
				}
			}
			done <- nil
		}()
	}
	for range pubs {
		require.NoError(t, <-done)
	}
	for range pubs * each {
		s.next(t)
		nextNATS(t, ns)
	}
}
