package jsapi

import (
	"strings"
	"testing"
)

// TestCheckName is the table of the one name rule every stream,
// consumer, durable, uplink, downlink and domain name follows.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // part of the error; "" for a valid name
	}{
		{"ORDERS", ""},
		{"a-b_c:d=e@f#g", ""},
		{"ütf8-名前", ""},
		{"outbox", ""},
		{"LOCK", ""},
		{strings.Repeat("n", MaxNameLen), ""},
		{"", "must not be empty"},
		{strings.Repeat("n", MaxNameLen+1), "is 256 bytes long, more than 255"},
		{"a/b", `must not contain '/'`},
		{`a\b`, `must not contain '\\'`},
		{".", `must not contain '.'`},
		{"..", `must not contain '.'`},
		{".hidden", `must not contain '.'`},
		{"a.b", `must not contain '.'`},
		{"a*", `must not contain '*'`},
		{"a>", `must not contain '>'`},
		{"a b", "whitespace"},
		{"a\tb", "whitespace"},
		{"a\nb", "whitespace"},
		{"a\rb", "whitespace"},
		{"a\fb", "whitespace"},
		{"a\x00b", "control character U+0000"},
		{"a\x1bb", "control character U+001B"},
		{"a\x7fb", "control character U+007F"},
		{"a\u0085b", "control character U+0085"},
	} {
		err := CheckName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckName(%q) = %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckName(%q) = %v, want %q", tc.name, err, tc.want)
		}
		if ValidName(tc.name) != (tc.want == "") {
			t.Errorf("ValidName(%q) = %v", tc.name, tc.want != "")
		}
	}
}
