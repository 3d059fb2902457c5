package app

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/nats-io/nats.go/jetstream"
)

// An MQTT device's QoS 1 stream is captured by an uplink: each message is
// in the outbox when the device gets its PUBACK (with the hub down), and
// the hub's stream counts every message exactly once through link cuts.
func TestMQTTQoS1CapturedByUplink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-mqtt"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: 10 * time.Minute})
	hjs.Conn().Close()
	hub.Kill()

	c := gatewayConfig(t, "server_name: gw1\nmqtt: {listen: 127.0.0.1:-1}\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n")
	a := startConfig(t, c, Flags{})
	o := pahov3.NewClientOptions().AddBroker("tcp://" + a.MQTTAddr().String()).SetClientID("pump").
		SetProtocolVersion(4).SetAutoReconnect(false)
	dev := pahov3.NewClient(o)
	tok := dev.Connect()
	tok.WaitTimeout(testTimeout)
	require.NoError(t, tok.Error())
	defer dev.Disconnect(100)
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			tok := dev.Publish("telemetry/pump/"+strconv.Itoa(i%5), 1, false, []byte(strconv.Itoa(i)))
			require.Equal(t, tok.WaitTimeout(testTimeout), true)
			require.NoError(t, tok.Error())
		}
	}
	const n = 200
	publish(0, n)
	st := a.UplinkStatus()[0]
	require.Equal(t, st.Stored, uint64(n), "in the outbox when acknowledged")

	hub.Restart()
	_, stream := hubJetStream(t, ctx, hub, "SITE")
	waitStream := func(want uint64) {
		t.Helper()
		awaitStreamMsgs(t, ctx, stream, want, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	}
	waitStream(n)
	// A cut while more flows: still every message, once.
	publish(n, n+100)
	hub.Kill()
	publish(n+100, n+200)
	hub.Restart()
	_, stream = hubJetStream(t, ctx, hub, "SITE")
	waitStream(n + 200)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, info.State.Msgs, uint64(n+200), "exactly once")
}
