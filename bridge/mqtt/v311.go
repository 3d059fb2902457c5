package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	paho3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// v311Client speaks MQTT 3.1.1 through paho.mqtt.golang.
type v311Client struct {
	c       paho3.Client
	timeout time.Duration
}

// dialV311 starts connecting to the broker with MQTT 3.1.1.
func dialV311(ctx context.Context, cfg Config, subs []subscription, ev events) (*v311Client, error) {
	u, err := ServerURL(cfg.Server)
	if err != nil {
		return nil, err
	}
	broker := *u
	if IsTLS(u) {
		broker.Scheme = "ssl"
	} else {
		broker.Scheme = "tcp"
	}
	var connected, stopped atomic.Bool
	var cli paho3.Client
	o := paho3.NewClientOptions()
	o.Servers = []*url.URL{&broker}
	o.SetClientID(cfg.ClientID).
		SetProtocolVersion(4).
		SetUsername(cfg.Username).
		SetPassword(string(cfg.Password)).
		SetCleanSession(cfg.CleanStart || cfg.SessionExpiry == 0).
		SetKeepAlive(cfg.KeepAlive).
		SetConnectTimeout(cfg.ConnectTimeout).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(cfg.ReconnectDelay).
		SetAutoAckDisabled(true).
		SetOrderMatters(true).
		SetResumeSubs(false).
		SetStore(copyingStore{paho3.NewMemoryStore()})
	if cfg.TLS != nil {
		o.SetTLSConfig(cfg.TLS)
	}
	handler := func(_ paho3.Client, m paho3.Message) {
		ev.message(&packet{topic: m.Topic(), payload: m.Payload(), qos: m.Qos(), retain: m.Retained(), dup: m.Duplicate(), packetID: m.MessageID()}, m.Ack)
	}
	o.SetDefaultPublishHandler(handler)
	o.SetOnConnectHandler(func(c paho3.Client) {
		wasFirst := !connected.Swap(true)
		go func() {
			if len(subs) > 0 {
				filters := make(map[string]byte, len(subs))
				for _, s := range subs {
					filters[s.filter] = s.qos
				}
				tok := c.SubscribeMultiple(filters, handler)
				if !tok.WaitTimeout(cfg.ConnectTimeout) {
					ev.connectError(errors.New("mqtt: subscribe timed out"))
					return
				}
				if err := tok.Error(); err != nil {
					ev.connectError(fmt.Errorf("mqtt: subscribe: %w", err))
					return
				}
				if st, ok := tok.(*paho3.SubscribeToken); ok {
					for f, code := range st.Result() {
						if code == 0x80 {
							ev.connectError(fmt.Errorf("mqtt: broker refused the subscription to %q", f))
							return
						}
					}
				}
			}
			ev.up(wasFirst)
		}()
	})
	o.SetConnectionLostHandler(func(_ paho3.Client, err error) { ev.down(err) })
	cli = paho3.NewClient(o)
	c := &v311Client{c: cli, timeout: cfg.ConnectTimeout}
	go func() {
		// The first connection is retried here rather than by the
		// library, which would retry a refusal as well; after it the
		// library reconnects by itself.
		for {
			tok := cli.Connect()
			select {
			case <-tok.Done():
			case <-ctx.Done():
				return
			}
			err := tok.Error()
			if err == nil {
				return
			}
			if ct, ok := tok.(*paho3.ConnectToken); ok {
				if code := ct.ReturnCode(); code >= packets.ErrRefusedBadProtocolVersion && code <= packets.ErrRefusedNotAuthorised {
					if stopped.CompareAndSwap(false, true) {
						ev.refused(refusedFor(V311, code, ""))
					}
					return
				}
			}
			ev.connectError(err)
			select {
			case <-time.After(cfg.ReconnectDelay):
			case <-ctx.Done():
				return
			}
		}
	}()
	return c, nil
}

func (c *v311Client) publish(ctx context.Context, p *packet) error {
	if !c.c.IsConnectionOpen() {
		return errNotConnected
	}
	tok := c.c.Publish(p.topic, p.qos, p.retain, p.payload)
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := tok.Error(); err != nil {
		if !c.c.IsConnectionOpen() {
			return errNotConnected
		}
		return fmt.Errorf("mqtt: publish %q: %w", p.topic, err)
	}
	return nil
}

func (c *v311Client) close(context.Context) { c.c.Disconnect(250) }

// copyingStore is paho.mqtt.golang's memory store, except that it keeps
// and hands out copies of PUBLISH packets. On a session resume the client
// sets the DUP flag on the packets it gets from the store while its
// writer may be sending the same packet, just published, and the writer
// sets fields of the packet it writes: data races inside the library
// (seen with the race detector when an outbound message is published
// right after connecting). Put copies the packet before the writer can
// touch it and Get copies the kept one, so the store's packets are never
// shared with the writer.
type copyingStore struct{ paho3.Store }

// Put implements paho3.Store.
func (s copyingStore) Put(key string, p packets.ControlPacket) {
	s.Store.Put(key, copyPublish(p))
}

// Get implements paho3.Store.
func (s copyingStore) Get(key string) packets.ControlPacket {
	return copyPublish(s.Store.Get(key))
}

// copyPublish returns a copy of a PUBLISH packet (its payload shared: no
// one writes to it), and any other packet as it is.
func copyPublish(p packets.ControlPacket) packets.ControlPacket {
	if pub, ok := p.(*packets.PublishPacket); ok {
		c := *pub
		return &c
	}
	return p
}
