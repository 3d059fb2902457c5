// Package proto reads and writes the NATS wire protocol: the client protocol
// (port 4222) and the leafnode protocol. It owns no sockets and no
// goroutines: a Parser turns bytes into Ops, the Append functions turn values
// into bytes, and Info and Connect are the JSON arguments of INFO and
// CONNECT. It imports only the standard library.
//
// # Grammar
//
// The grammar as parsed, following nats-server v2.15.2 (server/parser.go,
// client.go, leafnode.go). Verbs are case-insensitive. A blank is a space or
// a tab; arguments are separated by runs of blanks, and leading or trailing
// blanks are ignored. A control line ends at '\n'; a '\r' just before it is
// dropped, so a bare '\n' is accepted as nats-server accepts it. A '\r'
// anywhere else is an ordinary argument byte. A size is 1 to 9 decimal
// digits (a sign, other bytes or a tenth digit make it malformed, so sizes
// never overflow).
//
//	INFO [blanks] <json>
//	CONNECT [blanks] <json>
//	PUB <subject> [reply] <size> CRLF <size bytes> CRLF
//	HPUB <subject> [reply] <hdr> <size> CRLF <size bytes> CRLF      hdr <= size
//	SUB <subject> [queue] <sid>
//	UNSUB <sid> [max]
//	MSG <subject> <sid> [reply] <size> CRLF <size bytes> CRLF
//	HMSG <subject> <sid> [reply] <hdr> <size> CRLF <size bytes> CRLF
//	PING | PONG | +OK [anything up to the line end, ignored]
//	-ERR <text>
//
// The body after a message line must be followed by exactly "\r\n"
// (ErrMissingCRLF otherwise). The size on the control line is checked
// against Limits.MaxPayload before any of the body is read, and Payload
// holds the whole body, header block included. UNSUB's max, like in
// nats-server, is 0 ("remove now") when it is not a valid size. The text of
// -ERR is returned without its enclosing single quotes.
//
// # Leafnode forms
//
// On a leafnode link nats-server sends no account token: the account is
// fixed by the link (leafnode.go: writeLeafSub, processLeafSub,
// processLeafUnsub, processLeafMsgArgs, processLeafHeaderMsgArgs; client.go:
// msgHeaderForRouteOrLeaf).
//
//	LS+ <subject>
//	LS+ <subject> <queue> <weight>     exactly 1 or 3 arguments; weight < 1
//	                                   or malformed counts as 1
//	LS- <subject> [queue]              the subscription key, no weight
//	LMSG <subject> [reply] <size>
//	LMSG <subject> + <reply> [queue...] <size>
//	LMSG <subject> | <queue>... <size>
//	HMSG <subject> ... <hdr> <size>    the same shapes with two sizes
//
// In a form with more than the minimal arguments, the second argument must be
// the one-byte marker '+' (a reply and then queue names follow) or '|'
// (queue names only). Which HMSG form is parsed depends on the OpSet: if it
// holds OpLeafMsg, HMSG is the leaf form and yields OpLeafMsg with HeaderLen
// >= 0; otherwise it is the client form and yields OpMsg. nats-server
// allows leafnode control lines to be LeafControlLineFactor times longer than
// client ones; pass the larger Limits.MaxControlLine for such links.
//
// # Differences from nats-server
//
// Where nats-server's behaviour is an accident of its implementation, this
// package is stricter or simpler; none of these affect input that a real
// client or server sends.
//
//   - MaxControlLine also bounds the blanks between a verb and its arguments
//     and the ignored bytes after PING, PONG and +OK, which nats-server reads
//     without limit. The limit is enforced as soon as it is passed, not only
//     at the line end or the end of a read.
//   - LS- with more than two arguments is ErrBadArgs; nats-server looks the
//     whole line up as a subscription key and ignores it when not found.
//   - nats-server drops the last byte of a control line that contains a '\r'
//     anywhere; here only a '\r' right before the '\n' is dropped.
//   - ClientOps leaves out INFO and +OK, which nats-server ignores when a
//     client sends them, and -ERR, on which it closes; add them to the OpSet
//     for that leniency.
//
// # Ownership
//
// Parser.Next returns a *Op that belongs to the Parser. Its slices point
// into the buffer given to Next when the whole operation was inside that
// buffer (no copy is made), or into the Parser's own scratch buffers when the
// operation was split across calls. In both cases they are valid only until
// the next call to Next or Reset; copy anything that must outlive it. The
// Parser never reads a buffer again after Next has returned, so the caller
// may reuse it for the next read once it is done with the returned Op.
//
// The Parser copies only what it must: a control line that does not end in
// the current buffer, and a message body that does not fit in it. Its scratch
// buffers are reused from one operation to the next (those that grew beyond
// 64 KiB are released), so the steady state allocates nothing.
//
// # Errors
//
// Parse errors are the sentinel values ErrUnknownOp, ErrControlLineTooLong,
// ErrMaxPayload, ErrBadArgs and ErrMissingCRLF. They end the stream; ErrText
// maps each to the text of the -ERR a server sends before closing. The result
// of a stream (its operations and its error) does not depend on how the
// stream is split into buffers.
package proto
