package cli

import (
	"bytes"
	"testing"
	"text/tabwriter"

	"github.com/leafbox/leafbox/core/require"
)

// TestTableMatchesTabwriter: table lays out text as text/tabwriter with the
// settings the status tables used.
func TestTableMatchesTabwriter(t *testing.T) {
	inputs := []string{
		"",
		"A\tB\tC\nxx\tyyyy\tz\n",
		"KIND\tNAME\tLAST ERROR\nmqtt\tsensors\tdial tcp: connection refused (3s ago)\nmodbus\tplc-1\t-\n",
		"a\tb\nonly one cell\nlonger cell\tc\td\n",
		"a\tb\tc\td\ne\tf\ng\th\ti\n\n\tx\t\n",
		"héllo\twörld\tx\nß\tü\ty\n",
		"no newline at the end\tx",
		"\t\t\n\t\n",
	}
	for _, in := range inputs {
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		_, _ = tw.Write([]byte(in))
		require.NoError(t, tw.Flush())
		var got bytes.Buffer
		tb := newTable(&got)
		_, _ = tb.Write([]byte(in))
		require.NoError(t, tb.Flush())
		require.Equal(t, got.String(), want.String(), in)
	}
}

// FuzzTable: table and text/tabwriter agree on any text without the
// characters tabwriter treats specially ('\v', '\f', '\r').
func FuzzTable(f *testing.F) {
	f.Add("A\tB\nxx\tyyyy\n")
	f.Add("a\tb\nc\nd\te\tf\n")
	f.Fuzz(func(t *testing.T, in string) {
		if bytes.ContainsAny([]byte(in), "\v\f\r\xff") {
			return
		}
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		_, _ = tw.Write([]byte(in))
		_ = tw.Flush()
		tb := newTable(&got)
		_, _ = tb.Write([]byte(in))
		_ = tb.Flush()
		require.Equal(t, got.String(), want.String(), in)
	})
}
