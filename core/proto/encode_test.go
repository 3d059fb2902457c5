package proto

import (
	"reflect"
	"testing"
)

func b(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func TestAppendExact(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"msg", AppendMsg(nil, b("foo"), b("1"), nil, -1, 5), "MSG foo 1 5\r\n"},
		{"msg-reply", AppendMsg(nil, b("foo"), b("1"), b("_INBOX.a"), -1, 0), "MSG foo 1 _INBOX.a 0\r\n"},
		{"hmsg", AppendMsg(nil, b("foo"), b("1"), nil, 12, 17), "HMSG foo 1 12 17\r\n"},
		{"hmsg-reply", AppendMsg(nil, b("foo"), b("1"), b("r"), 0, 5), "HMSG foo 1 r 0 5\r\n"},
		{"pub", AppendPub(nil, b("foo"), nil, -1, 5), "PUB foo 5\r\n"},
		{"pub-reply", AppendPub(nil, b("foo"), b("r"), -1, 5), "PUB foo r 5\r\n"},
		{"hpub", AppendPub(nil, b("foo"), b("r"), 12, 17), "HPUB foo r 12 17\r\n"},
		{"sub", AppendSub(nil, b("foo.*"), nil, b("7")), "SUB foo.* 7\r\n"},
		{"sub-queue", AppendSub(nil, b("foo"), b("q"), b("7")), "SUB foo q 7\r\n"},
		{"unsub", AppendUnsub(nil, b("7"), 0), "UNSUB 7\r\n"},
		{"unsub-max", AppendUnsub(nil, b("7"), 42), "UNSUB 7 42\r\n"},
		{"err", AppendErr(nil, "Unknown Protocol Operation"), "-ERR 'Unknown Protocol Operation'\r\n"},
		{"leaf-sub", AppendLeafSub(nil, b("foo"), nil, 0), "LS+ foo\r\n"},
		{"leaf-sub-queue", AppendLeafSub(nil, b("foo"), b("q"), 3), "LS+ foo q 3\r\n"},
		{"leaf-sub-weight-low", AppendLeafSub(nil, b("foo"), b("q"), 0), "LS+ foo q 1\r\n"},
		{"leaf-sub-weight-high", AppendLeafSub(nil, b("foo"), b("q"), 2_000_000_000), "LS+ foo q 999999999\r\n"},
		{"leaf-unsub", AppendLeafUnsub(nil, b("foo"), nil), "LS- foo\r\n"},
		{"leaf-unsub-queue", AppendLeafUnsub(nil, b("foo"), b("q")), "LS- foo q\r\n"},
		{"lmsg", AppendLeafMsg(nil, b("foo"), nil, nil, -1, 5), "LMSG foo 5\r\n"},
		{"lmsg-reply", AppendLeafMsg(nil, b("foo"), b("r"), nil, -1, 5), "LMSG foo r 5\r\n"},
		{"lmsg-plus", AppendLeafMsg(nil, b("foo"), b("r"), [][]byte{b("q1"), b("q2")}, -1, 5), "LMSG foo + r q1 q2 5\r\n"},
		{"lmsg-pipe", AppendLeafMsg(nil, b("foo"), nil, [][]byte{b("q1")}, -1, 5), "LMSG foo | q1 5\r\n"},
		{"leaf-hmsg", AppendLeafMsg(nil, b("foo"), nil, nil, 12, 17), "HMSG foo 12 17\r\n"},
		{"leaf-hmsg-plus", AppendLeafMsg(nil, b("foo"), b("r"), [][]byte{b("q")}, 12, 17), "HMSG foo + r q 12 17\r\n"},
		{"append-to-existing", AppendSub([]byte("PING\r\n"), b("a"), nil, b("1")), "PING\r\nSUB a 1\r\n"},
		{"lines", []byte(PingLine + PongLine + OKLine), "PING\r\nPONG\r\n+OK\r\n"},
	}
	for _, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestAppendRoundTrip parses what the encoders write.
func TestAppendRoundTrip(t *testing.T) {
	body := hdrBlock + "hello"
	var client, server, leaf []byte
	client = AppendPub(client, b("a"), nil, -1, 5)
	client = append(client, "hello\r\n"...)
	client = AppendPub(client, b("a"), b("r"), 12, len(body))
	client = append(client, body+"\r\n"...)
	client = AppendSub(client, b("a.>"), b("q"), b("9"))
	client = AppendUnsub(client, b("9"), 3)
	client = append(client, PingLine...)

	server = AppendMsg(server, b("a"), b("9"), b("r"), 12, len(body))
	server = append(server, body+"\r\n"...)
	server = AppendMsg(server, b("a"), b("9"), nil, -1, 0)
	server = append(server, "\r\n"...)
	server = AppendErr(server, "Stale Connection")
	server = append(server, OKLine...)

	leaf = AppendLeafSub(leaf, b("a"), b("q"), 4)
	leaf = AppendLeafUnsub(leaf, b("a"), b("q"))
	leaf = AppendLeafMsg(leaf, b("a"), b("r"), [][]byte{b("q1"), b("q2")}, 12, len(body))
	leaf = append(leaf, body+"\r\n"...)
	leaf = AppendLeafMsg(leaf, b("a"), nil, [][]byte{b("q1")}, -1, 5)
	leaf = append(leaf, "hello\r\n"...)
	leaf = append(leaf, PongLine...)

	cases := []struct {
		set  OpSet
		in   []byte
		want []rec
	}{
		{ClientOps, client, []rec{pub("a", "", "hello"), hpub("a", "r", 12, body), sub("a.>", "q", "9"), unsub("9", 3), simple(OpPing)}},
		{ServerOps, server, []rec{hmsg("a", "9", "r", 12, body), msg("a", "9", "", ""), withArg(OpErr, "Stale Connection"), simple(OpOK)}},
		{LeafOps, leaf, []rec{leafSub("a", "q", 4), leafUnsub("a", "q"), lhmsg("a", "r", "q1,q2", 12, body), lmsg("a", "", "q1", "hello"), simple(OpPong)}},
	}
	for _, tc := range cases {
		got, err := feed(t, NewParser(tc.set, Limits{}), tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v, %v\nwant %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestAppendNoAlloc(t *testing.T) {
	dst := make([]byte, 0, 256)
	subj, sid, reply := []byte("foo.bar"), []byte("12"), []byte("_INBOX.abc.1")
	queues := [][]byte{[]byte("q1"), []byte("q2")}
	n := testing.AllocsPerRun(100, func() {
		d := AppendMsg(dst, subj, sid, reply, 12, 100)
		d = AppendPub(d, subj, reply, -1, 100)
		d = AppendSub(d, subj, queues[0], sid)
		d = AppendUnsub(d, sid, 5)
		d = AppendErr(d, "Maximum Payload Violation")
		d = AppendLeafSub(d, subj, queues[0], 3)
		d = AppendLeafUnsub(d, subj, queues[0])
		_ = AppendLeafMsg(d, subj, reply, queues, 12, 100)
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
