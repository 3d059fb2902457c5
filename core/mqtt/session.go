package mqtt

import (
	"crypto/rand"
	"encoding/base32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/subject"
)

// neverExpires is the session expiry interval of a session that never
// expires (MQTT 5 §3.1.2.11.2), and that of a 3.1.1 session with clean
// session 0.
const neverExpires = 0xFFFFFFFF

// inboxPrefix starts the reply subjects of MQTT 5 requests; see
// session.requestReply.
const inboxPrefix = "$MQTT.RI."

// maxRequests bounds the requests a session remembers replies for.
const maxRequests = 1024

// requestTTL is how long a request's replies are routed back.
const requestTTL = 5 * time.Minute

// subscription is one topic filter of a session with its broker
// subscriptions.
type subscription struct {
	Sub
	subs []*server.Subscription
}

// outMsg is a QoS 1 or 2 message waiting for or in flight to the client.
type outMsg struct {
	QueuedMsg
	subIDs []int
	sent   bool // sent at least once on some connection: resend with DUP
}

// request is an MQTT 5 request whose replies, published to its reply
// subject, go back to the requester on its response topic.
type request struct {
	topic       string
	correlation []byte
	expires     time.Time
}

// session is an MQTT session: its subscriptions (broker subscriptions on
// the mapped subjects), the QoS 1 and 2 messages for it, and the incoming
// QoS 2 packet ids; it outlives its connections when persistent.
//
// Lock order: session.mu → conn.mu. Broker deliveries call deliver with
// no lock held; deliver takes session.mu and may take conn.mu (to queue
// a packet). Calls into State happen without session.mu, except where
// noted, so a slow store never stalls publishers.
//
// An idle session holds no goroutine and, until it needs them, no maps
// and no broker connections: its worker runs while deliveries wait to be
// queued, its broker connections are made on its first subscription or
// publish, its maps on their first entry, and the rest of its state (its
// queues, QoS state, requests and timers: sessionMore) on first use, so a
// session without subscriptions or pending state is a small record.
type session struct {
	srv      *Server
	clientID string
	// ident is the identity of the session's client (its account never
	// changes; user and permissions are the latest connection's). A
	// restored session's has no permissions until the client is back.
	ident *auth.Identity
	// localData marks the payload being published by this session, for
	// no-local: a delivery whose Data is it came from this session.
	localData atomic.Pointer[byte]

	mu      sync.Mutex
	bus     *server.Conn             // combined: plain subscriptions, publishes; nil until needed
	conn    *conn                    // nil while disconnected
	subs    map[string]*subscription // by filter as subscribed ($share/... included)
	x       *sessionMore             // nil until needed
	expiry  uint32
	version byte
	durable bool // queue and session kept in State
	ended   bool
	stopped bool // broker connections closed: no more made
	working bool // the worker runs
	empty   [1]byte
}

// sessionMore is the state of a session that few idle sessions have:
// made by more on first use, under session.mu like the rest.
type sessionMore struct {
	shared   *server.Conn // queue-group subscriptions of $share filters; nil until needed
	queue    []*outMsg    // in seq order
	inflight map[uint16]*outMsg
	// unsent is how many messages at the head of queue were sent on the
	// current connection: pump starts after them, so that an ack costs
	// no walk over the window (with a window of thousands, each ack
	// walked it all).
	unsent   int
	incoming map[uint16]bool
	inbox    []*outMsg // from deliveries, to be enqueued by the worker
	req      *requests // MQTT 5 requests; nil until the first
	localSeq uint64
	discAt   int64 // unix nanoseconds; 0 while connected
	expiryT  *time.Timer
	willT    *time.Timer
}

// noMore is what a session without sessionMore reads: empty, never
// written.
var noMore sessionMore

// more returns the session's sessionMore, made on first use; s.mu is
// held.
func (s *session) more() *sessionMore {
	if s.x == nil {
		s.x = &sessionMore{}
	}
	return s.x
}

// peek returns the session's sessionMore for reading, noMore when it has
// none; s.mu is held.
func (s *session) peek() *sessionMore {
	if s.x == nil {
		return &noMore
	}
	return s.x
}

// requests are a session's MQTT 5 requests awaiting replies.
type requests struct {
	token string // random, for the reply subjects
	sub   *server.Subscription
	next  uint64
	byKey map[string]*request
}

func newSession(srv *Server, clientID string, ident *auth.Identity) *session {
	return &session{srv: srv, clientID: clientID, ident: ident}
}

// broker returns the session's combined broker connection (shared
// false) or that of its shared subscriptions, made on first use; nil
// once the session has stopped. s.mu is held.
func (s *session) broker(shared bool) *server.Conn {
	if s.stopped {
		return nil
	}
	if shared {
		x := s.more()
		if x.shared == nil {
			x.shared = s.srv.cfg.Broker.InProcess(s.ident.Account)
		}
		return x.shared
	}
	if s.bus == nil {
		s.bus = s.srv.cfg.Broker.InProcessCombined(s.ident.Account, func(m server.Msg, plain bool, _ []string) { s.deliver(m, nil) })
	}
	return s.bus
}

// restore rebuilds a stored session at startup.
func (srv *Server) restore(ss Session) error {
	// No permissions until the client reconnects and authenticates again:
	// the stored subscriptions were checked when they were made.
	s := newSession(srv, ss.ClientID, &auth.Identity{Account: ss.Account, User: ss.User})
	s.version, s.expiry, s.durable = ss.Version, ss.ExpiryInterval, true
	s.more().discAt = ss.DisconnectedAt.UnixNano()
	if ss.DisconnectedAt.IsZero() {
		s.more().discAt = time.Now().UnixNano()
	}
	for _, sub := range ss.Subs {
		full := sub.Filter
		if sub.Share != "" {
			full = sharePrefix + sub.Share + "/" + sub.Filter
		}
		if err := s.addSub(full, sub); err != nil {
			srv.log.Warn("mqtt subscription not restored", "client_id", ss.ClientID, "filter", full, "err", err)
		}
	}
	q, err := srv.cfg.State.Queue(ss.ClientID, 0, 0)
	if err != nil {
		return err
	}
	for _, m := range q {
		s.more().queue = append(s.more().queue, &outMsg{QueuedMsg: m, sent: true})
	}
	ids, err := srv.cfg.State.IncomingQoS2(ss.ClientID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		x := s.more()
		if x.incoming == nil {
			x.incoming = map[uint16]bool{}
		}
		x.incoming[id] = true
	}
	srv.mu.Lock()
	srv.sessions[ss.ClientID] = s
	srv.mu.Unlock()
	s.mu.Lock()
	s.armExpiry()
	s.mu.Unlock()
	return nil
}

// record returns the session as State keeps it; s.mu is held.
func (s *session) record() Session {
	ss := Session{ClientID: s.clientID, Version: s.version, ExpiryInterval: s.expiry, Account: s.ident.Account, User: s.ident.User}
	if at := s.peek().discAt; at != 0 {
		ss.DisconnectedAt = time.Unix(0, at)
	}
	keys := make([]string, 0, len(s.subs))
	for k := range s.subs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ss.Subs = append(ss.Subs, s.subs[k].Sub)
	}
	return ss
}

// save stores the session if it is durable.
func (s *session) save() {
	s.mu.Lock()
	if !s.durable || s.ended {
		s.mu.Unlock()
		return
	}
	rec := s.record()
	s.mu.Unlock()
	if err := s.srv.cfg.State.PutSession(rec); err != nil {
		s.srv.log.Warn("mqtt session not stored", "client_id", s.clientID, "err", err)
	}
}

// addSub subscribes the broker for filter (possibly "$share/g/f");
// opts.Filter and opts.Share are set from it.
func (s *session) addSub(filter string, opts Sub) error {
	group, f, err := parseShare(filter)
	if err != nil {
		return err
	}
	subj, parent, err := subject.SubjectFromTopicFilter(f)
	if err != nil {
		return err
	}
	opts.Filter, opts.Share = f, group
	sub := &subscription{Sub: opts}
	subjects := []string{subj}
	if parent != "" {
		subjects = append(subjects, parent)
	}
	s.mu.Lock()
	bc := s.broker(group != "")
	s.mu.Unlock()
	if bc == nil {
		return server.ErrServerClosed
	}
	for _, sj := range subjects {
		var ns *server.Subscription
		if group != "" {
			ns, err = bc.Subscribe(sj, group, func(m server.Msg) { s.deliver(m, sub) })
		} else {
			ns, err = bc.Subscribe(sj, "", nil)
		}
		if err != nil {
			for _, x := range sub.subs {
				x.Unsubscribe()
			}
			return err
		}
		sub.subs = append(sub.subs, ns)
	}
	s.mu.Lock()
	old := s.subs[filter]
	if s.subs == nil {
		s.subs = map[string]*subscription{}
	}
	s.subs[filter] = sub
	s.mu.Unlock()
	if old != nil {
		for _, x := range old.subs {
			x.Unsubscribe()
		}
	}
	return nil
}

// removeSub unsubscribes filter; it reports whether there was one.
func (s *session) removeSub(filter string) bool {
	s.mu.Lock()
	sub := s.subs[filter]
	delete(s.subs, filter)
	s.mu.Unlock()
	if sub == nil {
		return false
	}
	for _, x := range sub.subs {
		x.Unsubscribe()
	}
	return true
}

// deliver takes a message from the broker: for the plain subscriptions
// (shared nil) or for one shared subscription. It runs on the publisher's
// goroutine and never blocks: QoS 0 goes to the connection's buffer, QoS 1
// and 2 to the worker.
func (s *session) deliver(m server.Msg, shared *subscription) {
	subj := unsafe.String(unsafe.SliceData(m.Subject), len(m.Subject))
	if shared == nil && strings.HasPrefix(subj, inboxPrefix) {
		s.reply(m)
		return
	}
	// The topic, in a buffer on the stack: a view, copied only when a
	// message that keeps it is made.
	var tb [128]byte
	tbuf := subject.AppendTopicFromSubject(tb[:0], subj)
	topic := unsafe.String(unsafe.SliceData(tbuf), len(tbuf))
	qos := pubQoS(m.Header)
	lp := s.localData.Load()
	local := lp != nil && unsafe.SliceData(m.Data) == lp
	retain := headerHasRetain(m.Header)
	var grant byte
	var ids []int
	matched, rap := false, false
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	consider := func(sub *subscription) {
		if sub.NoLocal && local {
			return
		}
		matched = true
		grant = max(grant, min(sub.QoS, qos))
		rap = rap || sub.RetainAsPublished
		if sub.SubID > 0 {
			ids = append(ids, sub.SubID)
		}
	}
	if shared != nil {
		consider(shared)
	} else {
		for _, sub := range s.subs {
			if sub.Share == "" && subject.MatchTopic(sub.Filter, topic) {
				consider(sub)
			}
		}
	}
	if !matched {
		s.mu.Unlock()
		return
	}
	if c := s.conn; grant == 0 && c != nil && c.version == version311 {
		// QoS 0 to a 3.1.1 client: encoded straight into its write
		// buffer, nothing made (3.1.1 carries no header or expiry).
		via, _ := m.Via.(*flushList)
		c.sendPublish311(topic, m.Data, rap && retain, via)
		s.mu.Unlock()
		return
	}
	msg := Msg{Topic: strings.Clone(topic), Payload: slices.Clone(m.Data), QoS: grant, Retain: rap && retain, Time: time.Now()}
	if len(m.Header) > 0 || len(m.Reply) > 0 {
		msg.Header = slices.Clone(m.Header)
		if len(m.Reply) > 0 && !hasResponseTopic(m.Header) {
			msg.Header = appendReply(msg.Header, string(m.Reply))
		}
	}
	via, _ := m.Via.(*flushList)
	s.queueLocked(msg, ids, via)
	s.mu.Unlock()
}

// queueLocked sends a QoS 0 message now (dropping it without a
// connection), written at the end of via's read batch when via is not
// nil, or hands a QoS 1 or 2 message to the worker; s.mu is held.
func (s *session) queueLocked(msg Msg, ids []int, via *flushList) {
	if msg.QoS == 0 {
		if s.conn != nil {
			s.conn.sendPublish(&outMsg{QueuedMsg: QueuedMsg{Msg: msg}, subIDs: ids}, 0, false, via)
		}
		return
	}
	x := s.more()
	if len(x.inbox)+len(x.queue) >= s.srv.cfg.MaxQueue {
		s.srv.st.dropped.Add(1)
		return
	}
	x.inbox = append(x.inbox, &outMsg{QueuedMsg: QueuedMsg{Msg: msg}, subIDs: ids})
	if !s.working {
		s.working = true
		go s.worker()
	}
}

// appendReply records a NATS reply subject as the response topic.
func appendReply(hdr []byte, reply string) []byte {
	topic := subject.TopicFromSubject(reply)
	if len(hdr) == 0 {
		hdr = append(hdr, "NATS/1.0\r\n\r\n"...)
	}
	hdr = hdr[:len(hdr)-2]
	hdr = append(hdr, headerResponseTopic+": "...)
	hdr = append(hdr, topic...)
	return append(hdr, "\r\n\r\n"...)
}

func hasResponseTopic(hdr []byte) bool {
	return len(hdr) > 0 && proto.HasHeader(hdr, headerResponseTopic)
}

// worker stores the QoS 1 and 2 messages deliver handed over (State is
// not called on publishers' goroutines) and sends what the in-flight
// window allows; it ends once no delivery waits, or the session stops.
func (s *session) worker() {
	for {
		s.mu.Lock()
		x := s.peek()
		batch := x.inbox
		if len(batch) > 0 {
			x.inbox = nil
		}
		durable := s.durable
		if len(batch) == 0 || s.stopped {
			s.working = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, m := range batch {
			if durable {
				seq, err := s.srv.cfg.State.Enqueue(s.clientID, m.Msg)
				if err != nil {
					s.srv.st.dropped.Add(1)
					s.srv.log.Warn("mqtt message not queued", "client_id", s.clientID, "err", err)
					continue
				}
				m.Seq = seq
			}
			s.mu.Lock()
			x := s.more()
			if !durable {
				x.localSeq++
				m.Seq = x.localSeq
			}
			x.queue = append(x.queue, m)
			s.mu.Unlock()
		}
		s.pump()
	}
}

// packetID is the packet id of the queued message seq: stable across
// reconnects, as resending requires [MQTT-4.4.0-1].
func packetID(seq uint64) uint16 { return uint16((seq-1)%65535 + 1) }

// pump sends queued messages while the in-flight window has room, written
// with one write once s.mu is released.
func (s *session) pump() {
	var expired []uint64
	var fl flushList
	s.mu.Lock()
	c, x := s.conn, s.x
	if c == nil || x == nil {
		s.mu.Unlock()
		return
	}
	limit := min(s.srv.cfg.MaxInflight, int(c.receiveMax()))
	i := min(x.unsent, len(x.queue))
	for ; i < len(x.queue) && len(x.inflight) < limit; i++ {
		m := x.queue[i]
		pid := packetID(m.Seq)
		if cur := x.inflight[pid]; cur != nil {
			if cur == m {
				continue
			}
			break // an older message still holds the id
		}
		if x.inflight == nil {
			x.inflight = map[uint16]*outMsg{}
		}
		if m.Pubrec {
			x.inflight[pid] = m
			c.sendVia(&packets.Pubrel{PacketID: pid, Properties: &packets.Properties{}}, &fl)
			continue
		}
		if !c.sendPublish(m, pid, m.sent, &fl) {
			if c.isClosing() {
				break
			}
			// Too large for the client, or expired: dropped.
			expired = append(expired, m.Seq)
			x.queue = slices.Delete(x.queue, i, i+1)
			i--
			continue
		}
		m.sent = true
		x.inflight[pid] = m
	}
	x.unsent = i
	durable := s.durable
	s.mu.Unlock()
	fl.write()
	if durable {
		for _, seq := range expired {
			_ = s.srv.cfg.State.Release(s.clientID, seq)
		}
	}
}

// ack handles PUBACK (qos 1) and PUBCOMP (qos 2) from the client.
func (s *session) ack(pid uint16) bool {
	s.mu.Lock()
	x := s.peek()
	m := x.inflight[pid]
	if m == nil {
		s.mu.Unlock()
		return false
	}
	delete(x.inflight, pid)
	var k int
	x.queue, k = removeQueued(x.queue, m)
	if k >= 0 && k < x.unsent {
		x.unsent--
	}
	durable := s.durable
	s.mu.Unlock()
	if durable {
		if err := s.srv.cfg.State.Release(s.clientID, m.Seq); err != nil {
			s.srv.log.Warn("mqtt release not stored", "client_id", s.clientID, "err", err)
		}
	}
	s.pump()
	return true
}

// pubrec handles PUBREC: the message is now awaiting PUBCOMP, and the
// server answers PUBREL.
func (s *session) pubrec(pid uint16) bool {
	s.mu.Lock()
	x := s.peek()
	m := x.inflight[pid]
	if m == nil || m.QoS != 2 {
		s.mu.Unlock()
		return false
	}
	m.Pubrec = true
	durable := s.durable
	s.mu.Unlock()
	if durable {
		if err := s.srv.cfg.State.MarkPubrec(s.clientID, m.Seq); err != nil {
			s.srv.log.Warn("mqtt pubrec not stored", "client_id", s.clientID, "err", err)
		}
	}
	return true
}

// attachConn makes c the session's connection and sends what waits:
// PUBREL for messages acknowledged with PUBREC, the rest again with DUP
// [MQTT-4.4.0-1].
func (s *session) attachConn(c *conn) {
	s.mu.Lock()
	s.conn = c
	if x := s.x; x != nil {
		x.discAt = 0
		x.inflight, x.unsent = nil, 0
		if x.expiryT != nil {
			x.expiryT.Stop()
			x.expiryT = nil
		}
		if x.willT != nil {
			x.willT.Stop()
			x.willT = nil
		}
	}
	s.mu.Unlock()
	s.pump()
}

// detachConn forgets c when it is still the session's connection; it
// reports whether the session ended.
func (s *session) detachConn(c *conn) (still bool) {
	s.mu.Lock()
	if s.conn != c {
		s.mu.Unlock()
		return false
	}
	s.conn = nil
	s.more().discAt = time.Now().UnixNano()
	expiry := s.expiry
	s.mu.Unlock()
	if expiry == 0 {
		s.end()
		return true
	}
	s.save()
	s.mu.Lock()
	s.armExpiry()
	s.mu.Unlock()
	return true
}

// armExpiry starts the expiry timer of a disconnected session; s.mu is
// held.
func (s *session) armExpiry() {
	if s.expiry == neverExpires || s.conn != nil || s.ended {
		return
	}
	left := time.Duration(s.expiry)*time.Second - time.Since(time.Unix(0, s.peek().discAt))
	s.more().expiryT = time.AfterFunc(max(left, 0), func() {
		s.mu.Lock()
		live := s.conn != nil
		s.mu.Unlock()
		if !live {
			s.end()
		}
	})
}

// end removes the session: its subscriptions, its queue, its State.
func (s *session) end() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	durable := s.durable
	if t := s.peek().expiryT; t != nil {
		t.Stop()
	}
	s.mu.Unlock()
	s.srv.mu.Lock()
	if s.srv.sessions[s.clientID] == s {
		delete(s.srv.sessions, s.clientID)
	}
	s.srv.mu.Unlock()
	s.stop()
	if durable {
		if err := s.srv.cfg.State.DeleteSession(s.clientID); err != nil {
			s.srv.log.Warn("mqtt session not deleted", "client_id", s.clientID, "err", err)
		}
	}
}

// stop ends the session's broker connections and worker, leaving State.
func (s *session) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	bus, shared := s.bus, s.peek().shared
	// No expiry after the stop: the listener is closing (State may be
	// closed too) or the session has ended. A delayed will still goes
	// out: the session's end is one of its triggers (§3.1.2.5).
	if t := s.peek().expiryT; t != nil {
		t.Stop()
	}
	s.mu.Unlock()
	if bus != nil {
		bus.Close()
	}
	if shared != nil {
		shared.Close()
	}
}

// publish routes a client's message; local marks its payload for
// no-local. via is the publishing reader's state, which writes the
// deliveries to 3.1.1 subscribers at the end of its read batch.
func (s *session) publish(subj []byte, reply string, hdr, data []byte, via *flushList) {
	if len(data) == 0 {
		data = s.empty[:0]
	}
	s.mu.Lock()
	bus := s.broker(false)
	if bus == nil {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.localData.Store(unsafe.SliceData(data))
	bus.PublishBytesVia(subj, subj, unsafe.Slice(unsafe.StringData(reply), len(reply)), hdr, data, via)
	s.localData.Store(nil)
}

// requestReply returns the reply subject for an MQTT 5 request with a
// response topic: replies published to it go to this session on topic,
// with the request's correlation data.
func (s *session) requestReply(topic string, correlation []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rq := s.peek().req
	if rq == nil {
		bus := s.broker(false)
		if bus == nil {
			return "", server.ErrServerClosed
		}
		var tok [10]byte
		_, _ = rand.Read(tok[:])
		rq = &requests{token: base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(tok[:]), byKey: map[string]*request{}}
		sub, err := bus.Subscribe(inboxPrefix+rq.token+".*", "", nil)
		if err != nil {
			return "", err
		}
		rq.sub = sub
		s.more().req = rq
	}
	now := time.Now()
	if len(rq.byKey) >= maxRequests {
		for k, r := range rq.byKey {
			if now.After(r.expires) || len(rq.byKey) >= maxRequests {
				delete(rq.byKey, k)
			}
		}
	}
	rq.next++
	key := strconv.FormatUint(rq.next, 36)
	rq.byKey[key] = &request{topic: topic, correlation: slices.Clone(correlation), expires: now.Add(requestTTL)}
	return inboxPrefix + rq.token + "." + key, nil
}

// reply delivers a reply to one of the session's requests.
func (s *session) reply(m server.Msg) {
	subj := string(m.Subject)
	key := subj[strings.LastIndexByte(subj, '.')+1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	var r *request
	if rq := s.peek().req; rq != nil {
		r = rq.byKey[key]
	}
	if r == nil || time.Now().After(r.expires) || s.conn == nil {
		return
	}
	hdr := slices.Clone(m.Header)
	msg := Msg{Topic: r.topic, Payload: slices.Clone(m.Data), Header: hdr, Time: time.Now()}
	out := &outMsg{QueuedMsg: QueuedMsg{Msg: msg}}
	s.conn.sendReply(out, r.correlation)
}

// matchIDs returns the subscription identifiers of the plain
// subscriptions matching topic; s.mu is held.
func (s *session) matchIDs(topic string) []int {
	var ids []int
	for _, sub := range s.subs {
		if sub.Share == "" && sub.SubID > 0 && subject.MatchTopic(sub.Filter, topic) {
			ids = append(ids, sub.SubID)
		}
	}
	return ids
}

// removeQueued removes m from queue and returns where it was (-1: not
// there). Acks come mostly in order, so the head is cut by reslicing, not
// by shifting a long queue down one place per ack (which made a deep
// queue quadratic).
func removeQueued(queue []*outMsg, m *outMsg) ([]*outMsg, int) {
	if len(queue) > 0 && queue[0] == m {
		queue[0] = nil // for the collector
		return queue[1:], 0
	}
	if i := slices.Index(queue, m); i >= 0 {
		return slices.Delete(queue, i, i+1), i
	}
	return queue, -1
}
