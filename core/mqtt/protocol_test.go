package mqtt_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
)

// raw is a client speaking bytes to the listener.
type raw struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func (e *testEnv) raw(t testing.TB) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", e.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (r *raw) write(p packets.Packet) {
	r.t.Helper()
	_, err := p.WriteTo(r.nc)
	require.NoError(r.t, err)
}

func (r *raw) writeBytes(b ...byte) {
	r.t.Helper()
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

func (r *raw) read() *packets.ControlPacket {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(wait))
	cp, err := packets.ReadPacket(r.r)
	require.NoError(r.t, err, "read packet")
	return cp
}

func (r *raw) readBytes(n int) []byte {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(wait))
	b := make([]byte, n)
	_, err := io.ReadFull(r.r, b)
	require.NoError(r.t, err)
	return b
}

// expectClosed reads until EOF.
func (r *raw) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadAll(r.r)
	require.NoError(r.t, err, "closed by the server")
}

func connect5(id string, keepAlive uint16) *packets.Connect {
	return &packets.Connect{ProtocolName: "MQTT", ProtocolVersion: 5, ClientID: id, CleanStart: true, KeepAlive: keepAlive, Properties: &packets.Properties{}}
}

// 3.1.1 CONNECT for client id "c", keep alive 30, clean session.
var connect311 = []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 30, 0, 1, 'c'}

func (r *raw) connect5(id string) {
	r.t.Helper()
	r.write(connect5(id, 30))
	ack := r.read()
	require.Equal(r.t, ack.Type, packets.CONNACK)
	require.Equal(r.t, ack.Content.(*packets.Connack).ReasonCode, byte(0))
}

func (r *raw) expectDisconnect(code byte) {
	r.t.Helper()
	cp := r.read()
	require.Equal(r.t, cp.Type, packets.DISCONNECT, "packet type")
	require.Equal(r.t, cp.Content.(*packets.Disconnect).ReasonCode, code, "reason code")
	r.expectClosed()
}

// Bad input gets the spec's reaction: MQTT 5 a DISCONNECT with the reason
// code, then close; 3.1.1 a closed connection. Other clients carry on.
func TestProtocolViolations(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	bystander, _ := e.v5Client(t, "bystander", nil)
	bystander.sub(t, "ok/#", 0)

	t.Run("second CONNECT v5", func(t *testing.T) {
		r := e.raw(t)
		r.connect5("twice")
		r.write(connect5("twice", 30))
		r.expectDisconnect(0x82)
	})
	t.Run("second CONNECT 3.1.1", func(t *testing.T) {
		r := e.raw(t)
		r.writeBytes(connect311...)
		require.DeepEqual(t, r.readBytes(4), []byte{0x20, 2, 0, 0})
		r.writeBytes(connect311...)
		r.expectClosed()
	})
	t.Run("wildcard in a publish topic", func(t *testing.T) {
		r := e.raw(t)
		r.connect5("wild")
		r.write(&packets.Publish{Topic: "a/+/b", Properties: &packets.Properties{}})
		r.expectDisconnect(0x90)
	})
	t.Run("QoS 3", func(t *testing.T) {
		r := e.raw(t)
		r.connect5("qos3")
		r.writeBytes(0x36, 5, 0, 1, 'a', 0, 1)
		r.expectDisconnect(0x81)
	})
	t.Run("packet too large", func(t *testing.T) {
		r := e.raw(t)
		r.connect5("big")
		r.writeBytes(0x30, 0xff, 0xff, 0xff, 0x7f)
		r.expectDisconnect(0x95)
	})
	t.Run("unknown property", func(t *testing.T) {
		r := e.raw(t)
		r.connect5("prop")
		// PUBLISH "a" with property id 0x7f.
		r.writeBytes(0x30, 6, 0, 1, 'a', 2, 0x7f, 0)
		r.expectDisconnect(0x81)
	})
	t.Run("first packet not CONNECT", func(t *testing.T) {
		r := e.raw(t)
		r.writeBytes(0xc0, 0)
		r.expectClosed()
	})
	t.Run("unsupported protocol level", func(t *testing.T) {
		r := e.raw(t)
		r.writeBytes(0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 3, 0x02, 0, 30, 0, 1, 'c')
		// CONNACK 0x01, unacceptable protocol version (3.1.1 §3.2.2.3).
		require.DeepEqual(t, r.readBytes(4), []byte{0x20, 2, 0, 1})
		r.expectClosed()
	})
	t.Run("byte at a time", func(t *testing.T) {
		r := e.raw(t)
		var b []byte
		for _, p := range []packets.Packet{connect5("slow", 30), &packets.Publish{Topic: "ok/slow", Payload: []byte("drip"), Properties: &packets.Properties{}}} {
			cp := packetBytes(t, p)
			b = append(b, cp...)
		}
		for _, c := range b {
			r.writeBytes(c)
		}
		require.Equal(t, r.read().Type, packets.CONNACK)
		m := bystander.next(t)
		require.Equal(t, string(m.Payload), "drip")
	})
	require.Equal(t, e.mqtt.Stats().ProtocolErrors >= 7, true, "counted")
	// The bystander still works.
	pub := e.v3Client(t, "pub", nil)
	tok := pub.Publish("ok/after", 0, false, []byte("still"))
	tok.WaitTimeout(wait)
	require.Equal(t, string(bystander.next(t).Payload), "still")
}

func packetBytes(t *testing.T, p packets.Packet) []byte {
	t.Helper()
	var w bytesWriter
	_, err := p.WriteTo(&w)
	require.NoError(t, err)
	return w.b
}

type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// A client silent for 1.5 times its keep alive is disconnected (0x8D).
func TestKeepAliveEnforced(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	r := e.raw(t)
	r.write(connect5("sleepy", 1))
	require.Equal(t, r.read().Type, packets.CONNACK)
	start := time.Now()
	r.expectDisconnect(0x8D)
	require.Equal(t, time.Since(start) >= 1400*time.Millisecond, true, "not before 1.5 x keep alive")
}

// '#' and '+' at the start do not match $-topics [MQTT-4.7.2-1].
func TestDollarTopicsNotMatchedByWildcard(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	all, _ := e.v5Client(t, "all", nil)
	all.sub(t, "#", 0)
	sys, _ := e.v5Client(t, "sys", nil)
	sys.sub(t, "$SYS/#", 0)
	nc := e.natsConn(t)
	require.NoError(t, nc.Publish("$SYS.uptime", []byte("1")))
	require.NoError(t, nc.Publish("plain", []byte("2")))
	require.Equal(t, string(sys.next(t).Payload), "1")
	require.Equal(t, string(all.next(t).Payload), "2")
}

// A second connection with the same client id takes the session over: the
// first is sent DISCONNECT 0x8E (session taken over).
func TestSessionTakeover(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	first := e.raw(t)
	first.connect5("same")
	second := e.raw(t)
	second.connect5("same")
	first.expectDisconnect(0x8E)
	second.write(&packets.Pingreq{})
	require.Equal(t, second.read().Type, packets.PINGRESP)
}

// A denied publish is acknowledged with 0x87 and a reason string.
func TestDeniedPublishReasonString(t *testing.T) {
	e := newTestEnv(t, &auth.Config{Users: []auth.User{{Name: "u", Password: "p",
		Permissions: &auth.Permissions{Publish: &auth.SubjectPermission{Allow: []string{"ok.>"}}}}}}, nil)
	r := e.raw(t)
	cp := connect5("denied", 30)
	cp.UsernameFlag, cp.Username, cp.PasswordFlag, cp.Password = true, "u", true, []byte("p")
	r.write(cp)
	require.Equal(t, r.read().Type, packets.CONNACK)
	r.write(&packets.Publish{Topic: "no/x", QoS: 1, PacketID: 3, Properties: &packets.Properties{}})
	ack := r.read().Content.(*packets.Puback)
	require.Equal(t, ack.ReasonCode, byte(0x87))
	require.Equal(t, ack.Properties.ReasonString, "not authorized to publish to no/x")
}

// An authentication method (enhanced authentication) is refused with
// CONNACK 0x8C.
func TestAuthMethodRefused(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	r := e.raw(t)
	cp := connect5("scram", 30)
	cp.Properties.AuthMethod = "SCRAM-SHA-1"
	r.write(cp)
	ack := r.read()
	require.Equal(t, ack.Type, packets.CONNACK)
	require.Equal(t, ack.Content.(*packets.Connack).ReasonCode, byte(0x8C))
	r.expectClosed()
}
