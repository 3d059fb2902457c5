package mqtt

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// maxPendingReplies bounds the NATS requests waiting for an MQTT
// device's answer; beyond it the oldest are forgotten.
const maxPendingReplies = 4096

// maxConcurrentRequests bounds the MQTT 5 requests in flight toward NATS
// responders; beyond it the inbound flow waits.
const maxConcurrentRequests = 64

// Bridge is an MQTT bridge; New builds it, Run connects it.
type Bridge struct {
	cfg     Config
	server  string // the server's URL for logs, any password in it redacted
	inbound []inboundRoute
	subs    []subscription
}

// inboundRoute is an InboundRoute with its filter as subjects.
type inboundRoute struct {
	InboundRoute
	pattern, parent string
}

// New checks cfg, fills its defaults and returns the bridge; it opens
// nothing.
func New(cfg Config) (*Bridge, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := ServerURL(cfg.Server) // checked by Validate
	b := &Bridge{cfg: cfg, server: u.Redacted()}
	for _, r := range cfg.Inbound {
		pattern, parent, _ := subject.SubjectFromTopicFilter(r.From)
		b.inbound = append(b.inbound, inboundRoute{InboundRoute: r, pattern: pattern, parent: parent})
		b.subs = append(b.subs, subscription{filter: r.From, qos: r.QoS})
	}
	if cfg.ResponseTopic != "" && cfg.Version == V5 {
		b.subs = append(b.subs, subscription{filter: cfg.ResponseTopic, qos: 1})
	}
	return b, nil
}

// Config returns the bridge's configuration with its defaults.
func (b *Bridge) Config() Config { return b.cfg }

// run is one Run of a bridge.
type run struct {
	*Bridge
	ctx       context.Context
	env       bridge.Env
	log       *slog.Logger
	client    client        // set once, before dialled is closed
	dialled   chan struct{} // closed once client is set
	storer    *storer
	connected atomic.Bool
	queue     chan *packet
	requests  chan struct{} // a semaphore for MQTT 5 requests in flight
	refused   chan error
	wg        sync.WaitGroup

	// inline's buffers and its cache of topics it published (topic →
	// route and subject), used on the client's read goroutine only.
	tsubj, subj, hdr []byte
	routes           map[string]inlineRoute

	mu      sync.Mutex
	pending map[string]time.Time // reply subject → deadline
}

// Run connects to the broker and moves messages until ctx ends (it
// returns nil) or the broker refuses the connection (it returns a
// *RefusedError). Lost connections are re-established by the client
// meanwhile, and reported in env.Status.
func (b *Bridge) Run(ctx context.Context, env bridge.Env) error {
	env.Status.SetState(bridge.StateStarting)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{
		Bridge:   b,
		ctx:      ctx,
		env:      env,
		log:      env.Logger,
		queue:    make(chan *packet, b.cfg.QueueLen),
		requests: make(chan struct{}, maxConcurrentRequests),
		refused:  make(chan error, 1),
		dialled:  make(chan struct{}),
		pending:  make(map[string]time.Time),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	defer r.wg.Wait() // after cancel, below
	defer cancel()
	for i := range b.cfg.Outbound {
		route := &b.cfg.Outbound[i]
		if route.Stream != "" {
			continue // started once the client is dialled
		}
		unsubscribe, err := env.Bus.Subscribe(route.From, "", func(m bridge.Msg) { r.fromBus(route, m) })
		if err != nil {
			env.Status.SetError(err)
			return fmt.Errorf("mqtt: subscribing to %q: %w", route.From, err)
		}
		defer unsubscribe()
	}
	if len(b.inbound) > 0 {
		s, unsubscribe, err := newStorer(r)
		if err != nil {
			env.Status.SetError(err)
			return err
		}
		defer unsubscribe()
		r.storer = s
	}
	ev := events{up: r.up, down: r.down, connectError: r.connectError, refused: r.refuse, message: r.fromBroker, inline: r.inline}
	var err error
	if b.cfg.Version == V311 {
		r.client, err = dialV311(ctx, b.cfg, b.subs, ev)
	} else {
		r.client, err = dialV5(ctx, b.cfg, b.subs, ev)
	}
	if err != nil {
		env.Status.SetError(err)
		return err
	}
	close(r.dialled)
	r.wg.Add(1)
	go r.send()
	for i := range b.cfg.Outbound {
		if route := &b.cfg.Outbound[i]; route.Stream != "" {
			r.wg.Add(1)
			go r.fromStream(route)
		}
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-r.refused:
	}
	cancel()
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 2*time.Second)
	r.client.close(closeCtx)
	closeCancel()
	r.wg.Wait()
	if runErr != nil {
		env.Status.SetState(bridge.StateDisconnected)
		env.Status.SetError(runErr)
		return runErr
	}
	env.Status.SetState(bridge.StateStopped)
	return nil
}

func (r *run) up(first bool) {
	r.connected.Store(true)
	r.env.Status.SetState(bridge.StateConnected) // counts a reconnect when it is one
	r.log.Info("mqtt bridge connected", "server", r.server, "version", r.cfg.Version.String(), "reconnect", !first)
}

func (r *run) down(err error) {
	r.connected.Store(false)
	r.env.Status.SetState(bridge.StateDisconnected)
	r.env.Status.SetError(err)
	r.log.Warn("mqtt bridge disconnected", "server", r.server, "err", err)
}

func (r *run) connectError(err error) {
	r.env.Status.SetError(err)
	r.log.Warn("mqtt bridge cannot connect", "server", r.server, "err", err)
}

func (r *run) refuse(err error) {
	select {
	case r.refused <- err:
	default:
	}
}

// fromBroker handles an inbound PUBLISH.
func (r *run) fromBroker(p *packet, ack func()) {
	if r.ctx.Err() != nil {
		return // not acknowledged: the broker redelivers it
	}
	if r.cfg.ResponseTopic != "" && p.topic == r.cfg.ResponseTopic && r.cfg.Version == V5 {
		r.answer(p)
		ack()
		return
	}
	tsubj, err := subject.SubjectFromTopic(p.topic)
	route := r.match(tsubj)
	if err != nil || route == nil {
		r.env.Status.CountDrop(bridge.DropRejected)
		if err != nil {
			r.env.Status.SetError(fmt.Errorf("mqtt: topic %q: %w", p.topic, err))
		}
		ack()
		return
	}
	subj := route.To + tsubj
	stored := route.Store && p.qos > 0
	var msgID string
	if stored && !hasProperty(p.user, headerMsgID) {
		msgID = r.msgID(p)
	}
	var hdr []byte
	if len(p.user) > 0 || p.contentType != "" || p.expiry != nil || p.retain || msgID != "" {
		hdr = appendHeader(nil, p, msgID)
		if len(hdr) == len(proto.HeaderVersion)+4 {
			hdr = nil // no field
		}
	}
	switch {
	case stored:
		r.storer.store(subj, hdr, p.payload, ack) // acknowledged once stored
		return
	case p.responseTopic != "":
		r.request(subj, hdr, p)
	default:
		if err := r.env.Bus.Publish(subj, "", hdr, p.payload); err != nil {
			r.env.Status.CountDrop(bridge.DropRejected)
			r.env.Status.SetError(err)
			ack()
			return
		}
	}
	r.env.Status.CountIn(1)
	ack()
}

// inline handles an inbound PUBLISH on the client's read goroutine when
// that cannot block: a core route's message is published on the bus
// (handled and ack true), a message no route takes is counted and
// acknowledged; a message to store, an MQTT 5 request and a device's
// answer to a NATS request are left to fromBroker (handled false). It
// allocates nothing once its buffers have grown and its topics are in
// its cache; p's fields are borrowed for the call and none is retained.
func (r *run) inline(p *packet) (handled, ack bool) {
	if r.ctx.Err() != nil {
		return true, false // not acknowledged: the broker redelivers it
	}
	if p.responseTopic != "" || (r.cfg.ResponseTopic != "" && p.topic == r.cfg.ResponseTopic) {
		return false, false
	}
	subj, ok := r.inlineSubject(p)
	if !ok {
		return false, false
	}
	var hdr []byte
	if len(p.user) > 0 || p.contentType != "" || p.expiry != nil || p.retain {
		r.hdr = appendHeader(r.hdr[:0], p, "")
		if len(r.hdr) > len(proto.HeaderVersion)+4 {
			hdr = r.hdr
		}
	}
	if err := r.env.Bus.Publish(subj, "", hdr, p.payload); err != nil {
		r.env.Status.CountDrop(bridge.DropRejected)
		r.env.Status.SetError(err)
		return true, true
	}
	r.env.Status.CountIn(1)
	return true, true
}

// inlineRoute is a topic's entry in inline's cache: the subject its
// messages are published on.
type inlineRoute struct {
	subject string
}

// maxInlineRoutes bounds inline's cache of topics; a full cache starts
// over, so a bridge seeing ever new topics keeps a bounded set.
const maxInlineRoutes = 1024

// inlineSubject returns the subject of a core route's message on
// p.topic, and false when no core route takes it (no route matches, the
// route stores QoS 1 messages, or the topic has no subject). The mapping
// and the route match of each topic are done once and cached: a site's
// devices publish on the same few topics over and over, and the routes
// of a run do not change.
func (r *run) inlineSubject(p *packet) (string, bool) {
	if e, ok := r.routes[p.topic]; ok {
		return e.subject, true
	}
	var err error
	r.tsubj, err = subject.AppendSubjectFromTopic(r.tsubj[:0], p.topic)
	if err != nil {
		return "", false // counted and reported by fromBroker
	}
	route := r.match(bytesString(r.tsubj))
	if route == nil || (route.Store && p.qos > 0) {
		return "", false
	}
	r.subj = append(append(r.subj[:0], route.To...), r.tsubj...)
	if route.Store {
		// A QoS 0 message of a stored route is published as is; its
		// QoS 1 messages on the same topic are not: not cached.
		return bytesString(r.subj), true
	}
	if r.routes == nil || len(r.routes) >= maxInlineRoutes {
		r.routes = make(map[string]inlineRoute)
	}
	e := inlineRoute{subject: string(r.subj)}
	r.routes[strings.Clone(p.topic)] = e // p.topic points into the read buffer
	return e.subject, true
}

// match returns the first inbound route whose filter matches the topic
// whose subject is tsubj.
func (r *run) match(tsubj string) *inboundRoute {
	for i := range r.inbound {
		in := &r.inbound[i]
		if subject.Match(in.pattern, tsubj) || (in.parent != "" && in.parent == tsubj) {
			return in
		}
	}
	return nil
}

// hasProperty reports whether user has a property named key (ASCII case
// ignored).
func hasProperty(user []property, key string) bool {
	for _, u := range user {
		if strings.EqualFold(u.key, key) {
			return true
		}
	}
	return false
}

// msgID is the Nats-Msg-Id of an inbound message to store: the same for
// the broker's redeliveries of one message.
func (r *run) msgID(p *packet) string {
	h := fnv.New64a()
	h.Write([]byte(p.topic))
	h.Write([]byte{0})
	h.Write(p.payload)
	return fmt.Sprintf("mqtt:%s:%d:%016x", r.cfg.Name, p.packetID, h.Sum64())
}

// store stores one message, retrying until the stream has it, refuses it
// as too large (counted as too_large; true: it is acknowledged, as it
// never fits) or Run ends (false: the message must not be
// acknowledged). Every other refusal (no stream, a full stream that
// discards new messages) is retried: the message waits at the broker.
func (r *run) store(subj string, hdr, data []byte) bool {
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.RequestTimeout)
		_, _, err := bridge.Store(ctx, r.env.Bus, subj, hdr, data)
		cancel()
		if err == nil {
			r.env.Status.CountIn(1)
			return true
		}
		if tooLarge(err) {
			r.dropTooLarge(subj, err)
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		r.env.Status.SetError(err)
		r.log.Warn("mqtt bridge: storing failed, retrying", "subject", subj, "err", err, "retry_in", wait)
		select {
		case <-time.After(wait):
		case <-r.ctx.Done():
			return false
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// tooLarge reports whether err is a stream's refusal of a message too
// large for it, which no retry can store.
func tooLarge(err error) bool {
	var refused *bridge.StoreError
	return errors.As(err, &refused) && refused.Err != nil &&
		(refused.Err.ErrCode == jsapi.ErrMessageExceedsMaximum.ErrCode || refused.Err.ErrCode == jsapi.ErrStreamHeaderExceedsMaximum.ErrCode)
}

// dropTooLarge counts and logs a message refused as too large.
func (r *run) dropTooLarge(subj string, err error) {
	r.env.Status.CountDrop(bridge.DropTooLarge)
	r.env.Status.SetError(err)
	r.log.Warn("mqtt bridge: stream refused a message as too large; dropped", "subject", subj, "err", err)
}

// request sends an MQTT 5 request to the NATS responders of subj and
// publishes the first reply to the request's response topic.
func (r *run) request(subj string, hdr []byte, p *packet) {
	data := append([]byte(nil), p.payload...)
	topic, corr, qos := p.responseTopic, append([]byte(nil), p.correlation...), p.qos
	select {
	case r.requests <- struct{}{}:
	case <-r.ctx.Done():
		return
	}
	r.wg.Add(1)
	go func() {
		defer func() { <-r.requests; r.wg.Done() }()
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.RequestTimeout)
		defer cancel()
		reply, err := r.env.Bus.Request(ctx, subj, hdr, data)
		if err != nil {
			r.env.Status.CountDrop(bridge.DropRejected)
			r.env.Status.SetError(fmt.Errorf("mqtt: request on %q: %w", subj, err))
			return
		}
		out := &packet{topic: topic, payload: reply.Data, qos: qos, correlation: corr}
		fromHeader(out, reply.Header)
		select {
		case <-r.dialled: // the request may have come before dialV5 returned
		case <-ctx.Done():
			return
		}
		if err := r.client.publish(ctx, out); err != nil {
			r.countPublishError(err)
			return
		}
		r.env.Status.CountOut(1)
	}()
}

// answer publishes an MQTT device's answer to a NATS request on the
// reply subject its correlation data names.
func (r *run) answer(p *packet) {
	reply := string(p.correlation)
	r.mu.Lock()
	deadline, ok := r.pending[reply]
	delete(r.pending, reply)
	r.mu.Unlock()
	if !ok || time.Now().After(deadline) {
		r.env.Status.CountDrop(bridge.DropRejected)
		return
	}
	hdr := appendHeader(nil, &packet{user: p.user, contentType: p.contentType, expiry: p.expiry}, "")
	if len(hdr) == len(proto.HeaderVersion)+4 {
		hdr = nil
	}
	if err := r.env.Bus.Publish(reply, "", hdr, p.payload); err != nil {
		r.env.Status.CountDrop(bridge.DropRejected)
		return
	}
	r.env.Status.CountIn(1)
}

// expect records reply as a NATS request waiting for a device's answer.
func (r *run) expect(reply string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) >= maxPendingReplies {
		var oldest string
		var oldestAt time.Time
		for k, d := range r.pending {
			if d.Before(now) {
				delete(r.pending, k)
			} else if oldest == "" || d.Before(oldestAt) {
				oldest, oldestAt = k, d
			}
		}
		if len(r.pending) >= maxPendingReplies {
			delete(r.pending, oldest)
		}
	}
	r.pending[reply] = now.Add(r.cfg.RequestTimeout)
}

// fromBus queues a bus message of an outbound route for the broker; it
// runs on the publisher's goroutine and does not block.
func (r *run) fromBus(route *OutboundRoute, m bridge.Msg) {
	if !r.connected.Load() {
		r.env.Status.CountDrop(bridge.DropNotConnected)
		return
	}
	p, ok := r.outPacket(route, m, true)
	if !ok {
		r.env.Status.CountDrop(bridge.DropRejected)
		return
	}
	select {
	case r.queue <- p:
	default:
		r.env.Status.CountDrop(bridge.DropQueueFull)
	}
}

// outPacket converts a NATS message of an outbound route into a PUBLISH
// (copying what it keeps); replies says whether m's reply subject asks
// for an answer. It reports false when the subject makes no topic.
func (r *run) outPacket(route *OutboundRoute, m bridge.Msg, replies bool) (*packet, bool) {
	rest, _ := strings.CutPrefix(string(m.Subject), route.StripPrefix)
	topic := string(subject.AppendTopicFromSubject([]byte(route.To), rest))
	if topic == "" || len(topic) > subject.MaxTopicLen {
		return nil, false
	}
	p := &packet{topic: topic, payload: append([]byte(nil), m.Data...), qos: route.QoS, retain: route.Retain}
	if r.cfg.Version == V5 {
		if len(m.Header) > 0 {
			fromHeader(p, m.Header)
		}
		if replies && len(m.Reply) > 0 && r.cfg.ResponseTopic != "" {
			p.responseTopic, p.correlation = r.cfg.ResponseTopic, append([]byte(nil), m.Reply...)
			r.expect(string(m.Reply))
		}
	}
	return p, true
}

// fromStream publishes the messages of the durable consumer of an
// outbound route with a stream, in order, acknowledging each to the
// stream once the broker accepted it; while the broker is unreachable
// they stay in the stream.
func (r *run) fromStream(route *OutboundRoute) {
	defer r.wg.Done()
	wait := r.cfg.ReconnectDelay
	for r.ctx.Err() == nil {
		if !r.awaitConnected() {
			return
		}
		c, err := bridge.Consume(r.ctx, r.env.Bus, bridge.ConsumerConfig{
			Stream: route.Stream, Durable: route.Durable, FilterSubjects: []string{route.From},
			RequestTimeout: r.cfg.RequestTimeout,
		})
		if err != nil {
			r.env.Status.SetError(err)
			r.log.Warn("mqtt bridge: no consumer on the outbound stream, retrying", "stream", route.Stream, "err", err, "retry_in", wait)
			select {
			case <-time.After(wait):
			case <-r.ctx.Done():
				return
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		wait = r.cfg.ReconnectDelay
		err = r.drain(route, c)
		c.Close()
		if err != nil && r.ctx.Err() == nil {
			r.env.Status.SetError(err)
			select {
			case <-time.After(r.cfg.ReconnectDelay):
			case <-r.ctx.Done():
			}
		}
	}
}

// drain publishes the deliveries of c until Run ends or the consumer
// fails.
func (r *run) drain(route *OutboundRoute, c *bridge.Consumer) error {
	for {
		d, err := c.Next(r.ctx)
		if err != nil {
			return err
		}
		p, ok := r.outPacket(route, d.Msg, false)
		if !ok {
			r.env.Status.CountDrop(bridge.DropRejected)
			_ = d.Term()
			continue
		}
		ctx, cancel := context.WithTimeout(r.ctx, r.cfg.RequestTimeout)
		err = r.client.publish(ctx, p)
		cancel()
		var refused *PublishRefusedError
		switch {
		case err == nil:
			_ = d.Ack()
			r.env.Status.CountOut(1)
		case errors.As(err, &refused):
			r.env.Status.CountDrop(bridge.DropRejected)
			r.env.Status.SetError(err)
			_ = d.Term()
		default:
			// The connection failed under the publish (or is down): sent
			// again, first, once the broker is back.
			_ = d.Nak(0)
			if r.ctx.Err() != nil {
				return nil
			}
			select {
			case <-time.After(r.cfg.ReconnectDelay): // let the client notice the loss
			case <-r.ctx.Done():
				return nil
			}
			if !r.awaitConnected() {
				return nil
			}
		}
	}
}

// awaitConnected waits until the broker is connected; false when Run
// ends first.
func (r *run) awaitConnected() bool {
	err := r.env.Status.Wait(r.ctx, func(bridge.Snapshot) bool { return r.connected.Load() })
	return err == nil
}

// send publishes the queued outbound messages in order.
func (r *run) send() {
	defer r.wg.Done()
	for {
		select {
		case p := <-r.queue:
			ctx, cancel := context.WithTimeout(r.ctx, r.cfg.RequestTimeout)
			err := r.client.publish(ctx, p)
			cancel()
			if err != nil {
				r.countPublishError(err)
				continue
			}
			r.env.Status.CountOut(1)
		case <-r.ctx.Done():
			return
		}
	}
}

// countPublishError counts a publish the broker did not take.
func (r *run) countPublishError(err error) {
	if errors.Is(err, errNotConnected) || r.ctx.Err() != nil {
		r.env.Status.CountDrop(bridge.DropNotConnected)
		return
	}
	r.env.Status.CountDrop(bridge.DropRejected)
	r.env.Status.SetError(err)
}
