package mqtt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/proto"
)

// FuzzHeaderRoundTrip: the user properties a header can hold survive MQTT
// 5 → header → MQTT 5 in order; the others are left out, never mangled
// into other fields; any header block converts without a panic.
func FuzzHeaderRoundTrip(f *testing.F) {
	f.Add("unit", "C", "text/plain", []byte("NATS/1.0\r\nA: b\r\n\r\n"))
	f.Add("a:b", "x\r\nEvil: 1", "", []byte("NATS/1.0 503\r\n\r\n"))
	f.Add("", "", "ct\n", []byte("garbage"))
	f.Fuzz(func(t *testing.T, key, value, contentType string, hdr []byte) {
		p := &packet{user: []property{{key, value}, {"k2", "v2"}}, contentType: contentType}
		out := &packet{}
		fromHeader(out, appendHeader(nil, p, "id-1"))
		var want []property
		if proto.ValidHeaderName(key) && proto.ValidHeaderValue(value) {
			want = append(want, property{key, strings.TrimSpace(value)})
		}
		want = append(want, property{"k2", "v2"}, property{headerMsgID, "id-1"})
		if len(out.user) != len(want) {
			t.Fatalf("properties %q, want %q", out.user, want)
		}
		for i := range want {
			if out.user[i] != want[i] {
				t.Fatalf("properties %q, want %q", out.user, want)
			}
		}
		if proto.ValidHeaderValue(contentType) && out.contentType != strings.TrimSpace(contentType) {
			t.Fatalf("content type %q, want %q", out.contentType, contentType)
		}
		// Any block: every field reported lies within it.
		proto.ForEachHeaderField(hdr, func(name, value []byte) {
			if len(name) == 0 || !bytes.Contains(hdr, name) || !bytes.Contains(hdr, value) {
				t.Fatalf("field %q: %q not from %q", name, value, hdr)
			}
		})
		fromHeader(&packet{}, hdr)
	})
}
