package mqtt_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/nats-io/nats.go"
)

const wait = 10 * time.Second

// testEnv is a broker with an MQTT listener in front of it.
type testEnv struct {
	srv   *server.Server
	mqtt  *mqtt.Server
	addr  string
	state mqtt.State
}

// newTestEnv starts a broker (with authConfig when not nil) and an MQTT
// listener on 127.0.0.1:0; edit changes the listener's Config.
func newTestEnv(t testing.TB, authConfig *auth.Config, edit func(*mqtt.Config)) *testEnv {
	t.Helper()
	srv := servertest.Start(t, server.Options{Auth: authConfig})
	cfg := mqtt.Config{Broker: srv}
	if authConfig != nil {
		a, err := auth.New(*authConfig)
		require.NoError(t, err)
		cfg.Auth = a
	}
	if edit != nil {
		edit(&cfg)
	}
	if cfg.State == nil {
		cfg.State = mqtt.NewMemState()
	}
	return startListener(t, srv, cfg)
}

func startListener(t testing.TB, srv *server.Server, cfg mqtt.Config) *testEnv {
	t.Helper()
	m, err := mqtt.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		require.NoError(t, m.Close(ctx))
		require.ErrorIs(t, <-done, mqtt.ErrClosed)
	})
	return &testEnv{srv: srv, mqtt: m, addr: ln.Addr().String(), state: cfg.State}
}

// natsConn connects nats.go to the broker.
func (e *testEnv) natsConn(t *testing.T, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.srv.ClientURL(), opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// v3Client connects a paho.mqtt.golang (MQTT 3.1.1) client.
func (e *testEnv) v3Client(t *testing.T, id string, edit func(*pahov3.ClientOptions)) pahov3.Client {
	t.Helper()
	o := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID(id).SetProtocolVersion(4).
		SetAutoReconnect(false).SetConnectRetry(false).SetOrderMatters(true)
	if edit != nil {
		edit(o)
	}
	c := pahov3.NewClient(o)
	tok := c.Connect()
	require.Equal(t, tok.WaitTimeout(wait), true, "connect in time")
	require.NoError(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(0) })
	return c
}

// v5Client is a paho.golang (MQTT 5) client with its received messages.
type v5Client struct {
	*paho.Client
	msgs chan *paho.Publish
}

func (e *testEnv) v5Dial(t *testing.T) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", e.addr)
	require.NoError(t, err)
	return nc
}

// v5Client connects a paho.golang client with connect (ClientID set from
// id when empty).
func (e *testEnv) v5Client(t *testing.T, id string, connect *paho.Connect) (*v5Client, *paho.Connack) {
	t.Helper()
	msgs := make(chan *paho.Publish, 1000)
	c := paho.NewClient(paho.ClientConfig{
		Conn: e.v5Dial(t),
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			msgs <- pr.Packet
			return true, nil
		}},
	})
	if connect == nil {
		connect = &paho.Connect{KeepAlive: 30, CleanStart: true}
	}
	if connect.ClientID == "" {
		connect.ClientID = id
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ack, err := c.Connect(ctx, connect)
	require.NoError(t, err)
	require.Equal(t, ack.ReasonCode, byte(0), "connack reason")
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return &v5Client{Client: c, msgs: msgs}, ack
}

func (c *v5Client) sub(t *testing.T, filter string, qos byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ack, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: qos}}})
	require.NoError(t, err)
	require.Equal(t, ack.Reasons[0] < 0x80, true, "granted")
}

func (c *v5Client) next(t *testing.T) *paho.Publish {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(wait):
		t.Fatal("no MQTT 5 message")
	}
	return nil
}

// v3Sub subscribes and returns the channel of messages.
func v3Sub(t *testing.T, c pahov3.Client, filter string, qos byte) chan pahov3.Message {
	t.Helper()
	ch := make(chan pahov3.Message, 1000)
	tok := c.Subscribe(filter, qos, func(_ pahov3.Client, m pahov3.Message) { ch <- m })
	require.Equal(t, tok.WaitTimeout(wait), true, "suback in time")
	require.NoError(t, tok.Error())
	return ch
}

func nextV3(t *testing.T, ch chan pahov3.Message) pahov3.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(wait):
		t.Fatal("no MQTT 3.1.1 message")
	}
	return nil
}

func nextNATS(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(wait)
	require.NoError(t, err)
	return m
}
