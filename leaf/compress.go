package leaf

import (
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/s2"
)

// needsCompression reports whether mode asks for compression at all (as a
// configured mode, accept counts: it compresses if the hub asks).
func needsCompression(mode string) bool {
	return mode != "" && mode != CompressionOff && mode != compressionNotSupported
}

// compresses reports whether a negotiated mode compresses the link.
func compresses(mode string) bool {
	return needsCompression(mode) && mode != CompressionAccept
}

// selectCompression returns the mode the link uses given our configured
// mode local and the mode the hub announced in its INFO, following
// nats-server's selectCompressionMode: no field (an old hub) means not
// supported; a hub that is off turns it off; a hub that only accepts
// follows us, unless we only accept too; a hub that compresses gets our
// level, or its own when we only accept (with s2_auto read as s2_fast).
// The result may be s2_auto, which the caller resolves with autoLevel.
func selectCompression(local, hub string) (string, error) {
	switch hub {
	case "", compressionNotSupported:
		return compressionNotSupported, nil
	case CompressionOff:
		return CompressionOff, nil
	case CompressionAccept:
		if local == CompressionAccept {
			return CompressionOff, nil
		}
		return local, nil
	case CompressionS2Auto, CompressionS2Uncompressed, CompressionS2Fast, CompressionS2Better, CompressionS2Best:
		if local == CompressionAccept {
			if hub == CompressionS2Auto {
				return CompressionS2Fast, nil
			}
			return hub, nil
		}
		return local, nil
	}
	return "", fmt.Errorf("leaf: hub announced unknown compression mode %q", hub)
}

// autoLevel picks the s2 level for an RTT, as nats-server's s2_auto does:
// up to thresholds[0] uncompressed, up to [1] fast, up to [2] better, else
// best. A zero threshold disables its level.
func autoLevel(rtt time.Duration, thresholds []time.Duration) string {
	idx := -1
	for i, d := range thresholds {
		if rtt <= d {
			idx = i
			break
		}
	}
	if idx < 0 {
		idx = min(len(thresholds), 3)
		if idx < 3 {
			idx = len(thresholds) - 1
		}
	}
	switch idx {
	case 0:
		return CompressionS2Uncompressed
	case 1:
		return CompressionS2Fast
	case 2:
		return CompressionS2Better
	}
	return CompressionS2Best
}

// s2Options returns the writer options for a compression level. Writer
// concurrency is 1: the writer goroutine compresses in place, and each
// flush produces complete, self-contained chunks.
func s2Options(level string) []s2.WriterOption {
	opts := []s2.WriterOption{s2.WriterConcurrency(1)}
	switch level {
	case CompressionS2Uncompressed:
		opts = append(opts, s2.WriterUncompressed())
	case CompressionS2Better:
		opts = append(opts, s2.WriterBetterCompression())
	case CompressionS2Best:
		opts = append(opts, s2.WriterBestCompression())
	}
	return opts
}

// compressor writes S2 framing to w at one level. The level can change
// between flushes; a new stream (with its stream identifier) starts then,
// which the reader accepts.
type compressor struct {
	w     io.Writer
	level string
	sw    *s2.Writer
}

func newCompressor(w io.Writer, level string) *compressor {
	return &compressor{w: w, level: level, sw: s2.NewWriter(w, s2Options(level)...)}
}

// setLevel switches to level for the next write.
func (c *compressor) setLevel(level string) {
	if level == c.level {
		return
	}
	c.level = level
	c.sw = s2.NewWriter(c.w, s2Options(level)...)
}

// write compresses b and flushes it to the underlying writer.
func (c *compressor) write(b []byte) error {
	if _, err := c.sw.Write(b); err != nil {
		return err
	}
	return c.sw.Flush()
}
