package leaf

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
)

// Texts of the -ERR lines an accepting side sends, as nats-server words
// them (leafnode.go, errors.go, client.go).
const (
	errTextAuthorization = "Authorization Violation"
	errTextAuthTimeout   = "Authentication Timeout"
	errTextClientOnLeaf  = "attempted to connect to leaf node port"
	errTextDuplicate     = "Duplicate Remote LeafNode Connection"
)

// ErrAuthorization is why an accepted connection ended whose CONNECT
// carried credentials the Listener refused.
var ErrAuthorization = errors.New("leaf: authorization violation")

// peer is one accepted leaf connection: the shared connection core plus
// what the accepting side adds. Its goroutine (run) does the handshake and
// then reads; the writer goroutine is the only writer once the leaf is
// registered. Local publishers append to the outbound buffer under mu,
// as on a session; mu also guards the local interest the leaf is told of.
//
// Lock order: broker locks (interest watch) → peer.mu. No lock of the
// peer is held while calling AcceptLocal or a LocalConn.
type peer struct {
	*connection
	l  *Listener
	id uint64

	// Owned by the peer goroutine.
	nonce string
	subs  map[interestKey][]Subscription // local subscriptions per leaf interest: one, or one per queue member

	// Set by the handshake, read-only afterwards.
	name          string // the leaf's server name (CONNECT name)
	serverID      string
	remoteAccount string
	account       string // local account the leaf is bound to
	local         AcceptConn
	perms         *perms
	lds           string       // our loop-detection subject for account
	remote        *hubInterest // the leaf's interest; maps reader-owned
	cancelWatch   func()

	gone atomic.Bool // the connection ended; cleanup under way

	// Guarded by mu.
	interest *localInterest // local interest the leaf is told of
	watch    watchGate[AcceptInterest]
	announce bool // the leaf is registered: interest changes go out
	subjects []string
}

func newPeer(l *Listener, id uint64, conn net.Conn) *peer {
	return &peer{
		connection: newConnection(conn, l.cfg.connSettings(&l.slowConsumers), time.Now()),
		l:          l,
		id:         id,
		subs:       make(map[interestKey][]Subscription),
		remote:     newHubInterest(),
		interest:   newLocalInterest(),
	}
}

// run serves the connection until it ends.
func (p *peer) run() {
	defer p.l.forget(p)
	err := p.handshake()
	if err == nil {
		p.local, err = p.l.local.Connect(p.account, p.forward)
		if err != nil {
			p.writeNow(proto.AppendErr(nil, errTextAuthorization))
		}
	}
	if err != nil {
		p.end(err)
		p.l.log.Warn("leaf: refused leafnode connection", "remote", p.raw.RemoteAddr().String(), "error", err)
		return
	}
	readErr := p.serve(p.register, p.handle)
	p.gone.Store(true) // no longer a queue-group owner
	p.l.leaveRelay(p)
	p.cancelWatch()
	for _, subs := range p.subs {
		for _, sub := range subs {
			sub.Unsubscribe()
		}
	}
	p.local.Close()
	err = p.reason(readErr)
	p.l.log.Info("leaf: leafnode connection closed", "name", p.name, "account", p.account, "error", err)
}

// handshake runs the accepting side of the handshake (leafnode.go
// createLeafNode, processLeafnodeInfo, negotiateLeafCompression,
// processLeafNodeConnect): send INFO with a nonce, upgrade to TLS when
// configured, negotiate S2 when the leaf sends its own INFO first, then
// read and check CONNECT, all within AuthTimeout.
func (p *peer) handshake() error {
	cfg := &p.l.cfg
	p.nonce = auth.NewNonce()
	info := p.l.info(p.id, p.nonce)
	if err := p.writeNow(appendInfo(nil, &info)); err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.AuthTimeout)
	if cfg.TLS != nil {
		tc := tls.Server(p.conn, cfg.TLS)
		if err := tc.SetDeadline(deadline); err != nil {
			return err
		}
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("leaf: tls handshake: %w", err)
		}
		p.conn, p.rd = tc, tc
	}
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	negotiated := false
	for {
		op, err := p.next()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				p.writeNow(proto.AppendErr(nil, errTextAuthTimeout))
				return fmt.Errorf("leaf: no CONNECT within %v", cfg.AuthTimeout)
			}
			if errors.Is(err, ErrProtocol) {
				p.writeNow(proto.AppendErr(nil, errTextUnknownOp))
			}
			return err
		}
		switch op.Kind {
		case proto.OpInfo:
			if negotiated {
				continue
			}
			negotiated = true
			if err := p.negotiate(op.Arg, &info); err != nil {
				return err
			}
		case proto.OpPing:
			if err := p.writeNow([]byte(proto.PongLine)); err != nil {
				return err
			}
		case proto.OpPong:
		case proto.OpConnect:
			if err := p.connect(op.Arg); err != nil {
				return err
			}
			return p.conn.SetReadDeadline(time.Time{})
		default:
			p.writeNow(proto.AppendErr(nil, errTextAuthorization))
			return fmt.Errorf("%w: %v before CONNECT", ErrProtocol, op.Kind)
		}
	}
}

// negotiate handles the leaf's INFO, which a leaf sends to negotiate
// compression: when both sides compress, every byte after that INFO is S2
// in both directions, starting with our second INFO (same nonce).
func (p *peer) negotiate(arg []byte, info *proto.Info) error {
	cfg := &p.l.cfg
	var theirs proto.Info
	if err := json.Unmarshal(arg, &theirs); err != nil {
		return fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
	}
	if !needsCompression(cfg.Compression) {
		return nil
	}
	mode, err := selectCompression(cfg.Compression, theirs.Compression)
	if err != nil {
		p.writeNow(proto.AppendErr(nil, err.Error()))
		return err
	}
	if mode == CompressionS2Auto {
		mode = autoLevel(time.Since(p.started), cfg.RTTThresholds)
	}
	p.compression = mode
	if !compresses(mode) {
		return nil
	}
	// Bytes read past the leaf's INFO are already compressed.
	pre := bytes.Clone(p.rest)
	p.rest = nil
	p.rd = s2.NewReader(io.MultiReader(bytes.NewReader(pre), p.conn))
	p.comp = newCompressor(p.conn, mode)
	second := *info
	if cfg.Compression != CompressionS2Auto {
		second.Compression = mode
	}
	return p.writeNow(appendInfo(nil, &second))
}

// connect checks the leaf's CONNECT and binds the connection to an
// account.
func (p *peer) connect(arg []byte) error {
	c, err := proto.ParseConnect(arg)
	if err != nil {
		p.writeNow(proto.AppendErr(nil, "Invalid CONNECT"))
		return fmt.Errorf("%w: CONNECT: %v", ErrProtocol, err)
	}
	if c.Lang != "" {
		p.writeNow(proto.AppendErr(nil, errTextClientOnLeaf))
		return fmt.Errorf("%w: a client connected to the leafnode port", ErrProtocol)
	}
	if c.Gateway != "" {
		text := fmt.Sprintf("Rejecting connection from gateway %q on the leafnode port", c.Gateway)
		p.writeNow(proto.AppendErr(nil, text))
		return fmt.Errorf("%w: %s", ErrProtocol, text)
	}
	account := p.l.cfg.Account
	if p.l.authn != nil {
		creds := auth.Credentials{User: c.User, Pass: c.Pass, Token: c.AuthToken, Nkey: c.Nkey, Sig: c.Sig, JWT: c.JWT}
		id, err := p.l.authn.Authenticate(creds, p.nonce)
		if err != nil {
			p.writeNow(proto.AppendErr(nil, errTextAuthorization))
			return fmt.Errorf("%w: %v", ErrAuthorization, err)
		}
		if id.User != "" || account == "" {
			account = id.Account
		}
	}
	if account == "" {
		account = globalAccount
	}
	p.account = account
	p.name = c.Name
	p.serverID = c.ServerID
	p.remoteAccount = c.RemoteAccount
	p.headers = c.Headers
	if p.compression == "" {
		p.compression = compressionNotSupported
		if c.CompressMode != "" {
			p.compression = c.CompressMode
		}
	}
	// The JetStream deny set both ways, and what the leaf asked not to
	// receive (its deny_imports, sent as deny_pub).
	pubDeny := slices.Clone(jsDeny)
	for _, s := range c.DenyPub {
		if subject.Valid(s) {
			pubDeny = append(pubDeny, s)
		}
	}
	if cfg := &p.l.cfg; cfg.JetStream && cfg.Domain != "" {
		// Requests for our own domain are served here and never go to a
		// leaf (nats-server's blockMappingOutgoing: we share no system
		// account with a leaf, so it applies whatever the leaf's domain).
		pubDeny = append(pubDeny, "$JS."+cfg.Domain+".API.>")
	}
	p.perms = &perms{sub: auth.NewFilter(nil, jsDeny), pub: auth.NewFilter(nil, pubDeny)}
	p.lds = loopSubject(p.l.cfg.ServerID, account)
	return nil
}

// register answers CONNECT with the INFO carrying connect_info, then
// announces the local interest and our loop-detection subject, and pings
// to measure the RTT (leafnode.go sendPermsAndAccountInfo,
// initLeafNodeSmapAndSendSubs).
func (p *peer) register() {
	info := p.l.info(p.id, "")
	info.ConnectInfo = true
	info.RemoteAccount = p.account
	info.Compression = ""
	p.enqueue(appendInfo(nil, &info))

	existing, cancel := p.l.local.WatchInterest(p.account, p.onInterest)
	p.cancelWatch = cancel
	p.mu.Lock()
	p.watch.open(existing, p.applyLocked)
	p.announceLocked(p.interest, p.perms.canSubscribe, p.lds)
	p.announce = true
	p.mu.Unlock()
	p.kick()
	p.l.joinRelay(p)
	_ = p.ping(nil)

	if old := p.l.register(p); old != nil {
		old.finish(proto.AppendErr(nil, errTextDuplicate), errors.New("leaf: replaced by a new connection from the same server"))
	}
	p.l.log.Info("leaf: leafnode connection registered", "name", p.name, "remote", p.raw.RemoteAddr().String(),
		"account", p.account, "remote_account", p.remoteAccount, "compression", p.compression)
}

// onInterest receives the local account's subscription changes; it runs
// with the broker's locks held.
func (p *peer) onInterest(ev AcceptInterest) {
	if ev.From != nil {
		return // a leaf's: its own, or relayed by the Listener
	}
	p.mu.Lock()
	p.watch.offer(ev, p.applyLocked)
	p.mu.Unlock()
	p.kick()
}

// applyLocked applies one local change and queues the LS+/LS- it calls
// for once the leaf is registered. p.mu is held.
func (p *peer) applyLocked(ev AcceptInterest) {
	if ev.From != nil {
		return
	}
	key, count, notify := p.interest.apply(ev.Interest, nil)
	if notify && p.announce && p.perms.canSubscribe(key.subject) {
		p.queueInterestLocked(key, count)
	}
}

// applyRelayed applies a change of another leaf's interest (delta in
// weight) and queues the LS+/LS- it calls for.
func (p *peer) applyRelayed(key interestKey, delta int32) {
	p.mu.Lock()
	count, notify := p.interest.change(key, delta)
	if notify && p.announce && p.perms.canSubscribe(key.subject) {
		p.queueInterestLocked(key, count)
	}
	p.mu.Unlock()
	p.kick()
}

// handle processes one operation from the leaf.
func (p *peer) handle(op *proto.Op) error {
	if p.handleKeepalive(op) {
		return nil
	}
	switch op.Kind {
	case proto.OpLeafMsg:
		return p.deliver(op)
	case proto.OpLeafSub:
		return p.leafSubscribe(op)
	case proto.OpLeafUnsub:
		p.leafUnsubscribe(op)
	case proto.OpInfo, proto.OpOK:
	case proto.OpErr:
		text := string(op.Arg)
		p.l.log.Warn("leaf: leafnode error", "name", p.name, "error", text)
		if strings.Contains(text, loopText) {
			return ErrLoopDetected
		}
	default:
		return fmt.Errorf("%w: unexpected %v", ErrProtocol, op.Kind)
	}
	return nil
}

// violation ends the connection with -ERR text.
func (p *peer) violation(text string) error {
	p.l.log.Warn("leaf: "+text, "name", p.name)
	p.finish(proto.AppendErr(nil, text), fmt.Errorf("%w: %s", ErrProtocol, text))
	return nil
}

// leafSubscribe handles LS+ from the leaf.
func (p *peer) leafSubscribe(op *proto.Op) error {
	subj := string(op.Subject)
	if subj == p.lds {
		text := fmt.Sprintf("Loop detected for leafnode account=%q. Delaying attempt to reconnect for %v", p.account, loopDelay)
		p.l.log.Error("leaf: "+text, "name", p.name)
		p.finish(proto.AppendErr(nil, text), ErrLoopDetected)
		return nil
	}
	if subject.IsLiteral(subj) && !p.perms.canPublish(subj) {
		return p.violation(fmt.Sprintf("Permissions Violation for Subscription to %q", subj))
	}
	queue := string(op.Queue)
	weight := int32(1)
	if queue != "" {
		weight = max(op.Weight, 1)
	}
	if _, err := p.remote.add(subj, queue, weight); err != nil {
		p.l.log.Warn("leaf: ignoring invalid leaf interest", "subject", subj, "queue", queue)
		return nil
	}
	key := interestKey{subj, queue}
	p.l.relayInterest(p, key, weight)
	p.subscribeLocally(key, weight)
	p.setSubjects()
	return nil
}

// maxQueueMembers caps the local members that stand for one queue group of
// a leaf. The local broker has no weights: a leaf's queue interest of
// weight w becomes min(w, maxQueueMembers) members, so a solicited link
// announces that weight to its hub.
const maxQueueMembers = 128

// subscribeLocally makes the leaf's local subscriptions for key match
// weight: one plain subscription, or one queue member per unit of weight
// (capped); weight 0 removes them.
func (p *peer) subscribeLocally(key interestKey, weight int32) {
	want := int(min(weight, maxQueueMembers))
	if key.queue == "" {
		want = min(want, 1)
	}
	subs := p.subs[key]
	for len(subs) < want {
		sub, err := p.local.Subscribe(key.subject, key.queue)
		if err != nil {
			p.l.log.Warn("leaf: cannot subscribe locally for leaf interest", "subject", key.subject, "queue", key.queue, "error", err)
			break
		}
		subs = append(subs, sub)
	}
	for len(subs) > want {
		subs[len(subs)-1].Unsubscribe()
		subs = subs[:len(subs)-1]
	}
	if len(subs) == 0 {
		delete(p.subs, key)
	} else {
		p.subs[key] = subs
	}
}

// leafUnsubscribe handles LS-.
func (p *peer) leafUnsubscribe(op *proto.Op) {
	key := interestKey{string(op.Subject), string(op.Queue)}
	p.l.relayInterest(p, key, 0)
	p.remote.remove(key.subject, key.queue)
	p.subscribeLocally(key, 0)
	p.setSubjects()
}

// setSubjects publishes the leaf's interest for Status and wakes Wait.
func (p *peer) setSubjects() {
	subjects := make([]string, 0, len(p.remote.entries))
	for k := range p.remote.entries {
		s := k.subject
		if k.queue != "" {
			s += " " + k.queue
		}
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	p.mu.Lock()
	p.subjects = subjects
	p.mu.Unlock()
	p.l.interestChanged()
}

// deliver publishes a message from the leaf locally, through the no-echo
// connection, so it never returns to this leaf.
func (p *peer) deliver(op *proto.Op) error {
	shown, reply, hdr, data := p.received(op)
	subj := op.Subject
	if !p.perms.canReceive(unsafe.String(unsafe.SliceData(subj), len(subj))) {
		return p.violation(fmt.Sprintf("Permissions Violation for Publish to %q", subj))
	}
	p.local.PublishQueues(subj, shown, reply, op.Queues, hdr, data)
	return nil
}

// forward sends a local message to the leaf, once, as the broker chose it
// for the leaf's subscriptions: on the publisher's goroutine, naming the
// leaf's queue groups in which the broker chose the leaf's member. The
// LMSG goes to the subject the broker routed by: for a JetStream delivery
// (to a deliver subject or pull inbox) the stored message's subject rides
// after '@' in the ack reply, as nats-server encodes it, and the leaf
// shows it to its subscriber.
func (p *peer) forward(d Delivery) {
	route := d.Route
	if len(route) == 0 {
		route = d.Subject
	}
	if !p.perms.canPublish(unsafe.String(unsafe.SliceData(route), len(route))) {
		return
	}
	var queueBuf [maxInlineQueues][]byte
	queues := queueBuf[:0]
	for _, name := range d.Queues {
		queues = append(queues, queueName(name))
	}
	if !d.Plain && len(queues) == 0 {
		return
	}
	p.sendLocal(route, d.Msg, queues)
}

// status returns a snapshot for /leafz.
func (p *peer) status() AcceptedStatus {
	p.mu.Lock()
	subjects := p.subjects
	since := p.connectedAt
	p.mu.Unlock()
	return AcceptedStatus{
		ID:             p.id,
		Name:           p.name,
		ServerID:       p.serverID,
		RemoteAddr:     p.raw.RemoteAddr().String(),
		Account:        p.account,
		RemoteAccount:  p.remoteAccount,
		RTT:            time.Duration(p.rtt.Load()),
		InMsgs:         p.inMsgs.Load(),
		InBytes:        p.inBytes.Load(),
		OutMsgs:        p.outMsgs.Load(),
		OutBytes:       p.outBytes.Load(),
		Subjects:       subjects,
		Compression:    p.compressionLevel(),
		ConnectedSince: since,
	}
}

// appendInfo appends an INFO line.
func appendInfo(dst []byte, info *proto.Info) []byte {
	arg, _ := json.Marshal(info) // a plain struct: cannot fail
	dst = append(dst, "INFO "...)
	dst = append(dst, arg...)
	return append(dst, "\r\n"...)
}
