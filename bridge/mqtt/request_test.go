package mqtt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/bridge"
)

// TestNATSRequestAnsweredByMQTTDevice: a NATS request on an outbound route
// reaches an MQTT 5 device with the bridge's response topic; the device's
// answer comes back as the reply.
func TestNATSRequestAnsweredByMQTTDevice(t *testing.T) {
	m := startMosquitto(t)
	b := newTestBroker(t)
	cfg := testConfig(m, V5, "rpc")
	cfg.ResponseTopic = "leafbox/rpc/reply"
	cfg.Outbound = []OutboundRoute{{From: "rpc.>", StripPrefix: "rpc.", To: "dev/", QoS: 1}}
	runBridge(t, cfg, b.bus)

	var device *pahoDevice
	device = newPahoDevice(t, m, "device", "dev/#", func(pr paho.PublishReceived) {
		p := pr.Packet
		if p.Properties == nil || p.Properties.ResponseTopic == "" {
			t.Errorf("request on %q without a response topic", p.Topic)
			return
		}
		go device.publish(&paho.Publish{QoS: 1, Topic: p.Properties.ResponseTopic, Payload: append([]byte("pong:"), p.Payload...),
			Properties: &paho.PublishProperties{CorrelationData: p.Properties.CorrelationData,
				User: paho.UserProperties{{Key: "device", Value: "d1"}}}})
	})
	for _, data := range []string{"a", "b"} {
		reply, err := b.nc.Request("rpc.ping", []byte(data), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(reply.Data) != "pong:"+data || reply.Header.Get("device") != "d1" {
			t.Fatalf("reply %q %v", reply.Data, reply.Header)
		}
	}
}

// TestMQTTRequestAnsweredByNATSResponder: an MQTT 5 publish with a response
// topic on an inbound route is a NATS request; the responder's reply is
// published to the response topic with the correlation data.
func TestMQTTRequestAnsweredByNATSResponder(t *testing.T) {
	m := startMosquitto(t)
	b := newTestBroker(t)
	sub, err := b.nc.Subscribe("ask.>", func(msg *nats.Msg) {
		reply := nats.NewMsg(msg.Reply)
		reply.Data = append([]byte("answer:"), msg.Data...)
		reply.Header.Set("Mqtt-Content-Type", "text/plain")
		_ = msg.RespondMsg(reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(m, V5, "ask")
	cfg.Inbound = []InboundRoute{{From: "ask/#", To: "ask.", QoS: 1}}
	runBridge(t, cfg, b.bus)

	answers := make(chan *paho.Publish, 4)
	client := newPahoDevice(t, m, "asker", "me/resp", func(pr paho.PublishReceived) { answers <- pr.Packet })
	client.publish(&paho.Publish{QoS: 1, Topic: "ask/time", Payload: []byte("now?"),
		Properties: &paho.PublishProperties{ResponseTopic: "me/resp", CorrelationData: []byte("c-1")}})
	select {
	case a := <-answers:
		if string(a.Payload) != "answer:now?" || a.Properties == nil || !bytes.Equal(a.Properties.CorrelationData, []byte("c-1")) ||
			a.Properties.ContentType != "text/plain" {
			t.Fatalf("answer %q %+v", a.Payload, a.Properties)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
}

// pahoDevice is an MQTT 5 test client subscribed to one filter.
type pahoDevice struct {
	t   *testing.T
	pub func(*paho.Publish) error
}

func newPahoDevice(t *testing.T, m *mosquitto, id, filter string, onMsg func(paho.PublishReceived)) *pahoDevice {
	t.Helper()
	cm := newPahoClient(t, m, id, onMsg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return &pahoDevice{t: t, pub: func(p *paho.Publish) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cm.Publish(ctx, p)
		return err
	}}
}

func (d *pahoDevice) publish(p *paho.Publish) {
	if err := d.pub(p); err != nil {
		d.t.Errorf("publish %q: %v", p.Topic, err)
	}
}

// TestBrokerRefusesVersion: a broker that refuses the protocol version
// ends Run with a RefusedError that names the other version.
func TestBrokerRefusesVersion(t *testing.T) {
	cases := []struct {
		name    string
		version Version
		connack []byte
		want    string
	}{
		{"5 refused by a 3.1.1 broker", V5, []byte{0x20, 0x03, 0x00, 0x84, 0x00}, "set version: 3.1.1"},
		{"5 refused in 3.1.1 form", V5, []byte{0x20, 0x02, 0x00, 0x01}, "set version: 3.1.1"},
		{"3.1.1 refused", V311, []byte{0x20, 0x02, 0x00, 0x01}, "set version: 5"},
		{"bad password", V311, []byte{0x20, 0x02, 0x00, 0x04}, "bad user name or password"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						buf := make([]byte, 512)
						if _, err := c.Read(buf); err != nil { // the CONNECT
							return
						}
						_, _ = c.Write(tc.connack)
						_, _ = io.Copy(io.Discard, c)
					}()
				}
			}()
			cfg := Config{Name: "refused", Server: ln.Addr().String(), Version: tc.version, ClientID: "x", Password: []byte("secret"),
				ReconnectDelay: 20 * time.Millisecond, ConnectTimeout: 2 * time.Second}
			br, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := &bridge.Status{}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = br.Run(ctx, bridge.Env{Bus: newTestBroker(t).bus, Status: st, Logger: newTestLogger(t)})
			var refused *RefusedError
			if !errors.As(err, &refused) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("Run = %v, want a RefusedError saying %q", err, tc.want)
			}
			if bytes.Contains([]byte(err.Error()), []byte("secret")) || bytes.Contains([]byte(st.Snapshot().LastError), []byte("secret")) {
				t.Fatal("the password shows in the error")
			}
			if snap := st.Snapshot(); snap.State != bridge.StateDisconnected || snap.LastError != err.Error() {
				t.Fatalf("status %v %q", snap.State, snap.LastError)
			}
		})
	}
}
