package jetstream

import (
	"context"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

// Benchmarks through nats.go over TCP against one in-process server, as a
// client sees the engine. File streams fsync every benchSync, the bounded
// loss window a gateway would run with; see BenchmarkPublishSyncAlways for
// fsync before every ack.

const benchSync = 100 * time.Millisecond

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

func benchStream(b *testing.B, st njs.StorageType) *testEnv {
	b.Helper()
	env := newTestEnv(b, Config{SyncInterval: benchSync})
	_, err := env.js.CreateStream(benchCtx(b), njs.StreamConfig{Name: "B", Subjects: []string{"b"}, Storage: st})
	if err != nil {
		b.Fatal(err)
	}
	return env
}

func BenchmarkPublishSync(b *testing.B) {
	for _, st := range []njs.StorageType{njs.MemoryStorage, njs.FileStorage} {
		b.Run(st.String(), func(b *testing.B) {
			env := benchStream(b, st)
			ctx := benchCtx(b)
			payload := make([]byte, 128)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := env.js.Publish(ctx, "b", payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPublishAsync(b *testing.B) {
	for _, st := range []njs.StorageType{njs.MemoryStorage, njs.FileStorage} {
		b.Run(st.String(), func(b *testing.B) {
			env := benchStream(b, st)
			payload := make([]byte, 128)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := env.js.PublishAsync("b", payload); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-env.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("async publishes not acked")
			}
		})
	}
}

func BenchmarkPullConsume(b *testing.B) {
	for _, st := range []njs.StorageType{njs.MemoryStorage, njs.FileStorage} {
		b.Run(st.String(), func(b *testing.B) {
			env := benchStream(b, st)
			payload := make([]byte, 128)
			for i := 0; i < b.N; i++ {
				if _, err := env.js.PublishAsync("b", payload); err != nil {
					b.Fatal(err)
				}
			}
			<-env.js.PublishAsyncComplete()
			ctx := benchCtx(b)
			s, _ := env.js.Stream(ctx, "B")
			c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "C", AckPolicy: njs.AckExplicitPolicy})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			n := 0
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			cc, err := c.Consume(func(m njs.Msg) {
				_ = m.Ack()
				if n++; n == b.N {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Stop()
			select {
			case <-done:
			case <-time.After(time.Minute):
				b.Fatalf("consumed %d of %d", n, b.N)
			}
		})
	}
}

func BenchmarkPublishSyncAlways(b *testing.B) {
	env := newTestEnv(b, Config{})
	ctx := benchCtx(b)
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b"}}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.js.Publish(ctx, "b", payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPublishAsyncAlways(b *testing.B) {
	env := newTestEnv(b, Config{})
	ctx := benchCtx(b)
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b"}}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.js.PublishAsync("b", payload); err != nil {
			b.Fatal(err)
		}
	}
	<-env.js.PublishAsyncComplete()
}
