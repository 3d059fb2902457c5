package proto

import (
	"fmt"
	"strings"
	"testing"
)

// mustParseAll parses in completely and fails the test on an error or a
// trailing partial operation. It returns the number of ops.
func mustParseAll(tb testing.TB, p *Parser, in []byte) int {
	ops := 0
	for len(in) > 0 {
		op, n, err := p.Next(in)
		in = in[n:]
		if err != nil {
			tb.Fatal(err)
		}
		if op == nil {
			break
		}
		ops++
	}
	return ops
}

// TestAllocsSteadyState requires that parsing allocates nothing once the
// parser is warm (AllocsPerRun runs the function once before measuring),
// both for whole operations and for ones split across two reads.
func TestAllocsSteadyState(t *testing.T) {
	body := strings.Repeat("x", 100)
	cases := []struct {
		name   string
		set    OpSet
		in     string
		splits []int // cut points; none means whole
	}{
		{name: "pub", set: ClientOps, in: "PUB foo.bar _INBOX.x 5\r\nhello\r\n"},
		{name: "hpub", set: ClientOps, in: "HPUB foo.bar 12 17\r\n" + hdrBlock + "hello\r\n"},
		{name: "sub", set: ClientOps, in: "SUB foo.* q 1\r\n"},
		{name: "unsub", set: ClientOps, in: "UNSUB 1 10\r\n"},
		{name: "ping-pong", set: ClientOps, in: "PING\r\nPONG\r\n"},
		{name: "msg", set: ServerOps, in: "MSG foo.bar 1 _INBOX.x 5\r\nhello\r\n"},
		{name: "hmsg", set: ServerOps, in: "HMSG foo.bar 1 12 17\r\n" + hdrBlock + "hello\r\n"},
		{name: "leaf", set: LeafOps, in: "LS+ foo q 2\r\nLS- foo q\r\nLMSG foo + r q1 q2 5\r\nhello\r\n"},
		{name: "leaf-many-queues", set: LeafOps, in: "LMSG foo | q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 5\r\nhello\r\n"},
		{name: "pub-split-in-body", set: ClientOps, in: "PUB foo.bar 100\r\n" + body + "\r\n", splits: []int{60}},
		{name: "pub-split-in-line", set: ClientOps, in: "PUB foo.bar 100\r\n" + body + "\r\n", splits: []int{8}},
		{name: "pub-split-halves", set: ClientOps, in: "PUB foo.bar 100\r\n" + body + "\r\n", splits: []int{59}},
		{name: "pub-split-crlf", set: ClientOps, in: "PUB foo.bar 100\r\n" + body + "\r\n", splits: []int{118}},
		{name: "hmsg-split-three", set: ServerOps, in: "HMSG foo.bar 1 12 112\r\n" + hdrBlock + body + "\r\n", splits: []int{10, 50}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(tc.set, Limits{})
			var chunks [][]byte
			prev := 0
			for _, s := range append(tc.splits, len(tc.in)) {
				chunks = append(chunks, []byte(tc.in[prev:s]))
				prev = s
			}
			allocs := testing.AllocsPerRun(200, func() {
				for _, c := range chunks {
					mustParseAll(t, p, c)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per run", allocs)
			}
		})
	}
}

func ExampleParser_Next() {
	p := NewParser(ClientOps, Limits{})
	reads := []string{"SUB foo 1\r\nPUB foo 5\r\nhel", "lo\r\nPING\r\n"}
	for _, r := range reads {
		buf := []byte(r)
		for len(buf) > 0 {
			op, n, err := p.Next(buf)
			buf = buf[n:]
			if err != nil {
				fmt.Println("-ERR", ErrText(err))
				return
			}
			if op == nil {
				break // the rest of the PUB comes with the next read
			}
			switch op.Kind {
			case OpSub:
				fmt.Printf("SUB %s sid=%s\n", op.Subject, op.Sid)
			case OpPub:
				fmt.Printf("PUB %s %q\n", op.Subject, op.Payload)
			default:
				fmt.Println(op.Kind)
			}
		}
	}
	// Output:
	// SUB foo sid=1
	// PUB foo "hello"
	// PING
}
