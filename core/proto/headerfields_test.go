package proto

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestForEachHeaderField(t *testing.T) {
	hdr := []byte("NATS/1.0\r\nA: 1\r\n  B :  two words \r\nno colon\r\n: empty name\r\nC:\r\n\r\n")
	var got []string
	ForEachHeaderField(hdr, func(name, value []byte) { got = append(got, string(name)+"="+string(value)) })
	require.DeepEqual(t, got, []string{"A=1", "B=two words", "C="})
	ForEachHeaderField(nil, func(name, value []byte) { t.Fatalf("a field in nil: %q", name) })
	ForEachHeaderField([]byte("NATS/1.0 503"), func(name, value []byte) { t.Fatalf("a field in a status line: %q", name) })
}

func TestValidHeaderNameValue(t *testing.T) {
	for _, tc := range []struct {
		s           string
		name, value bool
	}{
		{"Content-Type", true, true},
		{"", false, true},
		{"a b", false, true},
		{"a:b", false, true},
		{"caf\u00e9", false, true},
		{"x\x7f", false, true},
		{"two\r\nlines", false, false},
		{"lf\n", false, false},
	} {
		require.Equal(t, ValidHeaderName(tc.s), tc.name, "name "+tc.s)
		require.Equal(t, ValidHeaderValue(tc.s), tc.value, "value "+tc.s)
	}
}
