package frame

import (
	"errors"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	cases := []struct {
		name string
		max  int
		in   []string
		want []string
	}{
		{"lf and crlf", 0, []string{"a\nb\r\nc"}, []string{"a", "b"}},
		{"split line", 0, []string{"hel", "lo\r", "\nwor", "ld\n"}, []string{"hello", "world"}},
		{"empty lines skipped", 0, []string{"\n\r\n\nx\n"}, []string{"x"}},
		{"exactly max with crlf", 3, []string{"abc\r\n"}, []string{"abc"}},
		{"too long then good", 3, []string{"abcd\nok\n"}, []string{"!too long", "ok"}},
		{"too long across feeds discarded to lf", 3, []string{"abcdef", "ghi", "jk\nok\n"}, []string{"!too long", "ok"}},
		{"lone cr is data", 0, []string{"a\rb\n"}, []string{"a\rb"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var chunks [][]byte
			for _, s := range tc.in {
				chunks = append(chunks, []byte(s))
			}
			requireEvents(t, collect(NewLines(tc.max, false), chunks...), tc.want...)
		})
	}
}

func TestJSONLines(t *testing.T) {
	evs := collect(NewJSONLines(0, false), []byte("{\"t\":21.5}\n{bad\n[1,2]\r\n\"s\"\n"))
	requireEvents(t, evs, `{"t":21.5}`, "!invalid JSON", "[1,2]", `"s"`)
	var fe *Error
	if !errors.As(evs[1].err, &fe) || !errors.Is(evs[1].err, ErrInvalidJSON) || fe.Len != 4 {
		t.Fatalf("bad line error = %#v", evs[1].err)
	}
}

func TestLinesEncode(t *testing.T) {
	got, err := NewLines(0, false).Encode([]byte("x"), []byte("on"))
	if err != nil || string(got) != "xon\n" {
		t.Fatalf("Encode = %q, %v", got, err)
	}
	got, err = NewLines(0, true).Encode(nil, []byte("on"))
	if err != nil || string(got) != "on\r\n" {
		t.Fatalf("Encode crlf = %q, %v", got, err)
	}
	for _, bad := range []string{"a\nb", "a\r"} {
		if _, err := NewLines(0, false).Encode(nil, []byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Encode(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := NewLines(2, false).Encode(nil, []byte("abc")); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Encode too long = %v", err)
	}
	if _, err := NewJSONLines(0, false).Encode(nil, []byte("{")); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("Encode invalid JSON = %v", err)
	}
}

func TestLinesReset(t *testing.T) {
	f := NewLines(0, false)
	f.Feed([]byte("partial"))
	f.Reset()
	requireEvents(t, collect(f, []byte("next\n")), "next")
}

func TestLinesBufferBounded(t *testing.T) {
	f := NewLines(16, false)
	for range 1000 {
		collect(f, []byte(strings.Repeat("x", 100)))
	}
	if n := cap(f.in.buf); n > 1024 {
		t.Fatalf("a line that never ends grew the buffer to %d bytes", n)
	}
}
