package proto

// Kind identifies a protocol operation.
type Kind uint8

// The operations the parser recognises. The zero Kind is not an operation.
const (
	// OpInfo is INFO {json}.
	OpInfo Kind = iota + 1
	// OpConnect is CONNECT {json}.
	OpConnect
	// OpPub is PUB or HPUB (client to server); HeaderLen tells them apart.
	OpPub
	// OpSub is SUB <subject> [queue] <sid>.
	OpSub
	// OpUnsub is UNSUB <sid> [max].
	OpUnsub
	// OpMsg is MSG or HMSG in the client form (server to client), with a sid.
	OpMsg
	// OpPing is PING.
	OpPing
	// OpPong is PONG.
	OpPong
	// OpOK is +OK.
	OpOK
	// OpErr is -ERR '<text>'.
	OpErr
	// OpLeafSub is LS+ <subject> [<queue> <weight>] on a leafnode link.
	OpLeafSub
	// OpLeafUnsub is LS- <subject> [<queue>] on a leafnode link.
	OpLeafUnsub
	// OpLeafMsg is LMSG, or HMSG in the leaf form (no sid), on a leafnode
	// link; HeaderLen tells them apart.
	OpLeafMsg

	kindEnd // one past the last Kind
)

var kindNames = [kindEnd]string{
	OpInfo:      "INFO",
	OpConnect:   "CONNECT",
	OpPub:       "PUB",
	OpSub:       "SUB",
	OpUnsub:     "UNSUB",
	OpMsg:       "MSG",
	OpPing:      "PING",
	OpPong:      "PONG",
	OpOK:        "+OK",
	OpErr:       "-ERR",
	OpLeafSub:   "LS+",
	OpLeafUnsub: "LS-",
	OpLeafMsg:   "LMSG",
}

// String returns the wire verb of k ("PUB", "LS+"); for OpPub, OpMsg and
// OpLeafMsg it names the header-less verb.
func (k Kind) String() string {
	if k == 0 || k >= kindEnd {
		return "Kind(?)"
	}
	return kindNames[k]
}

// hasPayload reports whether an operation of kind k carries a message body.
func (k Kind) hasPayload() bool {
	return k == OpPub || k == OpMsg || k == OpLeafMsg
}

// OpSet is a set of Kinds, one bit per Kind.
type OpSet uint32

// OpSetOf returns the set holding exactly kinds.
func OpSetOf(kinds ...Kind) OpSet {
	var s OpSet
	for _, k := range kinds {
		s |= 1 << k
	}
	return s
}

// Has reports whether k is in s.
func (s OpSet) Has(k Kind) bool { return s&(1<<k) != 0 }

// Predefined operation sets. A Parser rejects any operation outside its set
// with ErrUnknownOp.
var (
	// ClientOps is what a client may send to a server: CONNECT, PUB, HPUB,
	// SUB, UNSUB, PING and PONG. (nats-server also tolerates INFO and +OK,
	// which it ignores, and -ERR, on which it closes; a server that wants
	// that leniency can add OpInfo, OpOK and OpErr.)
	ClientOps = OpSetOf(OpConnect, OpPub, OpSub, OpUnsub, OpPing, OpPong)

	// ServerOps is what a client receives from a server: INFO, MSG, HMSG,
	// PING, PONG, +OK and -ERR.
	ServerOps = OpSetOf(OpInfo, OpMsg, OpPing, OpPong, OpOK, OpErr)

	// LeafOps is what either end of a leafnode link receives: INFO,
	// CONNECT, LS+, LS-, LMSG, HMSG (leaf form), PING, PONG, +OK and -ERR.
	LeafOps = OpSetOf(OpInfo, OpConnect, OpLeafSub, OpLeafUnsub, OpLeafMsg,
		OpPing, OpPong, OpOK, OpErr)
)

// Op is one parsed protocol operation.
//
// Every slice in an Op is borrowed: it points into the buffer passed to
// Parser.Next or into the parser's own scratch space, and is valid only until
// the next call to Next on the same Parser. Copy what you need to keep.
// Fields an operation does not use are zero.
type Op struct {
	// Kind is the operation.
	Kind Kind

	// Subject is the subject of PUB, HPUB, SUB, MSG, HMSG, LS+, LS- and LMSG.
	Subject []byte
	// Reply is the optional reply subject of PUB, HPUB, MSG, HMSG and LMSG.
	Reply []byte
	// Queue is the optional queue group of SUB, LS+ and LS-.
	Queue []byte
	// Sid is the subscription id of SUB, UNSUB, MSG and HMSG (client form).
	Sid []byte

	// Queues lists the queue groups named in a leaf LMSG/HMSG after the
	// '+ <reply>' or '|' marker; empty when there are none.
	Queues [][]byte
	// Weight is the queue weight of a queue LS+ (at least 1); 0 for a
	// plain LS+.
	Weight int32

	// HeaderLen is -1 for PUB, MSG and LMSG (no header block) and the size
	// of the header block, >= 0, for HPUB and HMSG.
	HeaderLen int
	// Payload is the whole message body including the header block
	// (Payload[:HeaderLen] is the header when HeaderLen >= 0), without the
	// trailing CRLF. It is empty, not nil, for a zero-length message.
	Payload []byte

	// Max is the UNSUB auto-unsubscribe count, or 0 for "remove now".
	Max int64

	// Arg is the JSON argument of INFO and CONNECT without surrounding
	// blanks, and the text of -ERR with one pair of enclosing single quotes
	// removed.
	Arg []byte
}

// Header returns the header block of a message op, or nil if it has none.
func (op *Op) Header() []byte {
	if op.HeaderLen <= 0 {
		return nil
	}
	return op.Payload[:op.HeaderLen:op.HeaderLen]
}

// Body returns the message body after the header block.
func (op *Op) Body() []byte {
	if op.HeaderLen <= 0 {
		return op.Payload
	}
	return op.Payload[op.HeaderLen:]
}
