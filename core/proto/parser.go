package proto

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Default limits, as in nats-server.
const (
	// DefaultMaxControlLine is the default limit on the arguments of one
	// control line, in bytes.
	DefaultMaxControlLine = 4096
	// DefaultMaxPayload is the default limit on a message's declared size
	// (header block included), in bytes.
	DefaultMaxPayload = 1 << 20
	// LeafControlLineFactor is how much longer than the configured
	// max_control_line nats-server lets control lines on leafnode (and
	// route) links be, because LMSG and LS+ carry more tokens: pass
	// Limits{MaxControlLine: LeafControlLineFactor * configured} for them.
	LeafControlLineFactor = 16
)

const (
	// maxSizeDigits bounds a decimal size on the wire, as nats-server's
	// parseSize does: 999,999,999 is the largest size accepted.
	maxSizeDigits = 9
	// maxWeight is the largest queue weight written by AppendLeafSub.
	maxWeight = 999_999_999
	// inlineArgs is the number of argument slots held inside the Parser;
	// every fixed-arity operation fits, only LMSG with many queues spills.
	inlineArgs = 8
	// minBodyBuf is the smallest body buffer allocated for a split message.
	minBodyBuf = 512
	// retainLimit is the largest scratch buffer a Parser keeps between
	// operations; bigger ones are dropped once their operation is done.
	retainLimit = 64 << 10
)

// Limits bounds what a Parser accepts. A zero field selects the default.
type Limits struct {
	// MaxControlLine is the longest control line, counting its arguments
	// (the bytes after the verb and its separating blanks, without the line
	// ending). 0 means DefaultMaxControlLine; negative values are treated
	// as 0.
	MaxControlLine int
	// MaxPayload is the largest declared message size, header included.
	// 0 means DefaultMaxPayload; a negative value disables the check (sizes
	// are still limited to nine digits).
	MaxPayload int
}

// parserState is the position of a Parser inside the current operation. The
// verb states are named after the letters read so far.
type parserState uint8

const (
	stateStart parserState = iota // expecting the first byte of a verb

	stateP   // P
	statePu  // PU
	statePi  // PI
	statePin // PIN
	statePo  // PO
	statePon // PON

	stateH   // H
	stateHp  // HP
	stateHpu // HPU
	stateHm  // HM
	stateHms // HMS

	stateS  // S
	stateSu // SU

	stateU    // U
	stateUn   // UN
	stateUns  // UNS
	stateUnsu // UNSU

	stateM  // M
	stateMs // MS

	stateC      // C
	stateCo     // CO
	stateCon    // CON
	stateConn   // CONN
	stateConne  // CONNE
	stateConnec // CONNEC

	stateI   // I
	stateIn  // IN
	stateInf // INF

	stateL   // L
	stateLs  // LS
	stateLm  // LM
	stateLms // LMS

	statePlus    // +
	statePlusO   // +O
	stateMinus   // -
	stateMinusE  // -E
	stateMinusEr // -ER

	stateVerbSep   // verb complete, at least one blank must follow
	stateArgLead   // skipping blanks before the arguments
	stateArg       // reading arguments up to '\n'
	stateTail      // PING, PONG, +OK: ignoring bytes up to '\n'
	statePayload   // reading the message body
	statePayloadCR // body read, expecting '\r'
	statePayloadLF // expecting the final '\n'
)

// Parser turns a byte stream into protocol operations. It is a byte-level
// state machine that keeps its position between calls, so input may be fed
// in pieces of any size. A Parser is not safe for concurrent use and must not
// be copied after first use.
type Parser struct {
	allowed        OpSet
	maxControlLine int
	maxPayload     int // < 0: unlimited

	state parserState
	err   error // sticky: once set, every call returns it
	done  bool  // the last call returned a complete op

	op     Op
	header bool // the current message verb is HPUB or HMSG
	size   int  // declared size of the current message body

	line     []byte // arguments of the current control line
	lineHeld bool   // line lives in ctl rather than the caller's buffer
	lead     int    // blanks between the verb and its arguments
	tailLen  int    // bytes seen after PING/PONG/+OK
	tailCR   bool   // the last of those bytes was '\r'

	ctl      []byte // control line carried across calls
	body     []byte // message body carried across calls
	bodyHeld bool   // the body is being collected in body

	argsInline [inlineArgs][]byte // token slots; avoids a heap array per op
	argsSpill  [][]byte           // larger token array, once one was needed
}

// NewParser returns a Parser that accepts the operations in allowed, within
// lim.
func NewParser(allowed OpSet, lim Limits) *Parser {
	p := &Parser{allowed: allowed}
	p.SetLimits(lim)
	p.Reset()
	return p
}

// SetLimits changes the limits applied to the rest of the stream. Zero
// fields select the defaults.
func (p *Parser) SetLimits(l Limits) {
	p.maxControlLine = l.MaxControlLine
	if p.maxControlLine <= 0 {
		p.maxControlLine = DefaultMaxControlLine
	}
	switch {
	case l.MaxPayload == 0:
		p.maxPayload = DefaultMaxPayload
	case l.MaxPayload < 0:
		p.maxPayload = -1
	default:
		p.maxPayload = l.MaxPayload
	}
}

// Reset discards any partial operation and a previous error, so that p can
// parse a new stream. The OpSet and limits are kept.
func (p *Parser) Reset() {
	p.state = stateStart
	p.err = nil
	p.startOp()
}

// Next parses one operation from the start of buf.
//
// It returns the operation and the number of bytes of buf it consumed. If buf
// ends inside an operation, Next keeps what it needs, consumes all of buf and
// returns a nil op; the next call continues where this one stopped. Slices in
// the returned Op point into buf when the whole operation was inside it, and
// into the parser's own buffers otherwise; either way they are valid only
// until the next call to Next or Reset.
//
// On a parse error, Next returns one of the Err* values of this package and
// the offset in buf where parsing stopped. The stream cannot be resumed:
// every later call returns the same error until Reset.
//
// A typical read loop:
//
//	for len(buf) > 0 {
//		op, n, err := p.Next(buf)
//		buf = buf[n:]
//		if err != nil {
//			return err // send -ERR ErrText(err) and close
//		}
//		if op == nil {
//			break // need more input
//		}
//		handle(op)
//	}
func (p *Parser) Next(buf []byte) (op *Op, n int, err error) {
	if p.err != nil {
		return nil, 0, p.err
	}
	if p.done {
		p.startOp()
	}
	i := 0
	for i < len(buf) {
		b := buf[i]
		switch p.state {
		case stateStart:
			if b == 'P' {
				if op, n, ok := p.pubFast(buf[i:]); ok {
					return op, i + n, nil
				}
			}
			switch lower(b) {
			case 'p':
				p.state = stateP
			case 'h':
				p.state = stateH
			case 's':
				p.state = stateS
			case 'u':
				p.state = stateU
			case 'm':
				p.state = stateM
			case 'c':
				p.state = stateC
			case 'i':
				p.state = stateI
			case 'l':
				p.state = stateL
			case '+':
				p.state = statePlus
			case '-':
				p.state = stateMinus
			default:
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// PUB, PING, PONG
		case stateP:
			switch lower(b) {
			case 'u':
				p.state = statePu
			case 'i':
				p.state = statePi
			case 'o':
				p.state = statePo
			default:
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case statePu:
			if lower(b) != 'b' || !p.verb(OpPub, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case statePi:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = statePin
			i++
		case statePin:
			if lower(b) != 'g' || !p.verb(OpPing, false, stateTail) {
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case statePo:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = statePon
			i++
		case statePon:
			if lower(b) != 'g' || !p.verb(OpPong, false, stateTail) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// HPUB, HMSG
		case stateH:
			switch lower(b) {
			case 'p':
				p.state = stateHp
			case 'm':
				p.state = stateHm
			default:
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case stateHp:
			if lower(b) != 'u' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateHpu
			i++
		case stateHpu:
			if lower(b) != 'b' || !p.verb(OpPub, true, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case stateHm:
			if lower(b) != 's' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateHms
			i++
		case stateHms:
			// On a leafnode link HMSG is the leaf form, without a sid.
			kind := OpMsg
			if p.allowed.Has(OpLeafMsg) {
				kind = OpLeafMsg
			}
			if lower(b) != 'g' || !p.verb(kind, true, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// SUB
		case stateS:
			if lower(b) != 'u' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateSu
			i++
		case stateSu:
			if lower(b) != 'b' || !p.verb(OpSub, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// UNSUB
		case stateU:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateUn
			i++
		case stateUn:
			if lower(b) != 's' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateUns
			i++
		case stateUns:
			if lower(b) != 'u' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateUnsu
			i++
		case stateUnsu:
			if lower(b) != 'b' || !p.verb(OpUnsub, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// MSG
		case stateM:
			if lower(b) != 's' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateMs
			i++
		case stateMs:
			if lower(b) != 'g' || !p.verb(OpMsg, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// CONNECT
		case stateC:
			if lower(b) != 'o' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateCo
			i++
		case stateCo:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateCon
			i++
		case stateCon:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateConn
			i++
		case stateConn:
			if lower(b) != 'e' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateConne
			i++
		case stateConne:
			if lower(b) != 'c' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateConnec
			i++
		case stateConnec:
			// Like nats-server, the JSON may follow the verb directly.
			if lower(b) != 't' || !p.verb(OpConnect, false, stateArgLead) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// INFO
		case stateI:
			if lower(b) != 'n' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateIn
			i++
		case stateIn:
			if lower(b) != 'f' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateInf
			i++
		case stateInf:
			if lower(b) != 'o' || !p.verb(OpInfo, false, stateArgLead) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// LS+, LS-, LMSG
		case stateL:
			switch lower(b) {
			case 's':
				p.state = stateLs
			case 'm':
				p.state = stateLm
			default:
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case stateLs:
			ok := false
			switch b {
			case '+':
				ok = p.verb(OpLeafSub, false, stateVerbSep)
			case '-':
				ok = p.verb(OpLeafUnsub, false, stateVerbSep)
			}
			if !ok {
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case stateLm:
			if lower(b) != 's' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateLms
			i++
		case stateLms:
			if lower(b) != 'g' || !p.verb(OpLeafMsg, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		// +OK, -ERR
		case statePlus:
			if lower(b) != 'o' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = statePlusO
			i++
		case statePlusO:
			if lower(b) != 'k' || !p.verb(OpOK, false, stateTail) {
				return p.fail(ErrUnknownOp, i)
			}
			i++
		case stateMinus:
			if lower(b) != 'e' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateMinusE
			i++
		case stateMinusE:
			if lower(b) != 'r' {
				return p.fail(ErrUnknownOp, i)
			}
			p.state = stateMinusEr
			i++
		case stateMinusEr:
			if lower(b) != 'r' || !p.verb(OpErr, false, stateVerbSep) {
				return p.fail(ErrUnknownOp, i)
			}
			i++

		case stateVerbSep:
			if !isBlank(b) {
				return p.fail(ErrUnknownOp, i)
			}
			p.lead = 1
			p.state = stateArgLead
			i++
		case stateArgLead:
			if !isBlank(b) {
				p.state = stateArg
				continue
			}
			p.lead++
			if p.lead > p.maxControlLine {
				return p.fail(ErrControlLineTooLong, i)
			}
			i++

		case stateArg:
			rest := buf[i:]
			j := bytes.IndexByte(rest, '\n')
			if j < 0 {
				// The line goes on in a later buffer: keep it.
				seen := len(p.ctl) + len(rest)
				if rest[len(rest)-1] == '\r' {
					seen-- // may be the line ending
				}
				if seen > p.maxControlLine {
					return p.fail(ErrControlLineTooLong, len(buf))
				}
				p.ctl = append(p.ctl, rest...)
				return nil, len(buf), nil
			}
			var line []byte
			if len(p.ctl) > 0 {
				p.ctl = append(p.ctl, rest[:j]...)
				line, p.lineHeld = p.ctl, true
			} else {
				line = rest[:j]
			}
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) > p.maxControlLine {
				return p.fail(ErrControlLineTooLong, i+j)
			}
			if err := p.parseArgs(line); err != nil {
				return p.fail(err, i+j)
			}
			i += j + 1
			if !p.op.Kind.hasPayload() {
				return p.complete(i)
			}
			p.line = line
			p.state = statePayload

		case stateTail:
			rest := buf[i:]
			j := bytes.IndexByte(rest, '\n')
			if j < 0 {
				p.tailLen += len(rest)
				p.tailCR = rest[len(rest)-1] == '\r'
				seen := p.tailLen
				if p.tailCR {
					seen--
				}
				if seen > p.maxControlLine {
					return p.fail(ErrControlLineTooLong, len(buf))
				}
				return nil, len(buf), nil
			}
			seen := p.tailLen + j
			if (j > 0 && rest[j-1] == '\r') || (j == 0 && p.tailCR) {
				seen--
			}
			if seen > p.maxControlLine {
				return p.fail(ErrControlLineTooLong, i+j)
			}
			return p.complete(i + j + 1)

		case statePayload:
			avail := len(buf) - i
			if !p.bodyHeld {
				if avail >= p.size+2 {
					// Fast path: the whole body and its CRLF are here.
					end := i + p.size
					if buf[end] != '\r' {
						return p.fail(ErrMissingCRLF, end)
					}
					if buf[end+1] != '\n' {
						return p.fail(ErrMissingCRLF, end+1)
					}
					p.op.Payload = buf[i:end:end]
					return p.complete(end + 2)
				}
				p.holdLine()
				if p.body == nil || cap(p.body) < p.size {
					p.body = make([]byte, 0, max(p.size, minBodyBuf))
				}
				p.body = p.body[:0]
				p.bodyHeld = true
			}
			take := min(p.size-len(p.body), avail)
			p.body = append(p.body, buf[i:i+take]...)
			i += take
			if len(p.body) == p.size {
				p.state = statePayloadCR
			}
		case statePayloadCR:
			if b != '\r' {
				return p.fail(ErrMissingCRLF, i)
			}
			p.state = statePayloadLF
			i++
		case statePayloadLF:
			if b != '\n' {
				return p.fail(ErrMissingCRLF, i)
			}
			p.op.Payload = p.body[:p.size:p.size]
			return p.complete(i + 1)
		}
	}
	if p.state == statePayload {
		// buf ended right after the control line.
		p.holdLine()
	}
	return nil, len(buf), nil
}

// pubFast parses the common form of PUB in one step: "PUB <subject>
// [reply] <size>\r\n" with single spaces, all of it and its body in buf.
// It reports false, having changed nothing, for anything else (another
// verb, lower case, tabs or repeated blanks, a bad size, a limit exceeded,
// a body that goes on in a later buffer, a missing CRLF), which the state
// machine then parses from the same place, errors included. The state
// machine takes each byte through a state; this finds the line end with
// one IndexByte and splits the line in one pass.
func (p *Parser) pubFast(buf []byte) (*Op, int, bool) {
	if len(buf) < 8 || buf[1] != 'U' || buf[2] != 'B' || buf[3] != ' ' || !p.allowed.Has(OpPub) {
		return nil, 0, false
	}
	j := bytes.IndexByte(buf[4:], '\n')
	if j < 0 {
		return nil, 0, false
	}
	line := buf[4 : 4+j]
	if j > 0 && line[j-1] == '\r' {
		line = line[:j-1]
	}
	if len(line) > p.maxControlLine {
		return nil, 0, false
	}
	sp1, sp2, ok := twoSpaces(line)
	if !ok {
		return nil, 0, false
	}
	if sp1 <= 0 || sp2 == sp1+1 {
		return nil, 0, false
	}
	var reply, sizeArg []byte
	if sp2 < 0 {
		sizeArg = line[sp1+1:]
	} else {
		reply, sizeArg = line[sp1+1:sp2], line[sp2+1:]
	}
	size := parseSize(sizeArg)
	if size < 0 || (p.maxPayload >= 0 && size > p.maxPayload) {
		return nil, 0, false
	}
	start := 4 + j + 1
	end := start + size
	if end+2 > len(buf) || buf[end] != '\r' || buf[end+1] != '\n' {
		return nil, 0, false
	}
	if p.op.Kind != OpPub {
		// The fields a PUB does not use still hold the last op's; after
		// a PUB (either path) they are already zero.
		p.op = Op{}
	}
	p.op.Kind = OpPub
	p.op.Subject = line[:sp1]
	p.op.Reply = reply
	p.op.HeaderLen = -1
	p.op.Payload = buf[start:end:end]
	p.header = false
	p.size = size
	op, n, _ := p.complete(end + 2)
	return op, n, true
}

// SWAR constants: one byte value repeated in every byte of a word.
const (
	bytes01 = 0x0101010101010101
	bytes7f = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns a word with the high bit of each byte of x that is
// zero set, and no other bit (exact, unlike the borrow-based test).
func zeroBytes(x uint64) uint64 {
	return ^((x&bytes7f + bytes7f) | x | bytes7f)
}

// twoSpaces finds the first two spaces of line, eight bytes at a time. It
// reports false if line holds a tab or more than two spaces; sp2 is -1
// when there is one space, and both are -1 when there is none.
func twoSpaces(line []byte) (sp1, sp2 int, ok bool) {
	sp1, sp2 = -1, -1
	k := 0
	for ; k+8 <= len(line); k += 8 {
		x := binary.LittleEndian.Uint64(line[k:])
		if zeroBytes(x^(bytes01*'\t')) != 0 {
			return -1, -1, false
		}
		for m := zeroBytes(x ^ (bytes01 * ' ')); m != 0; m &= m - 1 {
			at := k + bits.TrailingZeros64(m)/8
			switch {
			case sp1 < 0:
				sp1 = at
			case sp2 < 0:
				sp2 = at
			default:
				return -1, -1, false
			}
		}
	}
	for ; k < len(line); k++ {
		switch line[k] {
		case ' ':
			switch {
			case sp1 < 0:
				sp1 = k
			case sp2 < 0:
				sp2 = k
			default:
				return -1, -1, false
			}
		case '\t':
			return -1, -1, false
		}
	}
	return sp1, sp2, true
}

// verb records that the verb of an operation of kind k has been read and
// moves to state next. It reports false if k is not allowed.
func (p *Parser) verb(k Kind, header bool, next parserState) bool {
	if !p.allowed.Has(k) {
		return false
	}
	p.op = Op{Kind: k, HeaderLen: -1} // the previous op's fields go here
	p.header = header
	p.state = next
	return true
}

// fail makes err sticky and returns it.
func (p *Parser) fail(err error, at int) (*Op, int, error) {
	p.err = err
	return nil, at, err
}

// complete ends the current operation after n bytes of the buffer.
func (p *Parser) complete(n int) (*Op, int, error) {
	p.state = stateStart
	p.done = true
	return &p.op, n, nil
}

// startOp clears the per-operation state before a new operation begins.
func (p *Parser) startOp() {
	p.done = false
	// p.op is cleared when the next verb is known (verb, pubFast).
	p.header = false
	p.size = 0
	p.line = nil
	p.lineHeld = false
	p.lead = 0
	p.tailLen = 0
	p.tailCR = false
	p.bodyHeld = false
	if cap(p.ctl) > retainLimit {
		p.ctl = nil
	}
	p.ctl = p.ctl[:0]
	if cap(p.body) > retainLimit {
		p.body = nil
	}
	p.body = p.body[:0]
}

// holdLine makes the current control line, and the op fields sliced from
// it, independent of the caller's buffer before Next returns without
// completing the operation.
func (p *Parser) holdLine() {
	if p.lineHeld {
		return
	}
	p.ctl = append(p.ctl[:0], p.line...)
	p.line, p.lineHeld = p.ctl, true
	// The same bytes parsed the first time, so this cannot fail.
	_ = p.parseArgs(p.line)
}
