package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Defaults of ConsumerConfig.
const (
	DefaultAckWait        = 30 * time.Second
	DefaultPullExpires    = 30 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// apiPrefix is the local JetStream API.
const apiPrefix = "$JS.API."

// ErrConsumerDeleted is returned by Consumer.Next when the stream or the
// consumer was deleted under it; a bridge returns it from Run, and the
// next Run creates the consumer again.
var ErrConsumerDeleted = errors.New("bridge: durable consumer deleted")

// ConsumerConfig is the durable pull consumer a bridge takes outbound
// messages from.
type ConsumerConfig struct {
	// Stream is the local stream; required.
	Stream string
	// Durable is the consumer's durable name; required. The position
	// survives restarts of the bridge and of leafbox.
	Durable string
	// FilterSubjects restricts the consumer to these subjects; empty is
	// the whole stream.
	FilterSubjects []string
	// AckWait is how long a delivery may stay unacknowledged before the
	// stream sends it again (DefaultAckWait when 0).
	AckWait time.Duration
	// MaxAckPending bounds the deliveries awaiting their ack (1 when 0).
	// With 1 the device sees the stream's order through any failure;
	// above 1 a message nak'ed or lost may come after later ones.
	MaxAckPending int
	// PullExpires is how long one pull request waits for messages
	// before it is sent again (DefaultPullExpires when 0).
	PullExpires time.Duration
	// RequestTimeout bounds the consumer create request and AckSync
	// (DefaultRequestTimeout when 0).
	RequestTimeout time.Duration
}

// withDefaults returns c with its zero fields set.
func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 1
	}
	if c.PullExpires <= 0 {
		c.PullExpires = DefaultPullExpires
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}

// Consumer takes messages from a durable pull consumer on a local
// JetStream stream, over a Bus. Next is called from one goroutine (the
// bridge's outbound loop); a Delivery may be acknowledged from any.
//
// Wire: Consume sends $JS.API.CONSUMER.CREATE.<stream>.<durable> with an
// explicit-ack, deliver-all durable configuration (creating the consumer
// or updating it to this configuration; a delivery still pending from an
// earlier session is nak'ed at once when MaxAckPending is 1, so a durable
// belongs to one bridge), and subscribes an inbox; Next
// sends $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable> with
// {"batch":MaxAckPending,"expires":PullExpires} whenever no pull is
// outstanding, and reads the deliveries and the status messages (100
// heartbeats are ignored; 408 and 409 end the pull; 409 Consumer Deleted
// and 503, no consumer, are ErrConsumerDeleted). Acks go to each delivery's $JS.ACK reply
// subject: "+ACK", "-NAK" with an optional {"delay":ns}, "+TERM".
type Consumer struct {
	bus   Bus
	cfg   ConsumerConfig
	inbox string // prefix of the pull inboxes, ends with "."
	unsub func()

	signal chan struct{} // one token: the queue grew

	// mu guards the queue filled by the inbox handler, and the
	// deliveries not yet acknowledged; it is a leaf.
	mu      sync.Mutex
	queue   []Msg
	unacked map[string]struct{} // reply subjects
	closed  bool

	// The pull state belongs to Next's goroutine.
	pulls     uint64
	pullOpen  bool      // a pull request is outstanding
	remaining int       // deliveries the outstanding pull may still bring
	deadline  time.Time // when the outstanding pull is given up
}

// Delivery is one message from a Consumer. Its Msg's slices are its own.
// Exactly one of Ack, AckSync, Nak or Term settles it; settling it again
// does nothing.
type Delivery struct {
	Msg
	// Stream and Sequence name the stored message.
	Stream   string
	Sequence uint64
	// NumDelivered counts its deliveries, this one included (above 1 it
	// is a redelivery).
	NumDelivered uint64
	// NumPending counts the messages behind it when it was sent.
	NumPending uint64

	c *Consumer
}

// Consume creates (or binds again) the durable consumer cfg describes and
// returns a Consumer reading it. Close it when done.
func Consume(ctx context.Context, bus Bus, cfg ConsumerConfig) (*Consumer, error) {
	cfg = cfg.withDefaults()
	if err := jsapi.CheckName(cfg.Stream); err != nil {
		return nil, fmt.Errorf("bridge: consumer stream %q: %w", cfg.Stream, err)
	}
	if err := jsapi.CheckName(cfg.Durable); err != nil {
		return nil, fmt.Errorf("bridge: consumer durable %q: %w", cfg.Durable, err)
	}
	c := &Consumer{bus: bus, cfg: cfg, inbox: newInbox() + ".", unacked: map[string]struct{}{}, signal: make(chan struct{}, 1)}
	if err := c.create(ctx); err != nil {
		return nil, err
	}
	unsub, err := bus.Subscribe(c.inbox+">", "", c.receive)
	if err != nil {
		return nil, fmt.Errorf("bridge: consumer %s on %s: subscribing the inbox: %w", cfg.Durable, cfg.Stream, err)
	}
	c.unsub = unsub
	return c, nil
}

// create sends the consumer create request.
func (c *Consumer) create(ctx context.Context) error {
	cc := jsapi.ConsumerConfig{
		Durable:       c.cfg.Durable,
		DeliverPolicy: jsapi.DeliverAll,
		AckPolicy:     jsapi.AckExplicit,
		AckWait:       c.cfg.AckWait,
		MaxDeliver:    -1,
		ReplayPolicy:  jsapi.ReplayInstant,
		MaxAckPending: c.cfg.MaxAckPending,
	}
	switch len(c.cfg.FilterSubjects) {
	case 0:
	case 1:
		cc.FilterSubject = c.cfg.FilterSubjects[0]
	default:
		cc.FilterSubjects = c.cfg.FilterSubjects
	}
	body, err := json.Marshal(jsapi.ConsumerCreateRequest{Stream: c.cfg.Stream, Config: cc})
	if err != nil {
		return err
	}
	subj := apiPrefix + "CONSUMER.CREATE." + c.cfg.Stream + "." + c.cfg.Durable
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	reply, err := c.bus.Request(ctx, subj, nil, body)
	if err != nil {
		return fmt.Errorf("bridge: consumer %s on %s: %w", c.cfg.Durable, c.cfg.Stream, err)
	}
	if code, _ := proto.ParseStatus(reply.Header); code == 503 {
		return fmt.Errorf("bridge: consumer %s on %s: no JetStream answers (is it enabled?)", c.cfg.Durable, c.cfg.Stream)
	}
	var resp jsapi.ConsumerCreateResponse
	apiErr, err := jsapi.DecodeReply(reply.Data, &resp)
	switch {
	case err != nil:
		return fmt.Errorf("bridge: consumer %s on %s: invalid answer: %w", c.cfg.Durable, c.cfg.Stream, err)
	case apiErr != nil:
		return fmt.Errorf("bridge: consumer %s on %s: %w", c.cfg.Durable, c.cfg.Stream, apiErr)
	}
	// With one delivery outstanding at most, one still pending was sent
	// to an earlier session that is gone (the stream may have sent it
	// just as that session's inbox closed): ask for it again now rather
	// than after the ack wait. Its v1 ack subject is rebuilt from the
	// delivered pair.
	if info := resp.ConsumerInfo; info != nil && c.cfg.MaxAckPending == 1 && info.NumAckPending == 1 {
		subj := fmt.Sprintf("%s%s.%s.1.%d.%d.0.0", ackPrefix, c.cfg.Stream, c.cfg.Durable, info.Delivered.Stream, info.Delivered.Consumer)
		_ = c.bus.Publish(subj, "", nil, []byte("-NAK"))
	}
	return nil
}

// receive is the inbox handler: it queues a copy and wakes Next. It runs
// on the stream's delivery goroutine and never blocks.
func (c *Consumer) receive(m Msg) {
	cp := Msg{Subject: clone(m.Subject), Reply: clone(m.Reply), Header: clone(m.Header), Data: clone(m.Data)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, cp)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// clone copies b; nil stays nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Next returns the next message, pulling as needed, or ctx's error, or
// ErrConsumerDeleted, or an error when the pull cannot be sent.
func (c *Consumer) Next(ctx context.Context) (*Delivery, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if !c.pullOpen {
			if err := c.pull(); err != nil {
				return nil, err
			}
		}
		for _, m := range c.take() {
			d, err := c.handle(m)
			if err != nil || d != nil {
				return d, err
			}
		}
		if !c.pullOpen {
			continue
		}
		timer.Reset(time.Until(c.deadline))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			c.pullOpen = false // lost: send another
		case <-c.signal:
		}
	}
}

// take empties the queue; when a delivery is among the messages, those
// after it stay queued for the next call.
func (c *Consumer) take() []Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.queue {
		if len(m.Reply) > 0 && strings.HasPrefix(string(m.Reply), ackPrefix) {
			out := c.queue[: i+1 : i+1]
			c.queue = c.queue[i+1:]
			return out
		}
	}
	out := c.queue
	c.queue = nil
	return out
}

// ackPrefix starts the reply subject of every delivery.
const ackPrefix = "$JS.ACK."

// handle interprets one inbox message: a delivery, or a status that ends
// the pull (or ends the consumer).
func (c *Consumer) handle(m Msg) (*Delivery, error) {
	if code, desc := proto.ParseStatus(m.Header); code != 0 && len(m.Data) == 0 && !strings.HasPrefix(string(m.Reply), ackPrefix) {
		switch {
		case code == 100: // heartbeat or flow control: the pull goes on
		case code == 409 && (string(desc) == jsapi.StatusConsumerDeleted || string(desc) == jsapi.StatusConsumerIsPush):
			c.pullOpen = false
			return nil, fmt.Errorf("%w: %s on %s: %s", ErrConsumerDeleted, c.cfg.Durable, c.cfg.Stream, desc)
		case code == 503: // no such consumer (or no JetStream) to pull from
			c.pullOpen = false
			return nil, fmt.Errorf("%w: %s on %s: no consumer answers the pull", ErrConsumerDeleted, c.cfg.Durable, c.cfg.Stream)
		default: // 404, 408, 409: this pull is over
			c.pullOpen = false
		}
		return nil, nil
	}
	d := &Delivery{Msg: m, c: c}
	if !ParseDelivery(string(m.Reply), d) {
		return nil, nil // not a delivery of this consumer: ignore
	}
	c.mu.Lock()
	c.unacked[string(m.Reply)] = struct{}{}
	c.mu.Unlock()
	if c.remaining--; c.remaining <= 0 {
		c.pullOpen = false
	}
	return d, nil
}

// ParseDelivery fills d's Stream, Sequence, NumDelivered and NumPending
// from a delivery's reply subject, a v1 ($JS.ACK.<stream>.<consumer>.
// <delivered>.<sseq>.<dseq>.<ts>.<pending>) or v2 ($JS.ACK.<domain>.
// <hash>.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>[.…])
// ack subject, and reports whether reply is one.
func ParseDelivery(reply string, d *Delivery) bool {
	if !strings.HasPrefix(reply, ackPrefix) {
		return false
	}
	toks := strings.Split(strings.TrimPrefix(reply, ackPrefix), ".")
	switch {
	case len(toks) == 7:
	case len(toks) >= 9:
		toks = toks[2:]
	default:
		return false
	}
	var errs [3]error
	d.Stream = toks[0]
	d.NumDelivered, errs[0] = strconv.ParseUint(toks[2], 10, 64)
	d.Sequence, errs[1] = strconv.ParseUint(toks[3], 10, 64)
	d.NumPending, errs[2] = strconv.ParseUint(toks[6], 10, 64)
	return errs[0] == nil && errs[1] == nil && errs[2] == nil
}

// pull sends a pull request for up to MaxAckPending messages.
func (c *Consumer) pull() error {
	c.pulls++
	body, err := json.Marshal(jsapi.NextRequest{Batch: c.cfg.MaxAckPending, Expires: c.cfg.PullExpires})
	if err != nil {
		return err
	}
	subj := apiPrefix + "CONSUMER.MSG.NEXT." + c.cfg.Stream + "." + c.cfg.Durable
	if err := c.bus.Publish(subj, c.inbox+strconv.FormatUint(c.pulls, 10), nil, body); err != nil {
		return fmt.Errorf("bridge: consumer %s on %s: pull: %w", c.cfg.Durable, c.cfg.Stream, err)
	}
	c.pullOpen = true
	c.remaining = c.cfg.MaxAckPending
	// A little past the expiry: the stream's 408 normally comes first.
	c.deadline = time.Now().Add(c.cfg.PullExpires + c.cfg.PullExpires/10 + 100*time.Millisecond)
	return nil
}

// Close naks the deliveries not yet settled (taken by Next or not), so that they come again at
// once to the next Consumer, and drops the inbox; outstanding pulls end
// with it. Calling it again does nothing.
func (c *Consumer) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	pending := make([]string, 0, len(c.unacked))
	for reply := range c.unacked {
		pending = append(pending, reply)
	}
	// Deliveries that arrived but were not taken by Next yet.
	for _, m := range c.queue {
		if strings.HasPrefix(string(m.Reply), ackPrefix) {
			pending = append(pending, string(m.Reply))
		}
	}
	clear(c.unacked)
	c.queue = nil
	c.mu.Unlock()
	if c.unsub != nil {
		c.unsub()
	}
	for _, reply := range pending {
		_ = c.bus.Publish(reply, "", nil, []byte("-NAK"))
	}
}

// settle forgets d as unacknowledged; it reports false when d was
// settled already (or the consumer closed, which nak'ed it).
func (d *Delivery) settle() bool {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.unacked[string(d.Reply)]; !ok {
		return false
	}
	delete(c.unacked, string(d.Reply))
	return true
}

// Ack acknowledges the delivery: the device accepted it. The stream
// applies it before Publish returns (in-process) and persists the
// consumer's position shortly after; use AckSync to wait for that.
func (d *Delivery) Ack() error {
	if !d.settle() {
		return nil
	}
	return d.c.bus.Publish(string(d.Reply), "", nil, []byte("+ACK"))
}

// AckSync acknowledges the delivery and waits until the stream confirms
// it is recorded durably, so that a crash now cannot send it again.
func (d *Delivery) AckSync(ctx context.Context) error {
	if !d.settle() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.c.cfg.RequestTimeout)
	defer cancel()
	reply, err := d.c.bus.Request(ctx, string(d.Reply), nil, []byte("+ACK"))
	if err != nil {
		return fmt.Errorf("bridge: ack of %s #%d: %w", d.Stream, d.Sequence, err)
	}
	if code, _ := proto.ParseStatus(reply.Header); code >= 300 {
		return fmt.Errorf("bridge: ack of %s #%d: status %d", d.Stream, d.Sequence, code)
	}
	return nil
}

// Nak asks the stream to send the message again after delay (0: at
// once), as when the device refused it or was not connected.
func (d *Delivery) Nak(delay time.Duration) error {
	if !d.settle() {
		return nil
	}
	body := []byte("-NAK")
	if delay > 0 {
		opts, _ := json.Marshal(jsapi.NakOptions{Delay: delay})
		body = append(append(body, ' '), opts...)
	}
	return d.c.bus.Publish(string(d.Reply), "", nil, body)
}

// Term tells the stream never to send the message again: the device can
// never accept it (too large, invalid for it). Count it as a drop.
func (d *Delivery) Term() error {
	if !d.settle() {
		return nil
	}
	return d.c.bus.Publish(string(d.Reply), "", nil, []byte("+TERM"))
}

// newInbox returns a new unique inbox subject.
func newInbox() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var b [22]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "_INBOX." + string(b[:])
}
