package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/require"
)

// encodePublish encodes an MQTT 5 PUBLISH with paho's own encoder.
func encodePublish(t testing.TB, pb *packets.Publish) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := pb.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// loopConn is a net.Conn whose reads return data over and over and whose
// writes are kept.
type loopConn struct {
	net.Conn
	data    []byte
	off     int
	written bytes.Buffer
}

func (c *loopConn) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k := copy(b[n:], c.data[c.off:])
		n += k
		c.off = (c.off + k) % len(c.data)
	}
	return n, nil
}

func (c *loopConn) Write(b []byte) (int, error) { return c.written.Write(b) }

// inlineRig is a run of a bridge with core routes over a real broker, and
// an in-process subscriber counting what arrives on site.>.
type inlineRig struct {
	r   *run
	got atomic.Int64
}

func newInlineRig(t testing.TB) *inlineRig {
	t.Helper()
	br := newTestBroker(t)
	b, err := New(Config{Name: "fast", Server: "mqtt://127.0.0.1:1", ClientID: "fast", Inbound: []InboundRoute{
		{From: "stored/#", To: "kept.", QoS: 1, Store: true},
		{From: "sensors/#", To: "site.", QoS: 1},
	}})
	require.NoError(t, err)
	rig := &inlineRig{}
	rig.r = &run{Bridge: b, ctx: context.Background(), env: bridge.Env{Bus: br.bus, Status: &bridge.Status{}, Logger: slog.Default()}}
	unsubscribe, err := br.bus.Subscribe("site.>", "", func(bridge.Msg) { rig.got.Add(1) })
	require.NoError(t, err)
	t.Cleanup(unsubscribe)
	return rig
}

func TestInlineHandling(t *testing.T) {
	rig := newInlineRig(t)
	var got []bridge.Msg
	unsubscribe, err := rig.r.env.Bus.Subscribe("site.>", "", func(m bridge.Msg) {
		got = append(got, bridge.Msg{Subject: bytes.Clone(m.Subject), Header: bytes.Clone(m.Header), Data: bytes.Clone(m.Data)})
	})
	require.NoError(t, err)
	defer unsubscribe()
	expiry := uint32(30)
	stream := encodePublish(t, &packets.Publish{QoS: 1, PacketID: 7, Topic: "sensors/a b", Payload: []byte("21.5"),
		Properties: &packets.Properties{ContentType: "text/plain", MessageExpiry: &expiry, User: []packets.User{{Key: "unit", Value: "C"}}}})
	stream = append(stream, encodePublish(t, &packets.Publish{QoS: 0, Topic: "sensors/b", Payload: []byte("x"), Properties: &packets.Properties{}})...)
	stored := encodePublish(t, &packets.Publish{QoS: 1, PacketID: 8, Topic: "stored/c", Payload: []byte("y"), Properties: &packets.Properties{}})
	request := encodePublish(t, &packets.Publish{QoS: 0, Topic: "sensors/c", Payload: []byte("q"), Properties: &packets.Properties{ResponseTopic: "r/1"}})
	stream = append(append(stream, stored...), request...)
	lc := &loopConn{data: stream}
	c := newInboundConn(lc, rig.r.inline)

	// The two core messages are published and consumed; the stored one
	// and the request are handed to paho whole.
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.DeepEqual(t, stored, buf[:n])
	require.Equal(t, 2, len(got))
	require.Equal(t, "site.sensors.a/20b", string(got[0].Subject))
	require.Equal(t, "NATS/1.0\r\nunit: C\r\nMqtt-Content-Type: text/plain\r\nMqtt-Message-Expiry: 30\r\n\r\n", string(got[0].Header))
	require.Equal(t, "21.5", string(got[0].Data))
	require.Equal(t, "site.sensors.b", string(got[1].Subject))
	require.Equal(t, 0, len(got[1].Header))
	// The QoS 1 message's PUBACK is written before paho reads on.
	require.DeepEqual(t, []byte{0x40, 2, 0, 7}, lc.written.Bytes())
	n, err = c.Read(buf)
	require.NoError(t, err)
	require.DeepEqual(t, request, buf[:n])
	require.Equal(t, uint64(2), rig.r.env.Status.Snapshot().In)
}

// TestInlineAllocs: a core route's message, decoded, published to an
// in-process subscriber and acknowledged, allocates nothing.
func TestInlineAllocs(t *testing.T) {
	for _, pb := range []*packets.Publish{
		{QoS: 0, Topic: "sensors/hall/temp", Payload: make([]byte, 128), Properties: &packets.Properties{}},
		{QoS: 1, PacketID: 9, Topic: "sensors/hall/temp", Payload: make([]byte, 128), Properties: &packets.Properties{User: []packets.User{{Key: "unit", Value: "C"}}}},
	} {
		rig := newInlineRig(t)
		lc := &loopConn{data: encodePublish(t, pb)}
		c := newInboundConn(lc, rig.r.inline)
		step := func() {
			if _, handled, err := c.next(); err != nil || !handled {
				t.Fatalf("handled %v, err %v", handled, err)
			}
			lc.written.Reset()
			if err := c.flushAcks(); err != nil {
				t.Fatal(err)
			}
		}
		step()
		require.Equal(t, int64(1), rig.got.Load())
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("QoS %d: %v allocations a message, want 0", pb.QoS, a)
		}
		require.Equal(t, int64(1+1001), rig.got.Load()) // AllocsPerRun runs once more
	}
}

// BenchmarkInline is the bridge's per-message cost of a core route at
// QoS 1: decoding, publishing to an in-process subscriber, the PUBACK.
func BenchmarkInline(b *testing.B) {
	rig := newInlineRig(b)
	lc := &loopConn{data: encodePublish(b, &packets.Publish{QoS: 1, PacketID: 9, Topic: "sensors/hall/temp", Payload: make([]byte, 128), Properties: &packets.Properties{}})}
	c := newInboundConn(lc, rig.r.inline)
	b.ReportAllocs()
	for b.Loop() {
		if _, handled, err := c.next(); err != nil || !handled {
			b.Fatalf("handled %v, err %v", handled, err)
		}
		if len(c.acks) >= maxAckBatch {
			lc.written.Reset()
			_ = c.flushAcks()
		}
	}
}

// BenchmarkPahoRead is, for comparison, paho's own decoding of the same
// packet, before its router and our handler.
func BenchmarkPahoRead(b *testing.B) {
	lc := &loopConn{data: encodePublish(b, &packets.Publish{QoS: 1, PacketID: 9, Topic: "sensors/hall/temp", Payload: make([]byte, 128), Properties: &packets.Properties{}})}
	r := newInboundConn(lc, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := packets.ReadPacket(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInlineTopics is BenchmarkInline over 100 topics in turn, as
// from a site's sensors, at QoS 0.
func BenchmarkInlineTopics(b *testing.B) {
	rig := newInlineRig(b)
	var stream []byte
	for i := range 100 {
		stream = append(stream, encodePublish(b, &packets.Publish{QoS: 0, Topic: fmt.Sprintf("sensors/hall%d/temp", i), Payload: make([]byte, 128), Properties: &packets.Properties{}})...)
	}
	lc := &loopConn{data: stream}
	c := newInboundConn(lc, rig.r.inline)
	b.ReportAllocs()
	for b.Loop() {
		if _, handled, err := c.next(); err != nil || !handled {
			b.Fatalf("handled %v, err %v", handled, err)
		}
	}
}

// TestInlineRouteCache: each topic's subject is worked out once and kept
// apart from the read buffer; a stored route's QoS 1 messages stay off
// the inline path even on a topic whose QoS 0 message took it; the cache
// stays bounded.
func TestInlineRouteCache(t *testing.T) {
	rig := newInlineRig(t)
	var got []string
	unsubscribe, err := rig.r.env.Bus.Subscribe(">", "", func(m bridge.Msg) { got = append(got, string(m.Subject)) })
	require.NoError(t, err)
	defer unsubscribe()
	pkt := func(qos byte, topic string) []byte {
		return encodePublish(t, &packets.Publish{QoS: qos, PacketID: 1, Topic: topic, Payload: []byte("v"), Properties: &packets.Properties{}})
	}
	handle := func(b []byte) bool {
		c := newInboundConn(&loopConn{data: b}, rig.r.inline)
		_, handled, err := c.next()
		require.NoError(t, err)
		return handled
	}
	// The buffer the topic was read from changes after the call: the
	// cached topic is a copy.
	buf := pkt(0, "sensors/a")
	require.Equal(t, true, handle(buf))
	copy(buf, pkt(0, "sensors/b"))
	require.Equal(t, true, handle(buf))
	require.Equal(t, true, handle(pkt(1, "sensors/a")))
	require.DeepEqual(t, []string{"site.sensors.a", "site.sensors.b", "site.sensors.a"}, got)
	require.Equal(t, 2, len(rig.r.routes))

	// A stored route: QoS 0 inline, QoS 1 to paho (the stream), in
	// either order.
	got = nil
	require.Equal(t, true, handle(pkt(0, "stored/x")))
	require.Equal(t, false, handle(pkt(1, "stored/x")))
	require.Equal(t, true, handle(pkt(0, "stored/x")))
	require.DeepEqual(t, []string{"kept.stored.x", "kept.stored.x"}, got)

	// Topics without a route are not cached and not handled.
	require.Equal(t, false, handle(pkt(0, "other/x")))
	for i := range maxInlineRoutes + 10 {
		require.Equal(t, true, handle(pkt(0, fmt.Sprintf("sensors/n%d", i))))
	}
	if n := len(rig.r.routes); n > maxInlineRoutes || n == 0 {
		t.Fatalf("%d cached topics, want at most %d", n, maxInlineRoutes)
	}
	require.Equal(t, "site.sensors.n1033", got[len(got)-1])
}
