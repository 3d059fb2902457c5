package mqtt

import (
	"bytes"
	"testing"

	"github.com/eclipse/paho.golang/packets"
)

// FuzzDecodePublish: whatever PUBLISH body decodePublish accepts, paho's
// own decoder reads the same topic, packet id, payload and properties;
// no input panics.
func FuzzDecodePublish(f *testing.F) {
	expiry := uint32(5)
	for _, pb := range []*packets.Publish{
		{QoS: 0, Topic: "a/b", Payload: []byte("x"), Properties: &packets.Properties{}},
		{QoS: 1, PacketID: 3, Topic: "s/t", Payload: []byte("21.5"), Properties: &packets.Properties{ContentType: "text/plain",
			MessageExpiry: &expiry, ResponseTopic: "r", CorrelationData: []byte{1, 2}, User: []packets.User{{Key: "k", Value: "v"}}}},
	} {
		var b bytes.Buffer
		if _, err := pb.WriteTo(&b); err != nil {
			f.Fatal(err)
		}
		raw := b.Bytes()
		f.Add(raw[0], raw[2:]) // one-byte remaining length
	}
	f.Add(byte(0x32), []byte{0, 1, 'a', 0, 1, 3, 0x23, 0, 1})
	f.Fuzz(func(t *testing.T, first byte, body []byte) {
		first = 0x30 | first&0x0b // a PUBLISH of QoS 0 or 1
		var p packet
		var e uint32
		if !decodePublish(&p, &e, first, body) {
			return
		}
		ref := &packets.Publish{QoS: (first >> 1) & 3, Properties: &packets.Properties{}}
		if err := ref.Unpack(bytes.NewBuffer(bytes.Clone(body))); err != nil {
			t.Fatalf("accepted what paho refuses (%v): % x", err, body)
		}
		if p.topic != ref.Topic || p.packetID != ref.PacketID || !bytes.Equal(p.payload, ref.Payload) {
			t.Fatalf("topic %q id %d payload %q, paho %q %d %q", p.topic, p.packetID, p.payload, ref.Topic, ref.PacketID, ref.Payload)
		}
		pr := ref.Properties
		if p.contentType != pr.ContentType || p.responseTopic != pr.ResponseTopic || !bytes.Equal(p.correlation, pr.CorrelationData) {
			t.Fatalf("properties %+v, paho %+v", p, pr)
		}
		if (p.expiry == nil) != (pr.MessageExpiry == nil) || (p.expiry != nil && *p.expiry != *pr.MessageExpiry) {
			t.Fatalf("expiry %v, paho %v", p.expiry, pr.MessageExpiry)
		}
		if len(p.user) != len(pr.User) {
			t.Fatalf("user %q, paho %q", p.user, pr.User)
		}
		for i, u := range pr.User {
			if p.user[i] != (property{u.Key, u.Value}) {
				t.Fatalf("user %q, paho %q", p.user, pr.User)
			}
		}
	})
}
