package mqtt

import (
	"bytes"
	"net"
	"testing"

	"github.com/eclipse/paho.golang/packets"
	paho3 "github.com/eclipse/paho.mqtt.golang/packets"
)

// TestV311ConnRewritesConnect: paho.golang's MQTT 5 CONNECT, with a will,
// credentials and properties, written in pieces through a v311Conn, is
// read by paho.mqtt.golang as the same MQTT 3.1.1 CONNECT; the broker's
// 3.1.1 CONNACK refusing the password reads as MQTT 5's.
func TestV311ConnRewritesConnect(t *testing.T) {
	client, broker := net.Pipe()
	defer client.Close()
	defer broker.Close()
	c := newV311Conn(client)
	exp := uint32(3600)
	cp := packets.NewControlPacket(packets.CONNECT)
	cc := cp.Content.(*packets.Connect)
	cc.ProtocolName, cc.ProtocolVersion = "MQTT", 5
	cc.ClientID, cc.KeepAlive, cc.CleanStart = "gw-1", 30, true
	cc.UsernameFlag, cc.Username, cc.PasswordFlag, cc.Password = true, "user", true, []byte("secret")
	cc.WillFlag, cc.WillQOS, cc.WillTopic, cc.WillMessage = true, 1, "gw/status", []byte("offline")
	cc.WillProperties = &packets.Properties{WillDelayInterval: &exp}
	cc.Properties = &packets.Properties{SessionExpiryInterval: &exp}
	var wire bytes.Buffer
	if _, err := cp.WriteTo(&wire); err != nil {
		t.Fatal(err)
	}
	go func() {
		b := wire.Bytes()
		for len(b) > 0 { // one byte at a time: a packet may come in pieces
			if _, err := c.Write(b[:1]); err != nil {
				t.Error(err)
				return
			}
			b = b[1:]
		}
	}()
	got, err := paho3.ReadPacket(broker)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := got.(*paho3.ConnectPacket)
	if !ok {
		t.Fatalf("read %T, want a CONNECT", got)
	}
	if p.ProtocolName != "MQTT" || p.ProtocolVersion != 4 || p.ClientIdentifier != "gw-1" || p.Keepalive != 30 || !p.CleanSession ||
		p.Username != "user" || string(p.Password) != "secret" || !p.WillFlag || p.WillQos != 1 || p.WillTopic != "gw/status" ||
		string(p.WillMessage) != "offline" {
		t.Fatalf("CONNECT %+v", p)
	}
	if code := p.Validate(); code != paho3.Accepted {
		t.Fatalf("CONNECT invalid: %d", code)
	}

	go func() { _, _ = broker.Write([]byte{0x20, 0x02, 0x01, 0x04}) }()
	ack, err := packets.ReadPacket(c)
	if err != nil {
		t.Fatal(err)
	}
	ca, ok := ack.Content.(*packets.Connack)
	if !ok || !ca.SessionPresent || ca.ReasonCode != 0x86 || code311(ca.ReasonCode) != 4 {
		t.Fatalf("CONNACK %+v", ack.Content)
	}
}

// FuzzV311Rewrite: any packet body rewrites in either direction without a
// panic, into one whole packet; a broker's PUBLISH, its acknowledgements
// and PINGRESP come back byte for byte from MQTT 5.
func FuzzV311Rewrite(f *testing.F) {
	f.Add(byte(0x32), []byte("\x00\x03a/b\x00\x07hello"))
	f.Add(byte(0x30), []byte("\x00\x01tpayload"))
	f.Add(byte(0x40), []byte("\x00\x07"))
	f.Add(byte(0x20), []byte("\x00\x05"))
	f.Add(byte(0x90), []byte("\x00\x01\x01\x80"))
	f.Add(byte(0x82), []byte("\x00\x01\x00\x00\x03a/#\x25"))
	f.Add(byte(0x10), []byte("\x00\x04MQTT\x05\xc6\x00\x1e\x00\x00\x02id\x00\x00\x01t\x00\x01m\x00\x01u\x00\x01p"))
	f.Add(byte(0xe0), []byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, first byte, body []byte) {
		whole := func(what string, out []byte) {
			h, _, n, ok, err := cutPacket(out)
			if err != nil || !ok || n != len(out) || h != first {
				t.Fatalf("%s of %#x %q: %q is not one packet (%v)", what, first, body, out, err)
			}
		}
		five, err := to5(nil, first, body)
		if err == nil {
			whole("to5", five)
			switch first >> 4 {
			case 3, 4, 5, 6, 7, 12, 13:
				_, b5, _, _, _ := cutPacket(five)
				back, err := to311(nil, first, b5)
				if want := append(appendFixed(nil, first, len(body)), body...); err != nil || !bytes.Equal(back, want) {
					t.Fatalf("%#x %q: to5 %q, back %q (%v)", first, body, five, back, err)
				}
			}
		}
		if out, err := to311(nil, first, body); err == nil {
			whole("to311", out)
		}
	})
}
