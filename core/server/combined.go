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
// connection takes. It lives where the publisher is: on the stack of an
// in-process publish, in a client's read loop (client.combine) for a
// client's; the first entries are inline and the others keep their
// arrays from one message to the next, so gathering allocates nothing.
type combineBatch struct {
	first [2]combineEntry
	n     int // entries in use: first, then more
	more  []combineEntry
	// via is the in-process publisher's value (PublishBytesVia), handed
	// to the handlers as Msg.Via.
	via any
}

type combineEntry struct {
	conn   *Conn
	plain  bool
	queues []string
}

// entry returns the i-th entry.
func (b *combineBatch) entry(i int) *combineEntry {
	if i < len(b.first) {
		return &b.first[i]
	}
	return &b.more[i-len(b.first)]
}

// add records that conn takes the message for queue group queue, or for a
// plain subscription when queue is "".
func (b *combineBatch) add(conn *Conn, queue string) {
	i := 0
	for i < b.n && b.entry(i).conn != conn {
		i++
	}
	if i == b.n {
		if b.n >= len(b.first) {
			b.more = append(b.more, combineEntry{})
		}
		b.n++
		*b.entry(i) = combineEntry{conn: conn, queues: b.entry(i).queues[:0]}
	}
	e := b.entry(i)
	if queue == "" {
		e.plain = true
	} else {
		e.queues = append(e.queues, queue)
	}
}

// flush hands the message to each combined connection once and empties
// the batch for the next message.
func (b *combineBatch) flush(route, subj, reply, hdr, data []byte) {
	if b.n == 0 {
		return
	}
	m := Msg{Subject: subj, Route: route, Reply: reply, Header: hdr, Data: data, Via: b.via}
	for i := range b.n {
		e := b.entry(i)
		e.conn.combined(m, e.plain, e.queues)
		// The handler only borrowed queues: its array serves the next
		// message; the connection is let go.
		e.conn, e.plain, e.queues = nil, false, e.queues[:0]
	}
	b.n = 0
	b.more = b.more[:0]
}
