package mqtt_test

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/nats-io/nats.go"
)

// BenchmarkPublishToNATS measures MQTT publishes (128-byte payloads,
// written in batches by a raw client; QoS 1 acknowledged) reaching a NATS
// subscriber.
func BenchmarkPublishToNATS(b *testing.B) {
	for _, qos := range []byte{0, 1} {
		b.Run("qos"+string(rune('0'+qos)), func(b *testing.B) { benchPublishTo(b, qos) })
	}
}

func benchPublishTo(b *testing.B, qos byte) {
	env := newTestEnv(b, nil, nil)
	nc, err := nats.Connect(env.srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	var got atomic.Int64
	done := make(chan struct{})
	target := int64(b.N)
	_, err = nc.Subscribe("bench.x", func(*nats.Msg) {
		if got.Add(1) == target {
			close(done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	_ = nc.Flush()
	r := env.raw(b)
	r.connect5("bench")
	payload := make([]byte, 128)
	var batch []byte
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	acks := make(chan struct{})
	if qos > 0 {
		go func() { // drain PUBACKs
			for i := 0; i < b.N; i++ {
				if _, err := packets.ReadPacket(r.r); err != nil {
					break
				}
			}
			close(acks)
		}()
	}
	for i := 0; i < b.N; i++ {
		p := &packets.Publish{Topic: "bench/x", QoS: qos, Payload: payload, Properties: &packets.Properties{}}
		if qos > 0 {
			p.PacketID = uint16(i%65535 + 1)
		}
		var w bytesWriter
		_, _ = p.WriteTo(&w)
		batch = append(batch, w.b...)
		if len(batch) > 32<<10 || i == b.N-1 {
			if _, err := r.nc.Write(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("got %d of %d", got.Load(), b.N)
	}
	if qos > 0 {
		<-acks
	}
}

// BenchmarkConnect measures a 3.1.1 client's TCP connect, CONNECT and
// CONNACK, and its close (client and listener in one process: allocs/op
// counts both ends).
func BenchmarkConnect(b *testing.B) {
	env := newTestEnv(b, nil, nil)
	b.ReportAllocs()
	var ack [4]byte
	// CONNECT, clean session, keep alive 30, client id "c" and 8 digits:
	// a new one each time.
	pkt := []byte{0x10, 20, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 30, 0, 8}
	pkt = append(pkt, "c0000000"...)
	n := 0
	for b.Loop() {
		n++
		for i, v := len(pkt)-1, n; i > len(pkt)-8; i, v = i-1, v/10 {
			pkt[i] = byte('0' + v%10)
		}
		c, err := net.Dial("tcp", env.addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(pkt); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != 0x20 {
			b.Fatalf("CONNACK % x: %v", ack, err)
		}
		_ = c.Close()
	}
}
