package server

// CombinedHandler receives a message once for all the subscriptions of a
// combined in-process connection that take it, as nats-server sends one
// message per leafnode connection: plain reports whether a plain
// subscription matched, queues names the queue groups in which one of the
// connection's members was chosen. m and queues are borrowed: valid only
// while the handler runs.
type CombinedHandler func(m Msg, plain bool, queues []string)

// InProcessCombined returns an in-process connection bound to account (""
// for the global account) whose subscriptions all deliver through fn, once
// per message. Its subscriptions take part in queue groups like any other
// member, except that other members are preferred (a leafnode serves a
// queue group only when no local member does), so a connection that stands
// for a leafnode with weighted queue interest may subscribe once per unit
// of weight. The handler passed to its
// Subscribe is ignored (it may be nil).
func (s *Server) InProcessCombined(account string, fn CombinedHandler) *Conn {
	ic := s.InProcess(account)
	ic.combined = fn
	return ic
}

// combinedSub is the placeholder handler of a combined connection's
// subscriptions; delivery goes through the connection's CombinedHandler.
func combinedSub(Msg) {}

// combinedTakes reports whether sub belongs to a combined connection, and whether
// that connection takes a message published through from (nil for a
// client connection): not when it is the no-echo publisher itself.
func (sub *subscription) combinedTakes(from *Conn) (combined, takes bool) {
	ic := sub.conn
	if ic == nil || ic.combined == nil {
		return false, false
	}
	return true, !(ic == from && ic.noEcho)
}

// combineBatch gathers, for one published message, what each combined
// connection takes; it is allocated only when one is involved, so other
// publishes do not pay for it.
type combineBatch struct {
	entries []combineEntry
}

type combineEntry struct {
	conn   *Conn
	plain  bool
	queues []string
}

// add records that conn takes the message for queue group queue, or for a
// plain subscription when queue is "". b may be nil.
func (b *combineBatch) add(conn *Conn, queue string) *combineBatch {
	if b == nil {
		b = &combineBatch{}
	}
	i := 0
	for i < len(b.entries) && b.entries[i].conn != conn {
		i++
	}
	if i == len(b.entries) {
		b.entries = append(b.entries, combineEntry{conn: conn})
	}
	e := &b.entries[i]
	if queue == "" {
		e.plain = true
	} else {
		e.queues = append(e.queues, queue)
	}
	return b
}

// flush hands the message to each combined connection once. b may be nil.
func (b *combineBatch) flush(route, subj, reply, hdr, data []byte) {
	if b == nil {
		return
	}
	m := Msg{Subject: subj, Route: route, Reply: reply, Header: hdr, Data: data}
	for _, e := range b.entries {
		e.conn.combined(m, e.plain, e.queues)
	}
}
