package mqtt

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/bridge"
)

// benchInbound publishes b.N messages of 128 bytes with qos through
// Mosquitto and the bridge, with up to 64 publishes in flight, and reports
// the messages per second that reached the subject (store: the stream).
func benchInbound(b *testing.B, v Version, qos byte, store bool) {
	m := startMosquitto(b)
	br := newTestBroker(b)
	var arrived atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	total := int64(b.N)
	sub, err := br.nc.Subscribe("bench.>", func(*nats.Msg) {
		if arrived.Add(1) == total {
			once.Do(func() { close(done) })
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := br.nc.Flush(); err != nil {
		b.Fatal(err)
	}
	if store {
		br.addStream(b, "BENCH", "bench.>")
	}
	cfg := testConfig(m, v, "bench")
	cfg.Inbound = []InboundRoute{{From: "b/#", To: "bench.", QoS: qos, Store: store}}
	st, _ := runBridge(b, cfg, br.bus)
	pub := newPahoClient(b, m, "benchpub", nil)
	payload := make([]byte, 128)
	sem := make(chan struct{}, 64)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := pub.Publish(ctx, &paho.Publish{QoS: qos, Topic: "b/x", Payload: payload}); err != nil {
				b.Error(err)
			}
		}()
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Logf("only %d of %d arrived (QoS 0 may be dropped by the broker)", arrived.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(arrived.Load())/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(0, "ns/op")
	if s := st.Snapshot(); s.Drops[bridge.DropRejected] != 0 {
		b.Fatalf("drops %v", s.Drops)
	}
}

func BenchmarkInbound(b *testing.B) {
	for _, v := range []Version{V5, V311} {
		for _, c := range []struct {
			qos   byte
			store bool
		}{{0, false}, {1, false}, {1, true}} {
			b.Run(fmt.Sprintf("v%s/qos%d/store=%v", v, c.qos, c.store), func(b *testing.B) { benchInbound(b, v, c.qos, c.store) })
		}
	}
}
