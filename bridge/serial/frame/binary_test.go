package frame

import (
	"errors"
	"testing"
)

func TestLengthPrefixed(t *testing.T) {
	cases := []struct {
		name   string
		size   int
		little bool
		max    int
		in     []byte
		want   []string
	}{
		{"one byte", 1, false, 0, []byte("\x02ab\x00\x01c"), []string{"ab", "", "c"}},
		{"two bytes big", 2, false, 0, []byte("\x00\x03abc"), []string{"abc"}},
		{"two bytes little", 2, true, 0, []byte("\x03\x00abc"), []string{"abc"}},
		{"four bytes big", 4, false, 0, []byte("\x00\x00\x00\x01z"), []string{"z"}},
		{"four bytes little", 4, true, 0, []byte("\x01\x00\x00\x00z"), []string{"z"}},
		{"incomplete waits", 2, false, 0, []byte("\x00\x05ab"), nil},
		{"too long skipped", 1, false, 2, []byte("\x03abc\x01d"), []string{"!too long", "d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewLengthPrefixed(tc.size, tc.little, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			requireEvents(t, collect(f, tc.in), tc.want...)
		})
	}
	if _, err := NewLengthPrefixed(3, false, 0); err == nil {
		t.Fatal("a 3-byte prefix was accepted")
	}
	f, _ := NewLengthPrefixed(1, false, 0)
	if _, err := f.Encode(nil, make([]byte, 256)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("256 bytes behind a 1-byte prefix: %v", err)
	}
	got, _ := f.Encode(nil, []byte("hi"))
	if string(got) != "\x02hi" {
		t.Fatalf("Encode = %q", got)
	}
}

func TestDelimited(t *testing.T) {
	f, err := NewDelimited(0x7e, 0x7d, 4)
	if err != nil {
		t.Fatal(err)
	}
	requireEvents(t, collect(f, []byte("\x7eab\x7d\x5e\x7d\x5d\x7e\x7e\x7ec\x7e")), "ab\x7e\x7d", "c")
	requireEvents(t, collect(f, []byte("a\x7d\x7e")), "!malformed")
	requireEvents(t, collect(f, []byte("a\x7dab\x7e")), "!malformed")
	requireEvents(t, collect(f, []byte("abcde\x7eok\x7e")), "!too long", "ok")
	got, err := f.Encode(nil, []byte("a\x7e\x7d"))
	if err != nil || string(got) != "a\x7d\x5e\x7d\x5d\x7e" {
		t.Fatalf("Encode = %q, %v", got, err)
	}
	if _, err := f.Encode(nil, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Encode of nothing = %v", err)
	}
	if _, err := NewDelimited(1, 1, 0); err == nil {
		t.Fatal("delimiter == escape was accepted")
	}
}
