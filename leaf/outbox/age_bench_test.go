package outbox

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/memstore"
)

// BenchmarkCapture measures Capture into a memory stream with and without
// the capture stamp (the machine's real clock sources).
func BenchmarkCapture(b *testing.B) {
	for _, withClock := range []bool{false, true} {
		name := "plain"
		if withClock {
			name = "stamped"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStream(b)
			cfg := Config{Name: "up"}
			if withClock {
				c, err := clock.Open(clock.Config{})
				if err != nil {
					b.Fatal(err)
				}
				cfg.Clock = c
			}
			ob := benchOutbox(b, s, cfg)
			data := make([]byte, 128)
			b.ReportAllocs()
			for b.Loop() {
				if err := ob.Capture("telemetry.t1", nil, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExpireAged measures one expiry pass over a 100k backlog of which
// nothing is old enough: it stops at the first message.
func BenchmarkExpireAged(b *testing.B) {
	m := &machine{boot: "boot-1", wall: epoch, mono: time.Second}
	c := m.clock(b, b.TempDir())
	ob := benchOutbox(b, benchStream(b), Config{Name: "up", Clock: c, MaxAge: time.Hour})
	for range 100_000 {
		if err := ob.Capture("telemetry.t1", nil, []byte("x")); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if n, err := ob.expireAged(); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
}

func benchStream(b *testing.B) store.Stream {
	s, err := memstore.New(store.Config{Name: "up"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func benchOutbox(b *testing.B, s store.Stream, cfg Config) *Outbox {
	ob, err := New(s, newFakeHub(false), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ob.Close() })
	return ob
}
