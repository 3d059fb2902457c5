package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"
)

// pahoClient speaks MQTT through paho.golang's paho package, with the
// bridge's own reconnect loop: MQTT 5 as it is, MQTT 3.1.1 through
// v311Conn, which rewrites the packets between the two versions under
// paho. (paho.golang's autopaho and paho.mqtt.golang would bring
// WebSocket and proxy clients the bridge does not use into the binary:
// about 260 KB of the ARM builds, see scripts/build.)
type pahoClient struct {
	cfg     Config
	version Version
	subs    []subscription
	ev      events
	manual  bool
	session *state.State

	mu  sync.Mutex
	cli *paho.Client // the connected client; nil while down

	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has ended
}

// dialV5 starts connecting to the broker with MQTT 5.
func dialV5(ctx context.Context, cfg Config, subs []subscription, ev events) (*pahoClient, error) {
	return dialPaho(ctx, cfg, V5, subs, ev)
}

// dialV311 starts connecting to the broker with MQTT 3.1.1.
func dialV311(ctx context.Context, cfg Config, subs []subscription, ev events) (*pahoClient, error) {
	return dialPaho(ctx, cfg, V311, subs, ev)
}

// dialPaho starts the loop that connects to the broker with version v,
// and again after every loss, until close or a refusal.
func dialPaho(ctx context.Context, cfg Config, v Version, subs []subscription, ev events) (*pahoClient, error) {
	if _, err := ServerURL(cfg.Server); err != nil {
		return nil, err
	}
	// Manual acknowledgement is needed only to hold a stored message's
	// PUBACK until the stream has it. paho sends manual acknowledgements
	// on a ticker (SendAcksInterval); the QoS 0 and 1 messages of core
	// routes do not wait for it: inboundConn handles them inline and
	// acknowledges them as soon as they are published (see inbound.go).
	c := &pahoClient{cfg: cfg, version: v, subs: subs, ev: ev, manual: storesInbound(cfg), session: state.NewInMemory(), done: make(chan struct{})}
	ctx, c.cancel = context.WithCancel(ctx)
	go c.loop(ctx)
	return c, nil
}

// loop connects, waits for the connection to be lost and connects again:
// at once after a loss, then every ReconnectDelay. A CONNACK refusal
// stops it (ev.refused).
func (c *pahoClient) loop(ctx context.Context) {
	defer close(c.done)
	first, wait := true, false
	for {
		if wait {
			select {
			case <-time.After(c.cfg.ReconnectDelay):
			case <-ctx.Done():
				return
			}
		}
		wait = true
		cli, loss, err := c.connect(ctx, first)
		if ctx.Err() != nil {
			if cli != nil {
				c.disconnect(cli)
			}
			return
		}
		if err != nil {
			if refused := c.refusal(err); refused != nil {
				c.ev.refused(refused)
				return
			}
			c.ev.connectError(err)
			continue
		}
		c.mu.Lock()
		c.cli = cli
		c.mu.Unlock()
		c.subscribe(ctx, cli, first)
		first = false
		select {
		case <-loss.ch:
		case <-ctx.Done():
			c.disconnect(cli)
			return
		}
		<-cli.Done()
		c.mu.Lock()
		c.cli = nil
		c.mu.Unlock()
		c.ev.down(loss.err)
		wait = false
	}
}

// connackError is a CONNACK that refused the connection.
type connackError struct {
	code   byte
	reason string
}

func (e *connackError) Error() string {
	return fmt.Sprintf("mqtt: broker refused the connection (code %#x)", e.code)
}

// errSniffed311 is a connection attempt an MQTT 3.1.1 broker answered
// with a 3.1.1 CONNACK refusing the protocol version.
var errSniffed311 = errors.New("mqtt: a 3.1.1 CONNACK refused MQTT 5")

// refusal is the RefusedError of a failed attempt's err, or nil when
// trying again may succeed.
func (c *pahoClient) refusal(err error) *RefusedError {
	var ce *connackError
	switch {
	case errors.As(err, &ce) && c.version == V311:
		return refusedFor(V311, code311(ce.code), "")
	case errors.As(err, &ce):
		return refusedFor(V5, ce.code, ce.reason)
	case errors.Is(err, errSniffed311):
		return refusedFor(V5, 0x01, "unacceptable protocol version (a 3.1.1 CONNACK)")
	}
	return nil
}

// loss is the end of a connection: ch is closed when paho reports it,
// err says why.
type loss struct {
	ch   chan struct{}
	once sync.Once
	err  error // set before ch is closed
}

func (l *loss) signal(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.ch)
	})
}

// connect makes one attempt: dial, CONNECT, CONNACK. The loss reports the
// connection's failure afterwards.
func (c *pahoClient) connect(ctx context.Context, first bool) (cli *paho.Client, lost *loss, err error) {
	u, err := ServerURL(c.cfg.Server)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	var nc net.Conn
	if IsTLS(u) {
		d := &tls.Dialer{Config: c.cfg.TLS}
		nc, err = d.DialContext(cctx, "tcp", u.Host)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(cctx, "tcp", u.Host)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mqtt: failed to connect to %s: %w", u, err)
	}
	var under net.Conn = nc
	if c.version == V311 {
		under = newV311Conn(nc)
	}
	sc := newInboundConn(under, c.ev.inline)

	lost = &loss{ch: make(chan struct{})}
	cli = paho.NewClient(paho.ClientConfig{
		ClientID:                   c.cfg.ClientID,
		Conn:                       sc,
		Session:                    c.session,
		EnableManualAcknowledgment: c.manual,
		SendAcksInterval:           5 * time.Millisecond,
		OnPublishReceived:          []func(paho.PublishReceived) (bool, error){c.received},
		OnClientError:              func(err error) { lost.signal(fmt.Errorf("mqtt: connection lost: %w", err)) },
		OnServerDisconnect: func(d *paho.Disconnect) {
			lost.signal(fmt.Errorf("mqtt: the broker closed the connection (reason %#x)", d.ReasonCode))
		},
	})
	cp := &paho.Connect{
		KeepAlive: uint16(c.cfg.KeepAlive / time.Second),
		ClientID:  c.cfg.ClientID,
		// MQTT 5: a clean start on the first connection only, the
		// session then lives SessionExpiry. MQTT 3.1.1 has no expiry:
		// a session without one is a clean session on every connection
		// (as it is for a clean start).
		CleanStart: c.cfg.CleanStart && first,
	}
	if c.version == V311 {
		cp.CleanStart = c.cfg.CleanStart || c.cfg.SessionExpiry == 0
	}
	if c.cfg.Username != "" {
		cp.UsernameFlag, cp.Username = true, c.cfg.Username
	}
	if len(c.cfg.Password) > 0 {
		cp.PasswordFlag, cp.Password = true, c.cfg.Password
	}
	if exp := uint32(c.cfg.SessionExpiry / time.Second); exp != 0 {
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &exp}
	}
	ack, err := cli.Connect(cctx, cp)
	if err != nil {
		nc.Close()
		<-cli.Done()
		if ack != nil && ack.ReasonCode >= 0x80 {
			ce := &connackError{code: ack.ReasonCode}
			if ack.Properties != nil {
				ce.reason = ack.Properties.ReasonString
			}
			return nil, nil, ce
		}
		if c.version == V5 && sc.refusedAs311() {
			// A 3.1.1 broker answers an MQTT 5 CONNECT with a 3.1.1
			// CONNACK, which paho cannot decode as one of MQTT 5.
			return nil, nil, errSniffed311
		}
		return nil, nil, fmt.Errorf("mqtt: failed to connect to %s: %w", u, err)
	}
	return cli, lost, nil
}

// subscribe subscribes cli to the bridge's filters, then reports the
// connection up; on its own goroutine, as the handlers of the messages
// the broker may send at once must not wait for it.
func (c *pahoClient) subscribe(ctx context.Context, cli *paho.Client, first bool) {
	go func() {
		if len(c.subs) > 0 {
			s := &paho.Subscribe{}
			for _, sub := range c.subs {
				s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: sub.filter, QoS: sub.qos, NoLocal: true})
			}
			sctx, scancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
			ack, err := cli.Subscribe(sctx, s)
			scancel()
			if err == nil {
				for i, code := range ack.Reasons {
					if code >= 0x80 && i < len(c.subs) {
						err = fmt.Errorf("mqtt: broker refused the subscription to %q (reason %#x)", c.subs[i].filter, code)
						break
					}
				}
			}
			if err != nil {
				c.ev.connectError(err)
				return
			}
		}
		c.ev.up(first)
	}()
}

// received hands an inbound PUBLISH that inboundConn left to paho to the
// bridge.
func (c *pahoClient) received(pr paho.PublishReceived) (bool, error) {
	pb := pr.Packet
	p := &packet{topic: pb.Topic, payload: pb.Payload, qos: pb.QoS, retain: pb.Retain, dup: pb.Duplicate(), packetID: pb.PacketID}
	if pr := pb.Properties; pr != nil {
		for _, u := range pr.User {
			p.user = append(p.user, property{u.Key, u.Value})
		}
		p.contentType, p.expiry, p.responseTopic, p.correlation = pr.ContentType, pr.MessageExpiry, pr.ResponseTopic, pr.CorrelationData
	}
	ack := func() {}
	if c.manual {
		cli := pr.Client
		ack = func() { _ = cli.Ack(pb) }
	}
	c.ev.message(p, ack)
	return true, nil
}

// disconnect sends DISCONNECT on cli and waits for it to close.
func (c *pahoClient) disconnect(cli *paho.Client) {
	c.mu.Lock()
	c.cli = nil
	c.mu.Unlock()
	_ = cli.Disconnect(&paho.Disconnect{ReasonCode: 0})
	<-cli.Done()
}

func (c *pahoClient) current() *paho.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cli
}

func (c *pahoClient) publish(ctx context.Context, p *packet) error {
	cli := c.current()
	if cli == nil {
		return errNotConnected
	}
	pb := &paho.Publish{QoS: p.qos, Retain: p.retain, Topic: p.topic, Payload: p.payload}
	if len(p.user) > 0 || p.contentType != "" || p.expiry != nil || p.responseTopic != "" || p.correlation != nil {
		props := &paho.PublishProperties{ContentType: p.contentType, MessageExpiry: p.expiry, ResponseTopic: p.responseTopic, CorrelationData: p.correlation}
		for _, u := range p.user {
			props.User = append(props.User, paho.UserProperty{Key: u.key, Value: u.value})
		}
		pb.Properties = props
	}
	resp, err := cli.Publish(ctx, pb)
	if err != nil {
		if connectionLost(cli, err) {
			return errNotConnected
		}
		return fmt.Errorf("mqtt: publish %q: %w", p.topic, err)
	}
	if resp != nil && resp.ReasonCode >= 0x80 {
		return &PublishRefusedError{Topic: p.topic, Code: resp.ReasonCode}
	}
	return nil
}

// connectionLost reports whether the publish that failed with err failed because
// cli's connection went down under it.
func connectionLost(cli *paho.Client, err error) bool {
	select {
	case <-cli.Done():
		return true
	default:
	}
	return errors.Is(err, paho.ErrConnectionLost) || errors.Is(err, paho.ErrNetworkErrorAfterStored)
}

func (c *pahoClient) close(ctx context.Context) {
	c.cancel()
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

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
