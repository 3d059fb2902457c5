package proto

import "strconv"

// Complete protocol lines without arguments.
const (
	// PingLine is the PING operation.
	PingLine = "PING\r\n"
	// PongLine is the PONG operation.
	PongLine = "PONG\r\n"
	// OKLine is the +OK operation.
	OKLine = "+OK\r\n"
)

// Wire verbs.
const (
	verbPub       = "PUB "
	verbHPub      = "HPUB "
	verbSub       = "SUB "
	verbUnsub     = "UNSUB "
	verbMsg       = "MSG "
	verbHMsg      = "HMSG "
	verbErr       = "-ERR '"
	verbLeafSub   = "LS+ "
	verbLeafUnsub = "LS- "
	verbLeafMsg   = "LMSG "
	crlf          = "\r\n"
)

// The encoders below append one control line to dst and return the extended
// slice; they allocate only when dst lacks capacity. They do not validate
// their arguments: subjects, queues, sids and texts must not contain blanks
// or line breaks, and sizes must be non-negative.

// AppendMsg appends the control line of a message delivered to a client:
// "MSG <subject> <sid> [reply] <total>\r\n" when headerLen < 0, else
// "HMSG <subject> <sid> [reply] <headerLen> <totalLen>\r\n". The body (and
// its trailing CRLF) is written by the caller.
func AppendMsg(dst, subject, sid, reply []byte, headerLen, totalLen int) []byte {
	if headerLen >= 0 {
		dst = append(dst, verbHMsg...)
	} else {
		dst = append(dst, verbMsg...)
	}
	dst = append(dst, subject...)
	dst = append(dst, ' ')
	dst = append(dst, sid...)
	dst = append(dst, ' ')
	if len(reply) > 0 {
		dst = append(dst, reply...)
		dst = append(dst, ' ')
	}
	return appendSizes(dst, headerLen, totalLen)
}

// AppendPub appends the control line of a publish:
// "PUB <subject> [reply] <totalLen>\r\n" when headerLen < 0, else
// "HPUB <subject> [reply] <headerLen> <totalLen>\r\n".
func AppendPub(dst, subject, reply []byte, headerLen, totalLen int) []byte {
	if headerLen >= 0 {
		dst = append(dst, verbHPub...)
	} else {
		dst = append(dst, verbPub...)
	}
	dst = append(dst, subject...)
	dst = append(dst, ' ')
	if len(reply) > 0 {
		dst = append(dst, reply...)
		dst = append(dst, ' ')
	}
	return appendSizes(dst, headerLen, totalLen)
}

// AppendSub appends "SUB <subject> [queue] <sid>\r\n".
func AppendSub(dst, subject, queue, sid []byte) []byte {
	dst = append(dst, verbSub...)
	dst = append(dst, subject...)
	dst = append(dst, ' ')
	if len(queue) > 0 {
		dst = append(dst, queue...)
		dst = append(dst, ' ')
	}
	dst = append(dst, sid...)
	return append(dst, crlf...)
}

// AppendUnsub appends "UNSUB <sid>\r\n", or "UNSUB <sid> <max>\r\n" when
// max > 0.
func AppendUnsub(dst, sid []byte, max int64) []byte {
	dst = append(dst, verbUnsub...)
	dst = append(dst, sid...)
	if max > 0 {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, max, 10)
	}
	return append(dst, crlf...)
}

// AppendErr appends "-ERR '<text>'\r\n".
func AppendErr(dst []byte, text string) []byte {
	dst = append(dst, verbErr...)
	dst = append(dst, text...)
	dst = append(dst, '\'')
	return append(dst, crlf...)
}

// AppendLeafSub appends leafnode interest: "LS+ <subject>\r\n" for a plain
// subscription, or "LS+ <subject> <queue> <weight>\r\n" when queue is not
// empty. The weight is clamped to 1..999,999,999 as nats-server does.
func AppendLeafSub(dst, subject, queue []byte, weight int32) []byte {
	dst = append(dst, verbLeafSub...)
	dst = append(dst, subject...)
	if len(queue) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, queue...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(min(max(weight, 1), maxWeight)), 10)
	}
	return append(dst, crlf...)
}

// AppendLeafUnsub appends the removal of leafnode interest:
// "LS- <subject>\r\n" or "LS- <subject> <queue>\r\n".
func AppendLeafUnsub(dst, subject, queue []byte) []byte {
	dst = append(dst, verbLeafUnsub...)
	dst = append(dst, subject...)
	if len(queue) > 0 {
		dst = append(dst, ' ')
		dst = append(dst, queue...)
	}
	return append(dst, crlf...)
}

// AppendLeafMsg appends the control line of a message sent over a leafnode
// link, in the form nats-server writes (client.go msgHeaderForRouteOrLeaf):
//
//	LMSG <subject> [reply] <totalLen>                  no queues
//	LMSG <subject> + <reply> <queue>... <totalLen>     queues and a reply
//	LMSG <subject> | <queue>... <totalLen>             queues, no reply
//
// With headerLen >= 0 the verb is HMSG and "<headerLen> <totalLen>" ends the
// line instead.
func AppendLeafMsg(dst, subject, reply []byte, queues [][]byte, headerLen, totalLen int) []byte {
	if headerLen >= 0 {
		dst = append(dst, verbHMsg...)
	} else {
		dst = append(dst, verbLeafMsg...)
	}
	dst = append(dst, subject...)
	dst = append(dst, ' ')
	switch {
	case len(queues) > 0:
		if len(reply) > 0 {
			dst = append(dst, '+', ' ')
			dst = append(dst, reply...)
			dst = append(dst, ' ')
		} else {
			dst = append(dst, '|', ' ')
		}
		for _, q := range queues {
			dst = append(dst, q...)
			dst = append(dst, ' ')
		}
	case len(reply) > 0:
		dst = append(dst, reply...)
		dst = append(dst, ' ')
	}
	return appendSizes(dst, headerLen, totalLen)
}

// appendSizes appends "[<headerLen> ]<totalLen>\r\n".
func appendSizes(dst []byte, headerLen, totalLen int) []byte {
	if headerLen >= 0 {
		dst = strconv.AppendInt(dst, int64(headerLen), 10)
		dst = append(dst, ' ')
	}
	dst = strconv.AppendInt(dst, int64(totalLen), 10)
	return append(dst, crlf...)
}
