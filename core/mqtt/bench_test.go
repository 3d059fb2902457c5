package mqtt_test

import (
	"io"
	"net"
	"slices"
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

// BenchmarkMQTTToMQTT measures QoS 0 publishes (16-byte payloads) from
// one MQTT 3.1.1 client to another through the listener, the path of
// scripts/bench's MQTT listener rows; allocs/op counts every goroutine
// in the process (the raw clients allocate nothing per message).
func BenchmarkMQTTToMQTT(b *testing.B) {
	env := newTestEnv(b, nil, nil)
	connect := func(id byte) *raw { return env.connect311(b, id) }
	sub := connect('s')
	sub.subscribeBench311()
	pub := connect('p')
	// PUBLISH QoS 0 to bench/x with 16 bytes.
	one := struct{ b []byte }{append([]byte{0x30, 25, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', 'x'}, make([]byte, 16)...)}
	const perBatch = 256
	batch := make([]byte, 0, perBatch*len(one.b))
	for range perBatch {
		batch = append(batch, one.b...)
	}
	got := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		// Count PUBLISH packets: each is len(one.b) bytes on the wire.
		buf := make([]byte, 64<<10)
		want, n := b.N*len(one.b), 0
		for n < want {
			_ = sub.nc.SetReadDeadline(time.Now().Add(wait))
			m, err := sub.r.Read(buf)
			if err != nil {
				got <- err
				return
			}
			n += m
		}
		got <- nil
	}()
	for sent := 0; sent < b.N; sent += perBatch {
		k := min(perBatch, b.N-sent)
		if _, err := pub.nc.Write(batch[:k*len(one.b)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-got; err != nil {
		b.Fatal(err)
	}
}

// expect reads len(want) bytes from r and fails unless they are want.
func expect(r *raw, want ...byte) {
	r.t.Helper()
	got := make([]byte, len(want))
	_ = r.nc.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.ReadFull(r.r, got); err != nil || !slices.Equal(got, want) {
		r.t.Fatalf("read % x, want % x: %v", got, want, err)
	}
}

// The MQTT 3.1.1 QoS 0 path from publisher to subscriber allocates
// nothing per message in the listener: the publish is decoded in place,
// the broker gathers the delivery on the publisher's stack (two
// allocations per message before) and the delivery is encoded straight
// into the subscriber's write buffer (14 allocations per message at
// first). What is left is the write buffers growing, less than one
// allocation per message.
func TestMQTTToMQTTAllocations(t *testing.T) {
	r := testing.Benchmark(BenchmarkMQTTToMQTT)
	t.Logf("%s, %d B/op, %d allocs/op", r, r.AllocedBytesPerOp(), r.AllocsPerOp())
	if a := r.AllocsPerOp(); a > 0 {
		t.Errorf("%d allocations per message, want none", a)
	}
}

// connect311 opens a raw MQTT 3.1.1 connection with client id "<id>"
// (one byte) and completes its CONNECT.
func (e *testEnv) connect311(t testing.TB, id byte) *raw {
	r := e.raw(t)
	c := slices.Clone(connect311)
	c[len(c)-1] = id
	r.writeBytes(c...)
	expect(r, 0x20, 2, 0, 0)
	return r
}

// subscribeBench311 subscribes the 3.1.1 connection to bench/# at QoS 0
// (packet id 1) and reads the SUBACK.
func (r *raw) subscribeBench311() {
	r.writeBytes(0x82, 12, 0, 1, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', '#', 0)
	expect(r, 0x90, 3, 0, 1, 0)
}
