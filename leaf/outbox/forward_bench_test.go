package outbox

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/leaf/clock"
)

// benchAckHub acknowledges every publish at once, as a hub on a fast
// link would.
type benchAckHub struct {
	ob  *Outbox
	seq atomic.Uint64
}

func (h *benchAckHub) WaitReady(context.Context) error { return nil }

func (h *benchAckHub) Publish(_, reply string, _, _ []byte) error {
	seq := h.seq.Add(1)
	h.ob.HandleReply(reply, fmt.Appendf(nil, `{"stream":"S","seq":%d}`, seq))
	return nil
}

// BenchmarkForward measures the forwarder draining a backlog of b.N
// messages (128-byte payloads) toward a hub that acknowledges each at
// once, nothing refused: publish, PubAck parsing and removal. "stamped"
// captures with the clock's header, as cmd/internal/app does.
func BenchmarkForward(b *testing.B) {
	for _, withClock := range []bool{false, true} {
		name := "plain"
		if withClock {
			name = "stamped"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStream(b)
			cfg := Config{Name: "up", Stream: "S"}
			if withClock {
				c, err := clock.Open(clock.Config{})
				if err != nil {
					b.Fatal(err)
				}
				cfg.Clock = c
			}
			hub := &benchAckHub{}
			ob := benchOutbox(b, s, cfg)
			ob.hub = hub
			hub.ob = ob
			data := make([]byte, 128)
			for range b.N {
				if err := ob.Capture("telemetry.t1", nil, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if err := ob.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			for s.State().Msgs > 0 {
				time.Sleep(100 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			if st := ob.Status(); st.Acked != uint64(b.N) {
				b.Fatalf("acked %d of %d", st.Acked, b.N)
			}
		})
	}
}
