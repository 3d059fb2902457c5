package proto

import (
	"strings"
	"testing"
)

func TestHasHeader(t *testing.T) {
	hdr := []byte("NATS/1.0 503\r\nNats-Msg-Id: 1\r\nEmpty:\r\n\r\n")
	for key, want := range map[string]bool{
		"Nats-Msg-Id": true, "Empty": true,
		"nats-msg-id": false, // byte for byte, as nats-server
		"Nats-Msg":    false, "NATS/1.0 503": false, "": false,
	} {
		if got := HasHeader(hdr, key); got != want {
			t.Errorf("HasHeader(%q) = %v, want %v", key, got, want)
		}
	}
	if HasHeader(nil, "A") {
		t.Error("HasHeader(nil)")
	}
	if n := testing.AllocsPerRun(100, func() { _ = HasHeader(hdr, "Missing") }); n != 0 {
		t.Fatalf("HasHeader allocates %v times", n)
	}
}

// TestHasHeaderDoesNotAllocate: Capture looks for the publisher's
// Nats-Msg-Id on the publisher's read goroutine (moved from leaf/outbox).
func TestHasHeaderDoesNotAllocate(t *testing.T) {
	const HeaderMsgID = "Nats-Msg-Id"
	hasHeader := HasHeaderFold
	hdr := []byte("NATS/1.0\r\nA: b\r\nLeafbox-Time: x\r\n nats-msg-id : 7\r\n\r\n")
	if !hasHeader(hdr, HeaderMsgID) || hasHeader(hdr, "Nats-Msg") || hasHeader(nil, HeaderMsgID) || hasHeader([]byte("NATS/1.0"), "NATS/1.0") {
		t.Fatal("hasHeader is wrong")
	}
	if n := testing.AllocsPerRun(100, func() { _ = hasHeader(hdr, HeaderMsgID) }); n != 0 {
		t.Fatalf("hasHeader allocates %v times", n)
	}
}

// TestHeaderHelpers is the dead-letter outbox's header test (moved from
// leaf/outbox): lookups, removing the Leafbox-Dead-* fields, and a value
// flattened to one line.
func TestHeaderHelpers(t *testing.T) {
	const deadHeaderPrefix = "Leafbox-Dead-"
	lookupHeader := func(hdr []byte, name string) (string, bool) {
		v, ok := HeaderValueFold(hdr, name)
		return string(v), ok
	}
	hdr := []byte("NATS/1.0\r\nNats-Msg-Id: a.b.1\r\nLeafbox-Dead-Reason: no_stream\r\nX: y\r\n\r\n")
	if v, ok := lookupHeader(hdr, "nats-msg-id"); !ok || v != "a.b.1" {
		t.Fatalf("lookupHeader: %q %v", v, ok)
	}
	if _, ok := lookupHeader(hdr, "Nats-Msg"); ok {
		t.Fatal("lookupHeader matched a prefix")
	}
	if n := testing.AllocsPerRun(100, func() { lookupHeader(hdr, "Missing") }); n != 0 {
		t.Fatalf("lookupHeader of an absent header allocates %v times", n)
	}
	got := DeleteHeaders(hdr, func(name []byte) bool { return HeaderNameHasPrefix(name, deadHeaderPrefix) })
	if want := "NATS/1.0\r\nNats-Msg-Id: a.b.1\r\nX: y\r\n\r\n"; string(got) != want {
		t.Fatalf("removeHeaders: %q", got)
	}
	if got := DeleteHeaders(hdr, func([]byte) bool { return true }); got != nil {
		t.Fatalf("removing every line: %q, want nil", got)
	}
	if got := string(AppendHeaderField(nil, "E", "two\r\nlines")); got != "E: two  lines\r\n" {
		t.Fatalf("appendHeader: %q", got)
	}
}

func TestHeaderValueFold(t *testing.T) {
	hdr := []byte("NATS/1.0 503\r\nnats-msg-id:  a.b.1 \r\n  Spaced-Name :v\r\nEmpty:   \r\nA: 1\r\na: 2\r\nLast: x")
	cases := []struct {
		key  string
		want string
		ok   bool
	}{
		{"Nats-Msg-Id", "a.b.1", true}, // any case, value trimmed
		{"NATS-MSG-ID", "a.b.1", true},
		{"Spaced-Name", "v", true}, // blanks around the name ignored
		{"Empty", "", true},
		{"A", "1", true}, // the first of repeated fields, whatever the case
		{"Last", "x", true},
		{"Nats-Msg", "", false}, // a prefix is not a name
		{"NATS/1.0 503", "", false},
		{"Missing", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		v, ok := HeaderValueFold(hdr, tc.key)
		if ok != tc.ok || string(v) != tc.want {
			t.Errorf("HeaderValueFold(%q) = %q %v, want %q %v", tc.key, v, ok, tc.want, tc.ok)
		}
		if HasHeaderFold(hdr, tc.key) != tc.ok {
			t.Errorf("HasHeaderFold(%q) != %v", tc.key, tc.ok)
		}
	}
	for _, h := range []string{"", "NATS/1.0", "NATS/1.0\r\n", "K: v"} {
		if _, ok := HeaderValueFold([]byte(h), "K"); ok {
			t.Errorf("HeaderValueFold(%q) found K", h)
		}
	}
	if v, ok := HeaderValueFold(hdr, "A"); !ok || cap(v) != len(v) {
		t.Fatalf("value %q with room %d: appending to it would overwrite the block", v, cap(v)-len(v))
	}
	if n := testing.AllocsPerRun(100, func() {
		_, _ = HeaderValueFold(hdr, "Missing")
		_, _ = HeaderValueFold(hdr, "Last")
		_ = HasHeaderFold(hdr, "nats-msg-id")
	}); n != 0 {
		t.Fatalf("the Fold lookups allocate %v times", n)
	}
}

func TestHeaderNameFold(t *testing.T) {
	if !HeaderNameIs([]byte("nats-MSG-id"), "Nats-Msg-Id") || HeaderNameIs([]byte("Nats-Msg"), "Nats-Msg-Id") || HeaderNameIs([]byte("Nats-Msg-Idx"), "Nats-Msg-Id") {
		t.Fatal("HeaderNameIs")
	}
	if !HeaderNameHasPrefix([]byte("leafbox-dead-reason"), "Leafbox-Dead-") || HeaderNameHasPrefix([]byte("Leafbox-Dea"), "Leafbox-Dead-") || !HeaderNameHasPrefix([]byte("x"), "") {
		t.Fatal("HeaderNameHasPrefix")
	}
	if HeaderNameIs([]byte("["), "{") { // '[' is 'Z'+1, '{' is 'z'+1: no folding outside letters
		t.Fatal("HeaderNameIs folded a non-letter")
	}
}

func TestAppendHeader(t *testing.T) {
	cases := []struct {
		hdr, want string
	}{
		{"", "NATS/1.0\r\nK: v\r\n\r\n"},
		{"NATS/1.0\r\n\r\n", "NATS/1.0\r\nK: v\r\n\r\n"},
		{"NATS/1.0\r\nA: b\r\n\r\n", "NATS/1.0\r\nA: b\r\nK: v\r\n\r\n"},
		{"NATS/1.0 503\r\nA: b\r\n\r\n", "NATS/1.0 503\r\nA: b\r\nK: v\r\n\r\n"},
		{"NATS/1.0\r\nA: b", "NATS/1.0\r\nK: v\r\n\r\n"}, // no complete block: a new one
	}
	for _, tc := range cases {
		hdr := []byte(tc.hdr)
		if got := string(AppendHeader(nil, hdr, "K", "v")); got != tc.want {
			t.Errorf("AppendHeader(%q) = %q, want %q", tc.hdr, got, tc.want)
		}
		if got := string(AppendHeader(nil, hdr, "K", []byte("v"))); got != tc.want {
			t.Errorf("AppendHeader(%q, []byte) = %q, want %q", tc.hdr, got, tc.want)
		}
		if string(hdr) != tc.hdr {
			t.Errorf("AppendHeader changed hdr to %q", hdr)
		}
		if got := string(AppendHeaderFields([]byte("x"), hdr, []byte("K: v\r\n"))); got != "x"+tc.want {
			t.Errorf("AppendHeaderFields(%q) = %q, want x%q", tc.hdr, got, tc.want)
		}
	}
	if got := string(AppendHeader(nil, nil, "E", "two\r\nlines")); got != "NATS/1.0\r\nE: two  lines\r\n\r\n" {
		t.Fatalf("a value with CRLF: %q", got)
	}
	if got := string(AppendHeaderField(nil, "E", "two\r\nlines")); got != "E: two  lines\r\n" {
		t.Fatalf("AppendHeaderField: %q", got)
	}
	if got := string(AppendHeaderFields(nil, nil, nil)); got != EmptyHeader {
		t.Fatalf("no fields into no block: %q", got)
	}

	hdr := []byte("NATS/1.0\r\nA: b\r\n\r\n")
	dst := make([]byte, 0, 256)
	val := []byte("gw.tel.1")
	if n := testing.AllocsPerRun(100, func() {
		_ = AppendHeader(dst, hdr, "Nats-Msg-Id", val)
		_ = AppendHeader(dst, nil, "Nats-Msg-Id", "gw.tel.1")
		f := AppendHeaderField(dst, "K", "v")
		_ = AppendHeaderFields(f[len(f):], hdr, f) // into the room after f
	}); n != 0 {
		t.Fatalf("appending into room allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = AppendHeader(nil, hdr, "Nats-Msg-Id", val) }); n != 1 {
		t.Fatalf("a new block takes %v allocations, want 1", n)
	}
}

func TestDeleteHeaders(t *testing.T) {
	dropX := func(name []byte) bool { return HeaderNameHasPrefix(name, "X-") }
	cases := []struct {
		hdr, want string
		same      bool // hdr itself comes back
	}{
		{"NATS/1.0\r\nX-A: 1\r\nB: 2\r\nx-c: 3\r\n\r\n", "NATS/1.0\r\nB: 2\r\n\r\n", false},
		{"NATS/1.0\r\n X-A : 1\r\nB: 2\r\n\r\n", "NATS/1.0\r\nB: 2\r\n\r\n", false}, // blanks around the name
		{"NATS/1.0\r\nB: 2\r\nX-A: 1\r\n\r\n", "NATS/1.0\r\nB: 2\r\n\r\n", false},
		{"NATS/1.0\r\nX-A: 1\r\n\r\n", "", false},                         // nothing left: nil
		{"NATS/1.0 503\r\nX-A: 1\r\n\r\n", "NATS/1.0 503\r\n\r\n", false}, // the status stays
		{"NATS/1.0\r\nB: 2\r\n\r\n", "NATS/1.0\r\nB: 2\r\n\r\n", true},
		{"NATS/1.0\r\nX-A no colon\r\n\r\n", "NATS/1.0\r\nX-A no colon\r\n\r\n", true},
		{"NATS/1.0\r\n\r\n", "NATS/1.0\r\n\r\n", true},
		{"NATS/1.0", "NATS/1.0", true},
		{"", "", true},
	}
	for _, tc := range cases {
		hdr := []byte(tc.hdr)
		got := DeleteHeaders(hdr, dropX)
		if string(got) != tc.want || (tc.want == "" && got != nil && !tc.same) {
			t.Errorf("DeleteHeaders(%q) = %q, want %q", tc.hdr, got, tc.want)
		}
		if same := len(got) > 0 && &got[0] == &hdr[0]; same != (tc.same && len(hdr) > 0) {
			t.Errorf("DeleteHeaders(%q): hdr itself returned %v, want %v", tc.hdr, same, tc.same)
		}
		if string(hdr) != tc.hdr {
			t.Errorf("DeleteHeaders changed hdr to %q", hdr)
		}
	}
	if got := DeleteHeaders([]byte("NATS/1.0\r\nA: 1\r\nB: 2\r\n\r\n"), func([]byte) bool { return true }); got != nil {
		t.Fatalf("dropping every field: %q", got)
	}
	hdr := []byte("NATS/1.0\r\nA: 1\r\nB: 2\r\n\r\n")
	if n := testing.AllocsPerRun(100, func() { _ = DeleteHeaders(hdr, dropX) }); n != 0 {
		t.Fatalf("deleting nothing allocates %v times", n)
	}
	dropA := func(name []byte) bool { return HeaderNameIs(name, "a") }
	if n := testing.AllocsPerRun(100, func() { _ = DeleteHeaders(hdr, dropA) }); n != 1 {
		t.Fatalf("deleting a field takes %v allocations, want 1", n)
	}
}

// FuzzHeaderEdit checks the lookups and edits against naive models
// written with strings.Split and friends, and that adding a field then
// deleting it round-trips.
func FuzzHeaderEdit(f *testing.F) {
	f.Add([]byte("NATS/1.0\r\nA: 1\r\nnats-msg-id: x\r\n\r\n"), "Nats-Msg-Id", "v\r\n")
	f.Add([]byte("NATS/1.0 503\r\nK:v\r\n\r\n"), "K", "")
	f.Add([]byte(""), "K", "v")
	f.Add([]byte("NATS/1.0\r\n K : v \r\nno colon\r\n"), "k", "w")
	f.Add([]byte("NATS/1.0\r\n\r\n\r\nK: 1\r\n\r\n"), "K", "2")
	f.Fuzz(func(t *testing.T, hdr []byte, key, value string) {
		orig := string(hdr)
		v, ok := HeaderValueFold(hdr, key)
		wv, wok := naiveLookupFold(orig, key)
		if ok != wok || string(v) != wv {
			t.Fatalf("HeaderValueFold(%q, %q) = %q %v, naive %q %v", hdr, key, v, ok, wv, wok)
		}
		if HasHeader(hdr, key) != naiveHasExact(orig, key) {
			t.Fatalf("HasHeader(%q, %q) disagrees with the naive model", hdr, key)
		}
		drop := func(name []byte) bool { return HeaderNameIs(name, key) }
		del := DeleteHeaders(hdr, drop)
		want, dropped, wnil := naiveDelete(orig, key)
		if string(del) != want || (dropped && wnil != (del == nil)) {
			t.Fatalf("DeleteHeaders(%q, %q) = %q, naive %q (nil %v)", hdr, key, del, want, wnil)
		}
		if !dropped && len(hdr) > 0 && &del[0] != &hdr[0] {
			t.Fatalf("DeleteHeaders(%q, %q) dropped nothing but copied", hdr, key)
		}
		if string(hdr) != orig {
			t.Fatal("an edit changed its input")
		}
		if !validName(key) {
			return
		}
		added := AppendHeader(nil, hdr, key, value)
		if want := naiveAppend(orig, key, value); string(added) != want {
			t.Fatalf("AppendHeader(%q, %q, %q) = %q, naive %q", hdr, key, value, added, want)
		}
		if string(hdr) != orig {
			t.Fatal("AppendHeader changed its input")
		}
		if !strings.HasSuffix(orig, "\r\n\r\n") || strings.Contains(orig[:len(orig)-2], "\r\n\r\n") {
			return // the round trips below hold for well-formed blocks
		}
		if !ok { // the added field is the first one of its name
			if v, ok := HeaderValueFold(added, key); !ok || string(v) != strings.TrimSpace(flatten(value)) {
				t.Fatalf("added %q=%q, looked up %q %v", key, value, v, ok)
			}
		}
		// Deleting the name after adding it gives what deleting it gave,
		// but that an empty bare block is no block.
		back := DeleteHeaders(added, drop)
		if want := string(del); string(back) != strings.TrimPrefix(want, EmptyHeader) || (back == nil) != (want == "" || want == EmptyHeader) {
			t.Fatalf("add then delete of %q: %q, want %q", key, back, del)
		}
	})
}

func validName(key string) bool {
	return key != "" && !strings.ContainsAny(key, ":\r\n \t\v\f") && strings.TrimSpace(key) == key
}

func flatten(v string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(v) }

func naiveFields(hdr string) []string {
	_, rest, ok := strings.Cut(hdr, "\r\n")
	if !ok {
		return nil
	}
	return strings.Split(rest, "\r\n")
}

func naiveLookupFold(hdr, key string) (string, bool) {
	for _, line := range naiveFields(hdr) {
		if k, v, ok := strings.Cut(line, ":"); ok && asciiFold(strings.TrimSpace(k)) == asciiFold(key) {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func naiveHasExact(hdr, key string) bool {
	for _, line := range naiveFields(hdr) {
		if key != "" && strings.HasPrefix(line, key+":") {
			return true
		}
	}
	return false
}

func asciiFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func naiveAppend(hdr, key, value string) string {
	line := key + ": " + flatten(value) + "\r\n"
	if !strings.HasSuffix(hdr, "\r\n\r\n") {
		return "NATS/1.0\r\n" + line + "\r\n"
	}
	return hdr[:len(hdr)-2] + line + "\r\n"
}

// naiveDelete returns the block without the fields named key, whether
// it dropped any and whether the result is nil.
func naiveDelete(hdr, key string) (out string, dropped, isNil bool) {
	lines := strings.Split(strings.TrimSuffix(hdr, "\r\n\r\n"), "\r\n")
	if len(lines) < 2 {
		return hdr, false, false
	}
	out = lines[0] + "\r\n"
	kept := 0
	for _, line := range lines[1:] {
		if k, _, ok := strings.Cut(line, ":"); ok && asciiFold(strings.TrimSpace(k)) == asciiFold(key) {
			dropped = true
			continue
		}
		out += line + "\r\n"
		kept++
	}
	switch {
	case !dropped:
		return hdr, false, false
	case kept == 0 && lines[0] == "NATS/1.0":
		return "", true, true
	}
	return out + "\r\n", true, false
}
