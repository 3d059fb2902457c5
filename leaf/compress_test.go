package leaf

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

// TestSelectCompression is nats-server's selectCompressionMode table for
// a soliciting side with mode local and a hub announcing hub.
func TestSelectCompression(t *testing.T) {
	for _, tc := range []struct{ local, hub, want string }{
		{CompressionS2Auto, "", compressionNotSupported},
		{CompressionS2Fast, compressionNotSupported, compressionNotSupported},
		{CompressionS2Fast, CompressionOff, CompressionOff},
		{CompressionAccept, CompressionAccept, CompressionOff},
		{CompressionS2Best, CompressionAccept, CompressionS2Best},
		{CompressionS2Auto, CompressionAccept, CompressionS2Auto},
		{CompressionAccept, CompressionS2Auto, CompressionS2Fast},
		{CompressionAccept, CompressionS2Better, CompressionS2Better},
		{CompressionS2Fast, CompressionS2Best, CompressionS2Fast},
		{CompressionS2Auto, CompressionS2Uncompressed, CompressionS2Auto},
	} {
		got, err := selectCompression(tc.local, tc.hub)
		if err != nil || got != tc.want {
			t.Errorf("selectCompression(%q, %q) = %q, %v; want %q", tc.local, tc.hub, got, err, tc.want)
		}
	}
	if _, err := selectCompression(CompressionS2Auto, "zstd"); err == nil {
		t.Error("unknown hub mode accepted")
	}
}

func TestAutoLevel(t *testing.T) {
	def := []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
	for _, tc := range []struct {
		rtt        time.Duration
		thresholds []time.Duration
		want       string
	}{
		{time.Millisecond, def, CompressionS2Uncompressed},
		{10 * time.Millisecond, def, CompressionS2Uncompressed},
		{11 * time.Millisecond, def, CompressionS2Fast},
		{80 * time.Millisecond, def, CompressionS2Better},
		{time.Second, def, CompressionS2Best},
		{5 * time.Millisecond, []time.Duration{0, 0, 20 * time.Millisecond}, CompressionS2Better},
		{time.Second, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, CompressionS2Fast},
	} {
		if got := autoLevel(tc.rtt, tc.thresholds); got != tc.want {
			t.Errorf("autoLevel(%v, %v) = %q, want %q", tc.rtt, tc.thresholds, got, tc.want)
		}
	}
}

// TestCompressorStream checks the wire format: S2 framing that a stock
// s2.Reader decodes across flushes and level changes.
func TestCompressorStream(t *testing.T) {
	var wire bytes.Buffer
	c := newCompressor(&wire, CompressionS2Fast)
	var want []byte
	for i, level := range []string{CompressionS2Fast, CompressionS2Best, CompressionS2Uncompressed, CompressionS2Better} {
		c.setLevel(level)
		chunk := bytes.Repeat([]byte{'a' + byte(i)}, 1000+i)
		want = append(want, chunk...)
		if err := c.write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.HasPrefix(wire.Bytes(), []byte("\xff\x06\x00\x00S2sTwO")) {
		t.Fatalf("stream starts with %q", wire.Bytes()[:10])
	}
	got, err := io.ReadAll(s2.NewReader(&wire))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decoded %d bytes, err %v", len(got), err)
	}
}
