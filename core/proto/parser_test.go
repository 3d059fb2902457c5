package proto

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// feed runs p over chunks the way a connection's read loop does and returns
// owned copies of the operations and the first error. Each chunk is copied
// into a fresh buffer that is overwritten as soon as the parser is done with
// it, so any slice the parser wrongly keeps into a caller's buffer shows up
// as corrupted output.
func feed(tb testing.TB, p *Parser, chunks ...[]byte) ([]rec, error) {
	tb.Helper()
	var out []rec
	for _, c := range chunks {
		buf := append([]byte(nil), c...)
		rest := buf
		for len(rest) > 0 {
			op, n, err := p.Next(rest)
			if n < 0 || n > len(rest) {
				tb.Fatalf("Next consumed %d of %d bytes", n, len(rest))
			}
			rest = rest[n:]
			if err != nil {
				if op != nil {
					tb.Fatalf("Next returned an op with error %v", err)
				}
				return out, err
			}
			if op == nil {
				if len(rest) != 0 {
					tb.Fatalf("Next returned no op but left %d bytes", len(rest))
				}
				break
			}
			if n == 0 {
				tb.Fatalf("Next returned an op without consuming input")
			}
			checkOp(tb, op)
			out = append(out, recOf(op))
		}
		for i := range buf {
			buf[i] = 'X'
		}
	}
	return out, nil
}

// checkOp asserts the structural invariants every returned Op satisfies.
func checkOp(tb testing.TB, op *Op) {
	tb.Helper()
	if op.Kind.hasPayload() {
		if op.Payload == nil {
			tb.Fatalf("%v: nil Payload", op.Kind)
		}
		if op.HeaderLen > len(op.Payload) {
			tb.Fatalf("%v: HeaderLen %d > len(Payload) %d", op.Kind, op.HeaderLen, len(op.Payload))
		}
		if op.HeaderLen < -1 {
			tb.Fatalf("%v: HeaderLen %d", op.Kind, op.HeaderLen)
		}
	} else if op.HeaderLen != -1 || op.Payload != nil {
		tb.Fatalf("%v: HeaderLen %d, Payload %q", op.Kind, op.HeaderLen, op.Payload)
	}
	if op.Kind == OpLeafSub && op.Queue != nil && op.Weight < 1 {
		tb.Fatalf("LS+ queue weight %d", op.Weight)
	}
}

func parseString(tb testing.TB, set OpSet, lim Limits, chunks ...string) ([]rec, error) {
	tb.Helper()
	bs := make([][]byte, len(chunks))
	for i, c := range chunks {
		bs[i] = []byte(c)
	}
	return feed(tb, NewParser(set, lim), bs...)
}

func requireSame(t *testing.T, what string, got []rec, gotErr error, want []rec, wantErr error) {
	t.Helper()
	if gotErr != wantErr {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s: ops\n got %+v\nwant %+v", what, got, want)
	}
}

func TestFixtures(t *testing.T) {
	seen := map[string]bool{}
	for _, fx := range fixtures {
		if seen[fx.name] {
			t.Fatalf("duplicate fixture name %q", fx.name)
		}
		seen[fx.name] = true
		t.Run(fx.name, func(t *testing.T) {
			got, err := parseString(t, fx.set, fx.lim, fx.in)
			requireSame(t, "unsplit", got, err, fx.want, fx.err)
		})
	}
}

// TestSplitEveryByte feeds every fixture in two pieces, cut at every
// position, and then one byte at a time; each must give the unsplit result.
func TestSplitEveryByte(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			in := fx.in
			for k := 0; k <= len(in); k++ {
				got, err := parseString(t, fx.set, fx.lim, in[:k], in[k:])
				requireSame(t, fmt.Sprintf("split at %d", k), got, err, fx.want, fx.err)
			}
			chunks := make([]string, len(in))
			for i := range in {
				chunks[i] = in[i : i+1]
			}
			got, err := parseString(t, fx.set, fx.lim, chunks...)
			requireSame(t, "byte at a time", got, err, fx.want, fx.err)
		})
	}
}

// TestSplitRandom cuts the concatenation of all fixtures of a set that
// parse without error into random pieces, reusing one Parser.
func TestSplitRandom(t *testing.T) {
	for _, set := range []struct {
		name string
		set  OpSet
	}{{"client", ClientOps}, {"server", ServerOps}, {"leaf", LeafOps}} {
		t.Run(set.name, func(t *testing.T) {
			var in strings.Builder
			var want []rec
			for _, fx := range fixtures {
				if fx.set != set.set || fx.err != nil || fx.lim != (Limits{}) || strings.HasPrefix(fx.name, "incomplete") {
					continue
				}
				in.WriteString(fx.in)
				want = append(want, fx.want...)
			}
			stream := in.String()
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				var chunks []string
				for rest := stream; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(64))
					chunks = append(chunks, rest[:n])
					rest = rest[n:]
				}
				got, err := parseString(t, set.set, Limits{}, chunks...)
				requireSame(t, "random split", got, err, want, nil)
			}
		})
	}
}

// TestNoCopyWhenWhole checks that an operation wholly inside the buffer is
// returned as slices of that buffer.
func TestNoCopyWhenWhole(t *testing.T) {
	inside := func(b, buf []byte) bool {
		if len(b) == 0 {
			return true
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= start && p+uintptr(len(b)) <= start+uintptr(len(buf))
	}
	cases := []struct {
		set OpSet
		in  string
	}{
		{ClientOps, "PUB foo bar 5\r\nhello\r\n"},
		{ClientOps, "HPUB foo 12 17\r\n" + hdrBlock + "hello\r\n"},
		{ClientOps, "SUB foo q 1\r\n"},
		{ServerOps, "MSG foo 1 bar 5\r\nhello\r\n"},
		{LeafOps, "LMSG foo + bar q1 q2 5\r\nhello\r\n"},
	}
	for _, tc := range cases {
		buf := []byte(tc.in)
		op, n, err := NewParser(tc.set, Limits{}).Next(buf)
		if err != nil || op == nil || n != len(buf) {
			t.Fatalf("%q: op %v, n %d, err %v", tc.in, op, n, err)
		}
		fields := [][]byte{op.Subject, op.Reply, op.Queue, op.Sid, op.Payload}
		fields = append(fields, op.Queues...)
		for i, f := range fields {
			if !inside(f, buf) {
				t.Errorf("%q: field %d (%q) is a copy", tc.in, i, f)
			}
		}
	}
}

func TestStickyError(t *testing.T) {
	p := NewParser(ClientOps, Limits{})
	if _, _, err := p.Next([]byte("BAD\r\n")); err != ErrUnknownOp {
		t.Fatalf("err %v", err)
	}
	op, n, err := p.Next([]byte("PING\r\n"))
	if op != nil || n != 0 || err != ErrUnknownOp {
		t.Fatalf("after error: op %v, n %d, err %v", op, n, err)
	}
	p.Reset()
	got, err := feed(t, p, []byte("PING\r\n"))
	requireSame(t, "after Reset", got, err, []rec{simple(OpPing)}, nil)
}

func TestResetDropsPartialOp(t *testing.T) {
	p := NewParser(ClientOps, Limits{})
	if op, _, err := p.Next([]byte("PUB foo 5\r\nhel")); op != nil || err != nil {
		t.Fatalf("op %v, err %v", op, err)
	}
	p.Reset()
	got, err := feed(t, p, []byte("SUB a 1\r\n"))
	requireSame(t, "after Reset", got, err, []rec{sub("a", "", "1")}, nil)
}

func TestSetLimits(t *testing.T) {
	p := NewParser(ClientOps, Limits{MaxPayload: 10})
	got, err := feed(t, p, []byte("PUB a 8\r\n12345678\r\n"))
	requireSame(t, "before", got, err, []rec{pub("a", "", "12345678")}, nil)
	p.SetLimits(Limits{MaxPayload: 4, MaxControlLine: 8})
	_, err = feed(t, p, []byte("PUB a 8\r\n12345678\r\n"))
	if err != ErrMaxPayload {
		t.Fatalf("err %v, want ErrMaxPayload", err)
	}
	p = NewParser(ClientOps, Limits{})
	p.SetLimits(Limits{MaxControlLine: 8})
	if _, err := feed(t, p, []byte("SUB abcdefgh 1\r\n")); err != ErrControlLineTooLong {
		t.Fatalf("err %v, want ErrControlLineTooLong", err)
	}
}

// TestHMSGForm checks that the OpSet chooses between the client and the
// leaf form of HMSG.
func TestHMSGForm(t *testing.T) {
	in := "HMSG foo 1 12 17\r\n" + hdrBlock + "hello\r\n"
	got, err := parseString(t, OpSetOf(OpMsg), Limits{}, in)
	requireSame(t, "client form", got, err, []rec{hmsg("foo", "1", "", 12, hdrBlock+"hello")}, nil)
	got, err = parseString(t, OpSetOf(OpMsg, OpLeafMsg), Limits{}, in)
	requireSame(t, "leaf form", got, err, []rec{lhmsg("foo", "1", "", 12, hdrBlock+"hello")}, nil)
	got, err = parseString(t, OpSetOf(OpMsg, OpLeafMsg), Limits{}, "MSG foo 1 0\r\n\r\nLMSG foo 1 0\r\n\r\n")
	requireSame(t, "both", got, err, []rec{msg("foo", "1", "", ""), lmsg("foo", "1", "", "")}, nil)
}

func TestEmptyBuffer(t *testing.T) {
	p := NewParser(ClientOps, Limits{})
	op, n, err := p.Next(nil)
	if op != nil || n != 0 || err != nil {
		t.Fatalf("op %v, n %d, err %v", op, n, err)
	}
}

func TestErrText(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrUnknownOp, "Unknown Protocol Operation"},
		{ErrBadArgs, "Unknown Protocol Operation"},
		{ErrMissingCRLF, "Unknown Protocol Operation"},
		{ErrControlLineTooLong, "maximum control line exceeded"},
		{ErrMaxPayload, "Maximum Payload Violation"},
		{fmt.Errorf("conn 7: %w", ErrMaxPayload), "Maximum Payload Violation"},
		{errors.New("other"), ""},
	}
	for _, tc := range cases {
		if got := ErrText(tc.err); got != tc.want {
			t.Errorf("ErrText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestKindString(t *testing.T) {
	if OpLeafSub.String() != "LS+" || OpPub.String() != "PUB" || Kind(0).String() != "Kind(?)" || kindEnd.String() != "Kind(?)" {
		t.Fatal("Kind.String")
	}
	for k := OpInfo; k < kindEnd; k++ {
		if !OpSetOf(k).Has(k) || OpSetOf(k).Has(k+1) {
			t.Fatalf("OpSet %v", k)
		}
	}
}

func TestOpHeaderBody(t *testing.T) {
	op := &Op{Kind: OpPub, HeaderLen: 12, Payload: []byte(hdrBlock + "hello")}
	if string(op.Header()) != hdrBlock || string(op.Body()) != "hello" || cap(op.Header()) != 12 {
		t.Fatalf("header %q body %q", op.Header(), op.Body())
	}
	op = &Op{Kind: OpPub, HeaderLen: -1, Payload: []byte("hello")}
	if op.Header() != nil || string(op.Body()) != "hello" {
		t.Fatalf("header %q body %q", op.Header(), op.Body())
	}
}

// TestLargeSplitBodyReleased checks that a body buffer above the retain
// limit is not kept after its operation.
func TestLargeSplitBodyReleased(t *testing.T) {
	p := NewParser(ClientOps, Limits{})
	body := strings.Repeat("x", retainLimit+1)
	in := fmt.Sprintf("PUB a %d\r\n%s\r\n", len(body), body)
	got, err := feed(t, p, []byte(in[:100]), []byte(in[100:]))
	requireSame(t, "large", got, err, []rec{pub("a", "", body)}, nil)
	feed(t, p, []byte("PING\r\n"))
	if cap(p.body) > retainLimit {
		t.Fatalf("body buffer of %d bytes retained", cap(p.body))
	}
}

// TestPubFastPath checks the one-step PUB parse (pubFast) against the
// state machine, which parses input fed one byte at a time: the same ops
// and the same error, whether the fast path takes the PUB or leaves it to
// the state machine, and no field of an earlier op left in a later one.
func TestPubFastPath(t *testing.T) {
	small := Limits{MaxControlLine: 24, MaxPayload: 40}
	cases := []struct {
		name string
		in   string
		lim  Limits
		want []rec // nil: only compared with the state machine
	}{
		{name: "plain", in: "PUB a.b 3\r\nabc\r\n",
			want: []rec{{Kind: OpPub, Subject: "a.b", HeaderLen: -1, Payload: "abc"}}},
		{name: "reply", in: "PUB a.b _INBOX.1 0\r\n\r\n",
			want: []rec{{Kind: OpPub, Subject: "a.b", Reply: "_INBOX.1", HeaderLen: -1}}},
		{name: "after sub and unsub", in: "SUB a q 7\r\nUNSUB 7 5\r\nPUB a 1\r\nx\r\nPING\r\n",
			want: []rec{{Kind: OpSub, Subject: "a", Queue: "q", Sid: "7", HeaderLen: -1},
				{Kind: OpUnsub, Sid: "7", Max: 5, HeaderLen: -1},
				{Kind: OpPub, Subject: "a", HeaderLen: -1, Payload: "x"},
				{Kind: OpPing, HeaderLen: -1}}},
		{name: "tab is a blank", in: "PUB a\tb 1\r\nx\r\n",
			want: []rec{{Kind: OpPub, Subject: "a", Reply: "b", HeaderLen: -1, Payload: "x"}}},
		{name: "tab in a long line", in: "PUB abcdefghijkl\tmnopqrstu 1\r\nx\r\n"},
		{name: "double space", in: "PUB a  b 1\r\nx\r\n"},
		{name: "lead blanks", in: "PUB   a 1\r\nx\r\n"},
		{name: "trailing blank", in: "PUB a 1 \r\nx\r\n"},
		{name: "LF only", in: "PUB a 1\nx\r\n"},
		{name: "lower case", in: "pub a 1\r\nx\r\n"},
		{name: "too many args", in: "PUB a b c 1\r\nx\r\n"},
		{name: "spaces in a long line", in: "PUB abcdefgh ijklmnop qrstuvwx 1\r\nx\r\n"},
		{name: "no size", in: "PUB a\r\nx\r\n"},
		{name: "bad size", in: "PUB a 1x\r\nx\r\n"},
		{name: "negative size", in: "PUB a -1\r\nx\r\n"},
		{name: "missing CR", in: "PUB a 1\r\nxy\r\n"},
		{name: "missing LF", in: "PUB a 1\r\nx\rPING\r\n"},
		{name: "over max payload", in: "PUB a 41\r\n" + strings.Repeat("x", 41) + "\r\n", lim: small},
		{name: "at max payload", in: "PUB a 40\r\n" + strings.Repeat("x", 40) + "\r\n", lim: small},
		{name: "over max control line", in: "PUB " + strings.Repeat("a", 23) + " 1\r\nx\r\n", lim: small},
		{name: "at max control line", in: "PUB " + strings.Repeat("a", 22) + " 1\r\nx\r\n", lim: small},
		{name: "HPUB", in: "HPUB a 12 13\r\n" + hdrBlock + "x\r\n"},
		{name: "many", in: strings.Repeat("PUB sensors.temp 2\r\nhi\r\nPUB sensors.temp r.1 0\r\n\r\n", 20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole, wholeErr := feed(t, NewParser(ClientOps, tc.lim), []byte(tc.in))
			var chunks [][]byte
			for i := range len(tc.in) {
				chunks = append(chunks, []byte(tc.in[i:i+1]))
			}
			slow, slowErr := feed(t, NewParser(ClientOps, tc.lim), chunks...)
			if wholeErr != slowErr || !reflect.DeepEqual(whole, slow) {
				t.Fatalf("whole:\n%+v, %v\nbyte at a time:\n%+v, %v", whole, wholeErr, slow, slowErr)
			}
			if tc.want != nil && (wholeErr != nil || !reflect.DeepEqual(whole, tc.want)) {
				t.Fatalf("got %+v, %v\nwant %+v", whole, wholeErr, tc.want)
			}
		})
	}
}
