package jetstream

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

// BenchmarkStreamOpen restarts an engine on a file stream of
// JS_OPEN_MSGS messages of 128 B (default 200,000), all stored within the
// default 2-minute duplicate window, and reports the time Start takes to
// open it: the file store's Open and the rebuild of the duplicate window.
// "plain" messages carry no header (what `nats bench js pub async`
// writes); "msgid" ones each carry a Nats-Msg-Id, every one of which the
// window must hold again.
//
//	JS_OPEN_MSGS=1000000 go test -run XXX -bench StreamOpen -benchtime 3x ./store/jetstream/
func BenchmarkStreamOpen(b *testing.B) {
	n := 200_000
	if v := os.Getenv("JS_OPEN_MSGS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, withID := range []bool{false, true} {
		name := "plain"
		if withID {
			name = "msgid"
		}
		b.Run(name, func(b *testing.B) {
			env := newTestEnv(b, Config{SyncInterval: time.Minute})
			if _, err := env.js.CreateStream(benchCtx(b), njs.StreamConfig{Name: "B", Subjects: []string{"b"}, Storage: njs.FileStorage}); err != nil {
				b.Fatal(err)
			}
			st := env.eng.streams["B"].store
			payload := make([]byte, 128)
			var hdr []byte
			for i := range n {
				if withID {
					hdr = fmt.Appendf(hdr[:0], "NATS/1.0\r\nNats-Msg-Id: %d\r\n\r\n", i)
				}
				if _, _, err := st.Store("b", hdr, payload, 0); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				b.StopTimer()
				if err := env.eng.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				env.startEngine()
			}
			b.StopTimer()
			s := env.eng.streams["B"]
			if got := s.store.State().Msgs; got != uint64(n) {
				b.Fatalf("%d msgs after open, want %d", got, n)
			}
			want := 0
			if withID {
				want = n
			}
			if got := len(s.dedupe.ids); got != want {
				b.Fatalf("%d ids in the duplicate window, want %d", got, want)
			}
		})
	}
}
