package proto

import "testing"

func TestHeaderValue(t *testing.T) {
	hdr := []byte("NATS/1.0 503\r\nNats-Subject: foo.bar\r\nA:1\r\nB:   spaced \r\nEmpty:\r\nA: 2\r\nLast: x\r\n\r\n")
	cases := []struct {
		key  string
		want string
		nil  bool
	}{
		{key: "Nats-Subject", want: "foo.bar"},
		{key: "A", want: "1"}, // the first of repeated fields
		{key: "B", want: "spaced "},
		{key: "Empty", want: ""},
		{key: "Last", want: "x"},
		{key: "nats-subject", nil: true}, // exact case, as nats-server
		{key: "Nats", nil: true},         // prefix of a name
		{key: "NATS/1.0 503", nil: true}, // never the status line
		{key: "Missing", nil: true},
		{key: "", nil: true},
	}
	for _, tc := range cases {
		got := HeaderValue(hdr, tc.key)
		if tc.nil {
			if got != nil {
				t.Errorf("%q: got %q, want nil", tc.key, got)
			}
			continue
		}
		if got == nil || string(got) != tc.want {
			t.Errorf("%q: got %q, want %q", tc.key, got, tc.want)
		}
		if len(got) != cap(got) {
			t.Errorf("%q: capacity not cut", tc.key)
		}
	}
	if v := HeaderValue([]byte("NATS/1.0\r\nK: v"), "K"); string(v) != "v" {
		t.Errorf("unterminated last line: %q", v)
	}
	if v := HeaderValue(nil, "K"); v != nil {
		t.Errorf("nil header: %q", v)
	}
	if v := HeaderValue([]byte("K: v\r\n"), "K"); v != nil {
		t.Errorf("field on first line: %q", v)
	}
}

func TestAppendStatusHeader(t *testing.T) {
	got := AppendStatusHeader(nil, 503, "", "Nats-Subject", "ping")
	want := "NATS/1.0 503\r\nNats-Subject: ping\r\n\r\n"
	if string(got) != want || len(got) != 32+len("ping") {
		t.Fatalf("got %q (%d bytes), want %q", got, len(got), want)
	}
	got = AppendStatusHeader(nil, 404, "No Messages")
	if string(got) != "NATS/1.0 404 No Messages\r\n\r\n" {
		t.Fatalf("got %q", got)
	}
	got = AppendStatusHeader([]byte("x"), 100, "Idle Heartbeat", "A", "1", "B")
	if string(got) != "xNATS/1.0 100 Idle Heartbeat\r\nA: 1\r\nB: \r\n\r\n" {
		t.Fatalf("got %q", got)
	}
	dst := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() {
		_ = AppendStatusHeader(dst, 503, "", "Nats-Subject", "foo")
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestParseStatus(t *testing.T) {
	cases := []struct {
		hdr  string
		code int
		desc string
	}{
		{"NATS/1.0 503\r\n\r\n", 503, ""},
		{"NATS/1.0 404 No Messages\r\n\r\n", 404, "No Messages"},
		{"NATS/1.0  408   Request Timeout  \r\nA: b\r\n\r\n", 408, "Request Timeout"},
		{"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\n\r\n", 100, "Idle Heartbeat"},
		{"NATS/1.0 409\r\n", 409, ""},
		{"NATS/1.0 409", 409, ""},
		{"NATS/1.0\r\nA: 1\r\n\r\n", 0, ""},
		{"NATS/1.0 50\r\n\r\n", 0, ""},
		{"NATS/1.0 5x3\r\n\r\n", 0, ""},
		{"HTTP/1.1 200\r\n\r\n", 0, ""},
		{"", 0, ""},
	}
	for _, tc := range cases {
		code, desc := ParseStatus([]byte(tc.hdr))
		if code != tc.code || string(desc) != tc.desc {
			t.Errorf("%q: got %d %q, want %d %q", tc.hdr, code, desc, tc.code, tc.desc)
		}
		if tc.desc == "" && desc != nil {
			t.Errorf("%q: desc %q, want nil", tc.hdr, desc)
		}
	}
}

func TestStatusRoundTrip(t *testing.T) {
	hdr := AppendStatusHeader(nil, 503, "", "Nats-Subject", "orders.new")
	code, desc := ParseStatus(hdr)
	if code != 503 || desc != nil {
		t.Fatalf("status %d %q", code, desc)
	}
	if v := HeaderValue(hdr, "Nats-Subject"); string(v) != "orders.new" {
		t.Fatalf("Nats-Subject %q", v)
	}
}
