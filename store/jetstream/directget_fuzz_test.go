package jetstream

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// FuzzDirectGetRequest feeds arbitrary DIRECT.GET bodies to a stream with
// a few subjects: whatever the body, the answer is one status, or
// messages in increasing stream order each chaining Nats-Last-Sequence
// to the one before, followed (for a batch or multi_last) by one status.
func FuzzDirectGetRequest(f *testing.F) {
	env := newTestEnv(f, Config{})
	ctx := testCtx(f)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "K", Subjects: []string{"k.>"}, AllowDirect: true, Storage: njs.MemoryStorage})
	require.NoError(f, err)
	for _, subj := range []string{"k.a", "k.b", "k.a", "k.c.d", "k.b"} {
		_, err := env.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte(subj), Header: nats.Header{"X": []string{"1"}}})
		require.NoError(f, err)
	}
	for _, seed := range directGetCases {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		type reply struct{ hdr, body []byte }
		var replies []reply
		env.eng.directGet("K", "", false, body, func(hdr, b []byte) {
			replies = append(replies, reply{append([]byte(nil), hdr...), append([]byte(nil), b...)})
		})
		if len(replies) == 0 {
			t.Fatalf("%q: no answer", body)
		}
		isStatus := func(r reply) bool { return bytes.HasPrefix(r.hdr, []byte("NATS/1.0 ")) }
		var prev uint64
		for i, r := range replies {
			if i == len(replies)-1 && (len(replies) > 1 || isStatus(r)) {
				if len(replies) > 1 && !isStatus(r) {
					t.Fatalf("%q: a multi-message answer ends with %q", body, r.hdr)
				}
				break
			}
			if isStatus(r) {
				t.Fatalf("%q: status %q before the end", body, r.hdr)
			}
			if len(r.hdr) == 0 {
				continue // no_hdr
			}
			seq := headerUint(r.hdr, "Nats-Sequence")
			if seq <= prev {
				t.Fatalf("%q: sequence %d after %d", body, seq, prev)
			}
			if ls, ok := headerValue(r.hdr, "Nats-Last-Sequence"); ok && ls != strconv.FormatUint(prev, 10) && len(replies) > 1 {
				t.Fatalf("%q: Nats-Last-Sequence %s after %d", body, ls, prev)
			}
			prev = seq
		}
	})
}

// headerValue finds the first value of key in a NATS header block.
func headerValue(hdr []byte, key string) (string, bool) {
	for _, line := range bytes.Split(hdr, []byte("\r\n")) {
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && string(k) == key {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

// headerUint is headerValue as a number (0 when missing or bad).
func headerUint(hdr []byte, key string) uint64 {
	v, _ := headerValue(hdr, key)
	n, _ := strconv.ParseUint(v, 10, 64)
	return n
}
