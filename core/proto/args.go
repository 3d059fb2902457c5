package proto

// Argument parsing of control lines, once the verb is known.

// parseArgs fills p.op from the arguments of a control line.
func (p *Parser) parseArgs(line []byte) error {
	p.op = Op{Kind: p.op.Kind, HeaderLen: -1}
	switch p.op.Kind {
	case OpInfo, OpConnect:
		p.op.Arg = trimBlanks(line) // nats-server ends INFO with a blank
	case OpErr:
		p.op.Arg = unquote(line)
	case OpPub:
		return p.parsePub(line)
	case OpMsg:
		return p.parseMsg(line)
	case OpSub:
		return p.parseSub(line)
	case OpUnsub:
		return p.parseUnsub(line)
	case OpLeafSub:
		return p.parseLeafSub(line)
	case OpLeafUnsub:
		return p.parseLeafUnsub(line)
	case OpLeafMsg:
		return p.parseLeafMsg(line)
	}
	return nil
}

// parsePub parses PUB <subject> [reply] <size> and
// HPUB <subject> [reply] <hdr size> <total size>.
func (p *Parser) parsePub(line []byte) error {
	nsz := p.sizeArgs()
	args := p.split(line, 2+nsz)
	switch len(args) {
	case 1 + nsz:
	case 2 + nsz:
		p.op.Reply = args[1]
	default:
		return ErrBadArgs
	}
	p.op.Subject = args[0]
	return p.sizes(args)
}

// parseMsg parses MSG <subject> <sid> [reply] <size> and
// HMSG <subject> <sid> [reply] <hdr size> <total size>.
func (p *Parser) parseMsg(line []byte) error {
	nsz := p.sizeArgs()
	args := p.split(line, 3+nsz)
	switch len(args) {
	case 2 + nsz:
	case 3 + nsz:
		p.op.Reply = args[2]
	default:
		return ErrBadArgs
	}
	p.op.Subject, p.op.Sid = args[0], args[1]
	return p.sizes(args)
}

// parseLeafMsg parses the leafnode message forms, where the last one (LMSG)
// or two (HMSG) arguments are sizes:
//
//	LMSG <subject> <size>
//	LMSG <subject> <reply> <size>
//	LMSG <subject> + <reply> [queue...] <size>
//	LMSG <subject> | queue [queue...] <size>
//
// This follows nats-server's processLeafMsgArgs: a second argument in a
// form with four or more arguments must be the one-byte marker '+' or '|'.
func (p *Parser) parseLeafMsg(line []byte) error {
	nsz := p.sizeArgs()
	args := p.split(line, -1)
	n := len(args)
	switch {
	case n < 1+nsz:
		return ErrBadArgs
	case n == 1+nsz:
	case n == 2+nsz:
		p.op.Reply = args[1]
	default:
		if len(args[1]) != 1 {
			return ErrBadArgs
		}
		var queues [][]byte
		switch args[1][0] {
		case '+':
			p.op.Reply = args[2]
			queues = args[3 : n-nsz]
		case '|':
			queues = args[2 : n-nsz]
		default:
			return ErrBadArgs
		}
		if len(queues) > 0 {
			p.op.Queues = queues
		}
	}
	p.op.Subject = args[0]
	return p.sizes(args)
}

// sizeArgs returns how many size arguments end the current message's line.
func (p *Parser) sizeArgs() int {
	if p.header {
		return 2
	}
	return 1
}

// sizes parses the trailing size argument(s) of a message control line and
// checks them against the limits.
func (p *Parser) sizes(args [][]byte) error {
	hdr := -1
	size := parseSize(args[len(args)-1])
	if p.header {
		hdr = parseSize(args[len(args)-2])
		if hdr < 0 {
			return ErrBadArgs
		}
	}
	if size < 0 || hdr > size {
		return ErrBadArgs
	}
	if p.maxPayload >= 0 && size > p.maxPayload {
		return ErrMaxPayload
	}
	p.size = size
	p.op.HeaderLen = hdr
	return nil
}

// parseSub parses SUB <subject> [queue] <sid>.
func (p *Parser) parseSub(line []byte) error {
	args := p.split(line, 3)
	switch len(args) {
	case 2:
		p.op.Sid = args[1]
	case 3:
		p.op.Queue, p.op.Sid = args[1], args[2]
	default:
		return ErrBadArgs
	}
	p.op.Subject = args[0]
	return nil
}

// parseUnsub parses UNSUB <sid> [max]. As in nats-server, a max that is not
// a valid size means "remove now" rather than an error.
func (p *Parser) parseUnsub(line []byte) error {
	args := p.split(line, 2)
	switch len(args) {
	case 1:
	case 2:
		p.op.Max = int64(max(parseSize(args[1]), 0))
	default:
		return ErrBadArgs
	}
	p.op.Sid = args[0]
	return nil
}

// parseLeafSub parses LS+ <subject> [<queue> <weight>], as nats-server's
// processLeafSub does: exactly one or three arguments, and a missing or
// invalid weight counts as 1.
func (p *Parser) parseLeafSub(line []byte) error {
	args := p.split(line, 3)
	switch len(args) {
	case 1:
	case 3:
		p.op.Queue = args[1]
		p.op.Weight = int32(max(parseSize(args[2]), 1))
	default:
		return ErrBadArgs
	}
	p.op.Subject = args[0]
	return nil
}

// parseLeafUnsub parses LS- <subject> [queue].
func (p *Parser) parseLeafUnsub(line []byte) error {
	args := p.split(line, 2)
	switch len(args) {
	case 1:
	case 2:
		p.op.Queue = args[1]
	default:
		return ErrBadArgs
	}
	p.op.Subject = args[0]
	return nil
}

// split cuts line into blank-separated tokens. When limit > 0 it stops as
// soon as it has found more than limit tokens: the caller rejects that
// count anyway. The result lives in p's token slots and is overwritten by
// the next call.
func (p *Parser) split(line []byte, limit int) [][]byte {
	args := p.argsInline[:0]
	if p.argsSpill != nil {
		args = p.argsSpill[:0]
	}
	start := -1
	for i, c := range line {
		if isBlank(c) {
			if start >= 0 {
				args = append(args, line[start:i])
				start = -1
				if limit > 0 && len(args) > limit {
					return args
				}
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		args = append(args, line[start:])
	}
	if cap(args) > inlineArgs {
		p.argsSpill = args[:0]
	}
	return args
}

// parseSize parses a size: one to nine decimal digits. It returns -1 for
// anything else, including a sign or an overflowing value.
func parseSize(b []byte) int {
	if len(b) == 0 || len(b) > maxSizeDigits {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// unquote trims trailing blanks from an -ERR text and removes one pair of
// enclosing single quotes.
func unquote(b []byte) []byte {
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) >= 2 && b[0] == '\'' && b[len(b)-1] == '\'' {
		b = b[1 : len(b)-1]
	}
	return b
}

// isBlank reports whether c separates arguments.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// lower folds an ASCII letter to lower case and leaves other bytes alone.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
