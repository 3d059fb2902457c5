package proto

import (
	"strings"
)

// This file is the raw-byte fixture catalogue: each fixture is a complete
// input stream, the OpSet and limits to parse it with, and the operations
// and error it must produce. The parser, split and fuzz tests all run on it.

// rec is a comparable, owned copy of an Op.
type rec struct {
	Kind                       Kind
	Subject, Reply, Queue, Sid string
	Queues                     string // queue names joined by ','
	Weight                     int32
	HeaderLen                  int
	Payload                    string
	Max                        int64
	Arg                        string
}

func recOf(op *Op) rec {
	qs := make([]string, len(op.Queues))
	for i, q := range op.Queues {
		qs[i] = string(q)
	}
	return rec{
		Kind:      op.Kind,
		Subject:   string(op.Subject),
		Reply:     string(op.Reply),
		Queue:     string(op.Queue),
		Sid:       string(op.Sid),
		Queues:    strings.Join(qs, ","),
		Weight:    op.Weight,
		HeaderLen: op.HeaderLen,
		Payload:   string(op.Payload),
		Max:       op.Max,
		Arg:       string(op.Arg),
	}
}

// Constructors for expected records.

func pub(subject, reply, payload string) rec {
	return rec{Kind: OpPub, Subject: subject, Reply: reply, HeaderLen: -1, Payload: payload}
}

func hpub(subject, reply string, hdr int, payload string) rec {
	return rec{Kind: OpPub, Subject: subject, Reply: reply, HeaderLen: hdr, Payload: payload}
}

func sub(subject, queue, sid string) rec {
	return rec{Kind: OpSub, Subject: subject, Queue: queue, Sid: sid, HeaderLen: -1}
}

func unsub(sid string, max int64) rec {
	return rec{Kind: OpUnsub, Sid: sid, Max: max, HeaderLen: -1}
}

func msg(subject, sid, reply, payload string) rec {
	return rec{Kind: OpMsg, Subject: subject, Sid: sid, Reply: reply, HeaderLen: -1, Payload: payload}
}

func hmsg(subject, sid, reply string, hdr int, payload string) rec {
	return rec{Kind: OpMsg, Subject: subject, Sid: sid, Reply: reply, HeaderLen: hdr, Payload: payload}
}

func leafSub(subject, queue string, weight int32) rec {
	return rec{Kind: OpLeafSub, Subject: subject, Queue: queue, Weight: weight, HeaderLen: -1}
}

func leafUnsub(subject, queue string) rec {
	return rec{Kind: OpLeafUnsub, Subject: subject, Queue: queue, HeaderLen: -1}
}

func lmsg(subject, reply, queues, payload string) rec {
	return rec{Kind: OpLeafMsg, Subject: subject, Reply: reply, Queues: queues, HeaderLen: -1, Payload: payload}
}

func lhmsg(subject, reply, queues string, hdr int, payload string) rec {
	return rec{Kind: OpLeafMsg, Subject: subject, Reply: reply, Queues: queues, HeaderLen: hdr, Payload: payload}
}

func simple(k Kind) rec { return rec{Kind: k, HeaderLen: -1} }

func withArg(k Kind, arg string) rec { return rec{Kind: k, Arg: arg, HeaderLen: -1} }

// fixture is one catalogue entry.
type fixture struct {
	name string
	set  OpSet
	lim  Limits
	in   string
	want []rec
	err  error
}

const (
	hdrBlock = "NATS/1.0\r\n\r\n"                          // 12 bytes
	hdrKV    = "NATS/1.0\r\nA: 1\r\n\r\n"                  // 18 bytes
	hdr503   = "NATS/1.0 503\r\nNats-Subject: foo\r\n\r\n" // 35 bytes
)

var fixtures = []fixture{
	// Client protocol: what a server reads.
	{name: "pub", set: ClientOps, in: "PUB foo 5\r\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-lower", set: ClientOps, in: "pub foo 5\r\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-mixed-case", set: ClientOps, in: "pUb foo 5\r\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-reply", set: ClientOps, in: "PUB foo _INBOX.x.1 5\r\nhello\r\n", want: []rec{pub("foo", "_INBOX.x.1", "hello")}},
	{name: "pub-tabs-spaces", set: ClientOps, in: "PUB\t foo \t\t bar   5\r\nhello\r\n", want: []rec{pub("foo", "bar", "hello")}},
	{name: "pub-trailing-blanks", set: ClientOps, in: "PUB foo 5 \t \r\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-zero", set: ClientOps, in: "PUB foo 0\r\n\r\n", want: []rec{pub("foo", "", "")}},
	{name: "pub-payload-crlf", set: ClientOps, in: "PUB foo 9\r\n\r\nab\r\n\r\nc\r\n", want: []rec{pub("foo", "", "\r\nab\r\n\r\nc")}},
	{name: "pub-payload-looks-like-ops", set: ClientOps, in: "PUB foo 12\r\nPING\r\nPONG\r\n\r\nPING\r\n",
		want: []rec{pub("foo", "", "PING\r\nPONG\r\n"), simple(OpPing)}},
	{name: "pub-bare-lf", set: ClientOps, in: "PUB foo 5\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-leading-zeros", set: ClientOps, in: "PUB foo 005\r\nhello\r\n", want: []rec{pub("foo", "", "hello")}},
	{name: "pub-cr-in-arg", set: ClientOps, in: "PUB f\ro 5\r\nhello\r\n", want: []rec{pub("f\ro", "", "hello")}},
	{name: "hpub", set: ClientOps, in: "HPUB foo 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{hpub("foo", "", 12, hdrBlock+"hello")}},
	{name: "hpub-reply", set: ClientOps, in: "hpub foo bar 18 18\r\n" + hdrKV + "\r\n", want: []rec{hpub("foo", "bar", 18, hdrKV)}},
	{name: "hpub-zero-header", set: ClientOps, in: "HPUB foo 0 5\r\nhello\r\n", want: []rec{hpub("foo", "", 0, "hello")}},
	{name: "hpub-zero-all", set: ClientOps, in: "HPUB foo 0 0\r\n\r\n", want: []rec{hpub("foo", "", 0, "")}},
	{name: "sub", set: ClientOps, in: "SUB foo 1\r\n", want: []rec{sub("foo", "", "1")}},
	{name: "sub-queue", set: ClientOps, in: "sub foo.* workers 22\r\n", want: []rec{sub("foo.*", "workers", "22")}},
	{name: "sub-tabs", set: ClientOps, in: "SUB\tfoo.>\t\tq\t7\r\n", want: []rec{sub("foo.>", "q", "7")}},
	{name: "unsub", set: ClientOps, in: "UNSUB 1\r\n", want: []rec{unsub("1", 0)}},
	{name: "unsub-max", set: ClientOps, in: "unsub 1 5\r\n", want: []rec{unsub("1", 5)}},
	{name: "unsub-max-zero", set: ClientOps, in: "UNSUB 1 0\r\n", want: []rec{unsub("1", 0)}},
	{name: "unsub-max-bad", set: ClientOps, in: "UNSUB 1 x\r\nUNSUB 2 -3\r\nUNSUB 3 1234567890\r\n",
		want: []rec{unsub("1", 0), unsub("2", 0), unsub("3", 0)}},
	{name: "ping-pong", set: ClientOps, in: "PING\r\nPONG\r\nping\r\npong\r\n",
		want: []rec{simple(OpPing), simple(OpPong), simple(OpPing), simple(OpPong)}},
	{name: "ping-bare-lf", set: ClientOps, in: "PING\nPONG\n", want: []rec{simple(OpPing), simple(OpPong)}},
	{name: "ping-trailing", set: ClientOps, in: "PING  \r\nPING extra words\r\n", want: []rec{simple(OpPing), simple(OpPing)}},
	{name: "connect", set: ClientOps, in: `CONNECT {"verbose":false,"name":"a b"}` + "\r\n",
		want: []rec{withArg(OpConnect, `{"verbose":false,"name":"a b"}`)}},
	{name: "connect-no-space", set: ClientOps, in: "connect{}\r\n", want: []rec{withArg(OpConnect, "{}")}},
	{name: "connect-blanks", set: ClientOps, in: "CONNECT \t {}\n", want: []rec{withArg(OpConnect, "{}")}},
	{name: "connect-empty", set: ClientOps, in: "CONNECT\r\n", want: []rec{withArg(OpConnect, "")}},
	{name: "session", set: ClientOps,
		in: "CONNECT {}\r\nPING\r\nSUB foo 1\r\nSUB bar q 2\r\nPUB foo 2\r\nhi\r\nHPUB bar r 12 14\r\n" + hdrBlock + "yo\r\nUNSUB 1 3\r\nPONG\r\n",
		want: []rec{withArg(OpConnect, "{}"), simple(OpPing), sub("foo", "", "1"), sub("bar", "q", "2"),
			pub("foo", "", "hi"), hpub("bar", "r", 12, hdrBlock+"yo"), unsub("1", 3), simple(OpPong)}},

	// Client protocol: errors.
	{name: "err-unknown", set: ClientOps, in: "FOO bar\r\n", err: ErrUnknownOp},
	{name: "err-empty-line", set: ClientOps, in: "\r\n", err: ErrUnknownOp},
	{name: "err-leading-space", set: ClientOps, in: " PING\r\n", err: ErrUnknownOp},
	{name: "err-verb-no-blank", set: ClientOps, in: "PUBX foo 5\r\nhello\r\n", err: ErrUnknownOp},
	{name: "err-verb-eol", set: ClientOps, in: "PUB\r\n", err: ErrUnknownOp},
	{name: "err-sub-eol", set: ClientOps, in: "SUB\n", err: ErrUnknownOp},
	{name: "err-near-verb", set: ClientOps, in: "PINX\r\n", err: ErrUnknownOp},
	{name: "err-after-ops", set: ClientOps, in: "PING\r\nSUB foo 1\r\nXX\r\n", want: []rec{simple(OpPing), sub("foo", "", "1")}, err: ErrUnknownOp},
	{name: "err-not-allowed-msg", set: ClientOps, in: "MSG foo 1 5\r\nhello\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-info", set: ClientOps, in: "INFO {}\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-ok", set: ClientOps, in: "+OK\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-err", set: ClientOps, in: "-ERR 'x'\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-hmsg", set: ClientOps, in: "HMSG foo 1 0 0\r\n\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-ls", set: ClientOps, in: "LS+ foo\r\n", err: ErrUnknownOp},
	{name: "err-not-allowed-lmsg", set: ClientOps, in: "LMSG foo 0\r\n\r\n", err: ErrUnknownOp},
	{name: "err-ctl-too-long", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "PUB foo.bar.baz.quu 0\r\n\r\n", err: ErrControlLineTooLong},
	{name: "ctl-at-limit", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "PUB foo.bar.baz.qu 0\r\n\r\n", want: []rec{pub("foo.bar.baz.qu", "", "")}},
	{name: "ctl-at-limit-bare-lf", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "PUB foo.bar.baz.qu 0\n\r\n", want: []rec{pub("foo.bar.baz.qu", "", "")}},
	{name: "err-ctl-too-long-unterminated", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "SUB " + strings.Repeat("a", 40), err: ErrControlLineTooLong},
	{name: "err-ctl-too-long-default", set: ClientOps, in: "SUB " + strings.Repeat("a", 4095) + " 1\r\n", err: ErrControlLineTooLong},
	{name: "ctl-default-limit", set: ClientOps, in: "SUB " + strings.Repeat("a", 4094) + " 1\r\n", want: []rec{sub(strings.Repeat("a", 4094), "", "1")}},
	{name: "err-ctl-too-long-blanks", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "SUB" + strings.Repeat(" ", 17) + "foo 1\r\n", err: ErrControlLineTooLong},
	{name: "err-ctl-too-long-ping", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "PING" + strings.Repeat("x", 17) + "\r\n", err: ErrControlLineTooLong},
	{name: "ping-tail-at-limit", set: ClientOps, lim: Limits{MaxControlLine: 16}, in: "PING" + strings.Repeat("x", 16) + "\r\n", want: []rec{simple(OpPing)}},
	{name: "err-max-payload", set: ClientOps, lim: Limits{MaxPayload: 4}, in: "PUB foo 5\r\nhello\r\n", err: ErrMaxPayload},
	{name: "max-payload-at-limit", set: ClientOps, lim: Limits{MaxPayload: 4}, in: "PUB foo 4\r\nhell\r\n", want: []rec{pub("foo", "", "hell")}},
	{name: "err-max-payload-default", set: ClientOps, in: "PUB foo 1048577\r\n", err: ErrMaxPayload},
	{name: "err-max-payload-hpub-total", set: ClientOps, lim: Limits{MaxPayload: 16}, in: "HPUB foo 12 17\r\n" + hdrBlock + "hello\r\n", err: ErrMaxPayload},
	{name: "max-payload-unlimited", set: ClientOps, lim: Limits{MaxPayload: -1}, in: "PUB foo 2000000\r\n", want: nil},
	{name: "err-size-negative", set: ClientOps, in: "PUB foo -1\r\n\r\n", err: ErrBadArgs},
	{name: "err-size-plus", set: ClientOps, in: "PUB foo +1\r\nx\r\n", err: ErrBadArgs},
	{name: "err-size-letters", set: ClientOps, in: "PUB foo 1x\r\nx\r\n", err: ErrBadArgs},
	{name: "err-size-overflow", set: ClientOps, lim: Limits{MaxPayload: -1}, in: "PUB foo 1000000000\r\n", err: ErrBadArgs},
	{name: "err-size-huge", set: ClientOps, in: "PUB foo 99999999999999999999999\r\n", err: ErrBadArgs},
	{name: "err-pub-one-arg", set: ClientOps, in: "PUB foo\r\n", err: ErrBadArgs},
	{name: "err-pub-four-args", set: ClientOps, in: "PUB a b c 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-hpub-two-args", set: ClientOps, in: "HPUB foo 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-hpub-hdr-gt-total", set: ClientOps, in: "HPUB foo 6 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-hpub-hdr-negative", set: ClientOps, in: "HPUB foo -1 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-hpub-five-args", set: ClientOps, in: "HPUB a b c 0 0\r\n\r\n", err: ErrBadArgs},
	{name: "err-sub-one-arg", set: ClientOps, in: "SUB foo\r\n", err: ErrBadArgs},
	{name: "err-sub-four-args", set: ClientOps, in: "SUB a b c d\r\n", err: ErrBadArgs},
	{name: "err-sub-blank-args", set: ClientOps, in: "SUB   \r\n", err: ErrBadArgs},
	{name: "err-unsub-three-args", set: ClientOps, in: "UNSUB 1 2 3\r\n", err: ErrBadArgs},
	{name: "err-missing-crlf", set: ClientOps, in: "PUB foo 5\r\nhelloX\r\n", err: ErrMissingCRLF},
	{name: "err-missing-lf", set: ClientOps, in: "PUB foo 5\r\nhello\rX", err: ErrMissingCRLF},
	{name: "err-payload-bare-lf", set: ClientOps, in: "PUB foo 5\r\nhello\nPING\r\n", err: ErrMissingCRLF},
	{name: "err-payload-short", set: ClientOps, in: "PUB foo 6\r\nhello\r\nPING\r\n", err: ErrMissingCRLF},
	{name: "incomplete-payload", set: ClientOps, in: "PING\r\nPUB foo 5\r\nhel", want: []rec{simple(OpPing)}},
	{name: "incomplete-line", set: ClientOps, in: "PING\r\nSUB foo", want: []rec{simple(OpPing)}},
	{name: "incomplete-cr", set: ClientOps, in: "PUB foo 5\r\nhello\r", want: nil},

	// Server protocol: what a client reads.
	{name: "info", set: ServerOps, in: `INFO {"server_id":"N1","headers":true}` + "\r\n", want: []rec{withArg(OpInfo, `{"server_id":"N1","headers":true}`)}},
	{name: "info-trailing-blank", set: ServerOps, in: "INFO {\"a\":1} \r\nINFO\t{}\t\n", want: []rec{withArg(OpInfo, `{"a":1}`), withArg(OpInfo, "{}")}},
	{name: "msg", set: ServerOps, in: "MSG foo 1 5\r\nhello\r\n", want: []rec{msg("foo", "1", "", "hello")}},
	{name: "msg-reply", set: ServerOps, in: "msg foo 1 _INBOX.a 5\r\nhello\r\n", want: []rec{msg("foo", "1", "_INBOX.a", "hello")}},
	{name: "msg-zero", set: ServerOps, in: "MSG foo 1 0\r\n\r\n", want: []rec{msg("foo", "1", "", "")}},
	{name: "hmsg", set: ServerOps, in: "HMSG foo 1 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{hmsg("foo", "1", "", 12, hdrBlock+"hello")}},
	{name: "hmsg-no-responders", set: ServerOps, in: "HMSG _INBOX.x.1 7 35 35\r\n" + hdr503 + "\r\n",
		want: []rec{hmsg("_INBOX.x.1", "7", "", 35, hdr503)}},
	{name: "hmsg-reply", set: ServerOps, in: "HMSG foo 1 bar 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{hmsg("foo", "1", "bar", 12, hdrBlock+"hello")}},
	{name: "ok", set: ServerOps, in: "+OK\r\n+ok\n", want: []rec{simple(OpOK), simple(OpOK)}},
	{name: "err-text", set: ServerOps, in: "-ERR 'Unknown Protocol Operation'\r\n", want: []rec{withArg(OpErr, "Unknown Protocol Operation")}},
	{name: "err-text-quotes-inside", set: ServerOps, in: "-ERR 'Permissions Violation for Subscription to \"foo\"'  \r\n",
		want: []rec{withArg(OpErr, `Permissions Violation for Subscription to "foo"`)}},
	{name: "err-text-unquoted", set: ServerOps, in: "-err\tStale Connection\r\n", want: []rec{withArg(OpErr, "Stale Connection")}},
	{name: "err-text-empty", set: ServerOps, in: "-ERR \r\n", want: []rec{withArg(OpErr, "")}},
	{name: "err-minus-no-blank", set: ServerOps, in: "-ERR\r\n", err: ErrUnknownOp},
	{name: "err-msg-two-args", set: ServerOps, in: "MSG foo 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-msg-five-args", set: ServerOps, in: "MSG a b c d 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-hmsg-three-args", set: ServerOps, in: "HMSG foo 1 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-server-pub", set: ServerOps, in: "PUB foo 0\r\n\r\n", err: ErrUnknownOp},
	{name: "err-server-connect", set: ServerOps, in: "CONNECT {}\r\n", err: ErrUnknownOp},

	// Leafnode protocol.
	{name: "leaf-sub", set: LeafOps, in: "LS+ foo.bar\r\n", want: []rec{leafSub("foo.bar", "", 0)}},
	{name: "leaf-sub-queue", set: LeafOps, in: "ls+ foo q 3\r\n", want: []rec{leafSub("foo", "q", 3)}},
	{name: "leaf-sub-weight-bad", set: LeafOps, in: "LS+ foo q 0\r\nLS+ foo q x\r\nLS+ foo q -2\r\nLS+ foo q 999999999\r\n",
		want: []rec{leafSub("foo", "q", 1), leafSub("foo", "q", 1), leafSub("foo", "q", 1), leafSub("foo", "q", 999999999)}},
	{name: "leaf-sub-lds", set: LeafOps, in: "LS+ $LDS.abcdef\r\n", want: []rec{leafSub("$LDS.abcdef", "", 0)}},
	{name: "leaf-unsub", set: LeafOps, in: "LS- foo\r\nLS- foo q\r\n", want: []rec{leafUnsub("foo", ""), leafUnsub("foo", "q")}},
	{name: "leaf-msg", set: LeafOps, in: "LMSG foo 5\r\nhello\r\n", want: []rec{lmsg("foo", "", "", "hello")}},
	{name: "leaf-msg-reply", set: LeafOps, in: "lmsg foo _INBOX.r 5\r\nhello\r\n", want: []rec{lmsg("foo", "_INBOX.r", "", "hello")}},
	{name: "leaf-msg-plus", set: LeafOps, in: "LMSG foo + _INBOX.r q1 q2 5\r\nhello\r\n", want: []rec{lmsg("foo", "_INBOX.r", "q1,q2", "hello")}},
	{name: "leaf-msg-plus-no-queues", set: LeafOps, in: "LMSG foo + _INBOX.r 5\r\nhello\r\n", want: []rec{lmsg("foo", "_INBOX.r", "", "hello")}},
	{name: "leaf-msg-pipe", set: LeafOps, in: "LMSG foo | q1 5\r\nhello\r\n", want: []rec{lmsg("foo", "", "q1", "hello")}},
	{name: "leaf-msg-pipe-as-reply", set: LeafOps, in: "LMSG foo | 5\r\nhello\r\n", want: []rec{lmsg("foo", "|", "", "hello")}},
	{name: "leaf-msg-many-queues", set: LeafOps, in: "LMSG foo | q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12 0\r\n\r\nLMSG bar | a b 0\r\n\r\n",
		want: []rec{lmsg("foo", "", "q1,q2,q3,q4,q5,q6,q7,q8,q9,q10,q11,q12", ""), lmsg("bar", "", "a,b", "")}},
	{name: "leaf-hmsg", set: LeafOps, in: "HMSG foo 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{lhmsg("foo", "", "", 12, hdrBlock+"hello")}},
	{name: "leaf-hmsg-reply", set: LeafOps, in: "HMSG foo bar 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{lhmsg("foo", "bar", "", 12, hdrBlock+"hello")}},
	{name: "leaf-hmsg-plus", set: LeafOps, in: "HMSG foo + bar q1 12 17\r\n" + hdrBlock + "hello\r\n", want: []rec{lhmsg("foo", "bar", "q1", 12, hdrBlock+"hello")}},
	{name: "leaf-hmsg-pipe", set: LeafOps, in: "hmsg foo | q1 q2 0 5\r\nhello\r\n", want: []rec{lhmsg("foo", "", "q1,q2", 0, "hello")}},
	{name: "leaf-session", set: LeafOps,
		in: `INFO {"server_id":"hub","connect_info":true}` + "\r\nLS+ $LDS.x\r\nLS+ foo\r\nPING\r\nLMSG foo 2\r\nhi\r\nLS- foo\r\nPONG\r\n-ERR 'Stale Connection'\r\n",
		want: []rec{withArg(OpInfo, `{"server_id":"hub","connect_info":true}`), leafSub("$LDS.x", "", 0), leafSub("foo", "", 0),
			simple(OpPing), lmsg("foo", "", "", "hi"), leafUnsub("foo", ""), simple(OpPong), withArg(OpErr, "Stale Connection")}},
	{name: "leaf-connect", set: LeafOps, in: `CONNECT {"server_id":"leaf","headers":true}` + "\r\n",
		want: []rec{withArg(OpConnect, `{"server_id":"leaf","headers":true}`)}},
	{name: "err-leaf-sub-two-args", set: LeafOps, in: "LS+ foo q\r\n", err: ErrBadArgs},
	{name: "err-leaf-sub-four-args", set: LeafOps, in: "LS+ foo q 1 2\r\n", err: ErrBadArgs},
	{name: "err-leaf-sub-no-args", set: LeafOps, in: "LS+ \r\n", err: ErrBadArgs},
	{name: "err-leaf-sub-no-blank", set: LeafOps, in: "LS+\r\n", err: ErrUnknownOp},
	{name: "err-leaf-ls-bad-sign", set: LeafOps, in: "LS* foo\r\n", err: ErrUnknownOp},
	{name: "err-leaf-unsub-three-args", set: LeafOps, in: "LS- a b c\r\n", err: ErrBadArgs},
	{name: "err-leaf-msg-one-arg", set: LeafOps, in: "LMSG foo\r\n", err: ErrBadArgs},
	{name: "err-leaf-msg-bad-marker", set: LeafOps, in: "LMSG foo x bar 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-leaf-msg-long-marker", set: LeafOps, in: "LMSG foo ++ bar 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-leaf-msg-size", set: LeafOps, in: "LMSG foo | q x\r\n", err: ErrBadArgs},
	{name: "err-leaf-msg-max-payload", set: LeafOps, lim: Limits{MaxPayload: 3}, in: "LMSG foo | q 5\r\nhello\r\n", err: ErrMaxPayload},
	{name: "err-leaf-hmsg-two-args", set: LeafOps, in: "HMSG foo 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-leaf-hmsg-hdr-gt-total", set: LeafOps, in: "HMSG foo | q 6 5\r\nhello\r\n", err: ErrBadArgs},
	{name: "err-leaf-missing-crlf", set: LeafOps, in: "LMSG foo 5\r\nhello!!", err: ErrMissingCRLF},
	{name: "err-leaf-client-msg", set: LeafOps, in: "MSG foo 1 0\r\n\r\n", err: ErrUnknownOp},
	{name: "err-leaf-pub", set: LeafOps, in: "PUB foo 0\r\n\r\n", err: ErrUnknownOp},
	{name: "err-leaf-sub", set: LeafOps, in: "SUB foo 1\r\n", err: ErrUnknownOp},
	{name: "leaf-long-line", set: LeafOps, lim: Limits{MaxControlLine: LeafControlLineFactor * DefaultMaxControlLine},
		in: "LS+ " + strings.Repeat("a", 10000) + "\r\n", want: []rec{leafSub(strings.Repeat("a", 10000), "", 0)}},
}
