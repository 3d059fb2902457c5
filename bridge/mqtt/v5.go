package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// v5Client speaks MQTT 5 through autopaho.
type v5Client struct {
	cm *autopaho.ConnectionManager
}

// dialV5 starts connecting to the broker with MQTT 5.
func dialV5(ctx context.Context, cfg Config, subs []subscription, ev events) (*v5Client, error) {
	u, err := ServerURL(cfg.Server)
	if err != nil {
		return nil, err
	}
	// Manual acknowledgement is needed only to hold a stored message's
	// PUBACK until the stream has it. paho sends manual acknowledgements
	// on a ticker (SendAcksInterval); the QoS 0 and 1 messages of core
	// routes do not wait for it: inboundConn handles them inline and
	// acknowledges them as soon as they are published (see inbound.go).
	manual := storesInbound(cfg)
	var connected, stopped atomic.Bool
	var lastConn atomic.Pointer[inboundConn]
	ctx, cancel := context.WithCancel(ctx)
	ac := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		TlsCfg:                        cfg.TLS,
		KeepAlive:                     uint16(cfg.KeepAlive / time.Second),
		CleanStartOnInitialConnection: cfg.CleanStart,
		SessionExpiryInterval:         uint32(cfg.SessionExpiry / time.Second),
		ReconnectBackoff:              autopaho.NewConstantBackoff(cfg.ReconnectDelay),
		ConnectTimeout:                cfg.ConnectTimeout,
		ConnectUsername:               cfg.Username,
		ConnectPassword:               cfg.Password,
		AttemptConnection: func(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
			var c net.Conn
			var err error
			if IsTLS(u) {
				d := &tls.Dialer{Config: cfg.TLS}
				c, err = d.DialContext(ctx, "tcp", u.Host)
			} else {
				var d net.Dialer
				c, err = d.DialContext(ctx, "tcp", u.Host)
			}
			if err != nil {
				return nil, err
			}
			sc := newInboundConn(c, ev.inline)
			lastConn.Store(sc)
			return sc, nil
		},
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			wasFirst := !connected.Swap(true)
			go func() {
				if len(subs) > 0 {
					s := &paho.Subscribe{}
					for _, sub := range subs {
						s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: sub.filter, QoS: sub.qos, NoLocal: true})
					}
					sctx, scancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
					ack, err := cm.Subscribe(sctx, s)
					scancel()
					if err == nil {
						for i, code := range ack.Reasons {
							if code >= 0x80 && i < len(subs) {
								err = fmt.Errorf("mqtt: broker refused the subscription to %q (reason %#x)", subs[i].filter, code)
								break
							}
						}
					}
					if err != nil {
						ev.connectError(err)
						return
					}
				}
				ev.up(wasFirst)
			}()
		},
		OnConnectionDown: func() bool {
			ev.down(errors.New("mqtt: connection lost"))
			return true
		},
		OnConnectError: func(err error) {
			var ce *autopaho.ConnackError
			if errors.As(err, &ce) {
				if !stopped.CompareAndSwap(false, true) {
					return
				}
				ev.refused(refusedFor(V5, ce.ReasonCode, ce.Reason))
				cancel()
				return
			}
			if sc := lastConn.Load(); sc != nil && sc.refusedAs311() {
				// A 3.1.1 broker answers an MQTT 5 CONNECT with a 3.1.1
				// CONNACK, which paho cannot decode as one of MQTT 5.
				if stopped.CompareAndSwap(false, true) {
					ev.refused(refusedFor(V5, 0x01, "unacceptable protocol version (a 3.1.1 CONNACK)"))
					cancel()
				}
				return
			}
			ev.connectError(err)
		},
		ClientConfig: paho.ClientConfig{
			ClientID:                   cfg.ClientID,
			EnableManualAcknowledgment: manual,
			SendAcksInterval:           5 * time.Millisecond,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				pb := pr.Packet
				p := &packet{topic: pb.Topic, payload: pb.Payload, qos: pb.QoS, retain: pb.Retain, dup: pb.Duplicate(), packetID: pb.PacketID}
				if pr := pb.Properties; pr != nil {
					for _, u := range pr.User {
						p.user = append(p.user, property{u.Key, u.Value})
					}
					p.contentType, p.expiry, p.responseTopic, p.correlation = pr.ContentType, pr.MessageExpiry, pr.ResponseTopic, pr.CorrelationData
				}
				ack := func() {}
				if manual {
					cli := pr.Client
					ack = func() { _ = cli.Ack(pb) }
				}
				ev.message(p, ack)
				return true, nil
			}},
		},
	}
	cm, err := autopaho.NewConnection(ctx, ac)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	return &v5Client{cm: cm}, nil
}

func (c *v5Client) publish(ctx context.Context, p *packet) error {
	pb := &paho.Publish{QoS: p.qos, Retain: p.retain, Topic: p.topic, Payload: p.payload}
	if len(p.user) > 0 || p.contentType != "" || p.expiry != nil || p.responseTopic != "" || p.correlation != nil {
		props := &paho.PublishProperties{ContentType: p.contentType, MessageExpiry: p.expiry, ResponseTopic: p.responseTopic, CorrelationData: p.correlation}
		for _, u := range p.user {
			props.User = append(props.User, paho.UserProperty{Key: u.key, Value: u.value})
		}
		pb.Properties = props
	}
	resp, err := c.cm.Publish(ctx, pb)
	if errors.Is(err, autopaho.ConnectionDownError) {
		return errNotConnected
	}
	if err != nil {
		return fmt.Errorf("mqtt: publish %q: %w", p.topic, err)
	}
	if resp != nil && resp.ReasonCode >= 0x80 {
		return &PublishRefusedError{Topic: p.topic, Code: resp.ReasonCode}
	}
	return nil
}

func (c *v5Client) close(ctx context.Context) { _ = c.cm.Disconnect(ctx) }

// storesInbound reports whether an inbound route of cfg stores its QoS 1
// or 2 messages, whose acknowledgements wait for the stream.
func storesInbound(cfg Config) bool {
	for _, r := range cfg.Inbound {
		if r.Store && r.QoS > 0 {
			return true
		}
	}
	return false
}
