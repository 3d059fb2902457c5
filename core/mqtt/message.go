package mqtt

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/proto"
)

// The NATS header fields that carry MQTT attributes. Nmqtt-Pub is
// nats-server's (the QoS an MQTT client published with); the Mqtt-*
// fields are those of leafbox's MQTT bridge (bridge/mqtt), plus the
// request/response ones.
const (
	headerPub            = "Nmqtt-Pub"
	headerContentType    = "Mqtt-Content-Type"
	headerMessageExpiry  = "Mqtt-Message-Expiry"
	headerRetain         = "Mqtt-Retain"
	headerPayloadFormat  = "Mqtt-Payload-Format"
	headerResponseTopic  = "Mqtt-Response-Topic"
	headerCorrelation    = "Mqtt-Correlation-Data"
	headerAccount        = "Nmqtt-Account" // on retained messages of accounts other than the global one
	headerEmptyBlockSize = len(proto.HeaderVersion) + 4
)

// appendPublishHeader appends the header block a client's PUBLISH becomes:
// Nmqtt-Pub with its QoS, then its MQTT 5 properties. User properties a
// NATS header cannot hold are left out.
func appendPublishHeader(dst []byte, p *packets.Publish, responseTopic string) []byte {
	dst = append(dst, proto.HeaderVersion...)
	dst = append(dst, "\r\n"...)
	dst = proto.AppendHeaderField(dst, headerPub, strconv.Itoa(int(p.QoS)))
	props := p.Properties
	for _, u := range props.User {
		if proto.ValidHeaderName(u.Key) && proto.ValidHeaderValue(u.Value) {
			dst = proto.AppendHeaderField(dst, u.Key, u.Value)
		}
	}
	if props.ContentType != "" && proto.ValidHeaderValue(props.ContentType) {
		dst = proto.AppendHeaderField(dst, headerContentType, props.ContentType)
	}
	if props.MessageExpiry != nil {
		dst = proto.AppendHeaderField(dst, headerMessageExpiry, strconv.FormatUint(uint64(*props.MessageExpiry), 10))
	}
	if props.PayloadFormat != nil && *props.PayloadFormat == 1 {
		dst = proto.AppendHeaderField(dst, headerPayloadFormat, "1")
	}
	if responseTopic != "" && proto.ValidHeaderValue(responseTopic) {
		dst = proto.AppendHeaderField(dst, headerResponseTopic, responseTopic)
	}
	if len(props.CorrelationData) > 0 {
		dst = proto.AppendHeaderField(dst, headerCorrelation, base64.StdEncoding.EncodeToString(props.CorrelationData))
	}
	if p.Retain {
		dst = proto.AppendHeaderField(dst, headerRetain, "true")
	}
	return append(dst, "\r\n"...)
}

// pubQoS returns the QoS a message was published with: Nmqtt-Pub's, or
// 0 for a message from a NATS client without one.
func pubQoS(hdr []byte) byte {
	if len(hdr) == 0 {
		return 0
	}
	v := proto.HeaderValue(hdr, headerPub)
	if len(v) > 0 && v[0] >= '0' && v[0] <= '2' {
		return v[0] - '0'
	}
	return 0
}

// outProps fills the MQTT 5 properties of a message delivered to a
// client from its header: the Mqtt-* fields become properties, Nmqtt-*
// fields are dropped, every other field is a user property. reply, the
// NATS reply subject's topic, is the response topic unless the header
// names one. The message expiry is reduced by the time the message
// waited; expired reports a message past it.
func outProps(props *packets.Properties, hdr []byte, replyTopic string, received, now time.Time) (expired bool) {
	if replyTopic != "" {
		props.ResponseTopic = replyTopic
	}
	proto.ForEachHeaderField(hdr, func(name, value []byte) {
		switch {
		case proto.HeaderNameHasPrefix(name, "Nmqtt-"):
		case proto.HeaderNameIs(name, headerContentType):
			props.ContentType = string(value)
		case proto.HeaderNameIs(name, headerMessageExpiry):
			if n, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				left := int64(n) - int64(now.Sub(received)/time.Second)
				if left <= 0 && !received.IsZero() {
					expired = true
				}
				e := uint32(max(left, 1))
				props.MessageExpiry = &e
			}
		case proto.HeaderNameIs(name, headerPayloadFormat):
			one := byte(1)
			props.PayloadFormat = &one
		case proto.HeaderNameIs(name, headerResponseTopic):
			props.ResponseTopic = string(value)
		case proto.HeaderNameIs(name, headerCorrelation):
			if d, err := base64.StdEncoding.DecodeString(string(value)); err == nil {
				props.CorrelationData = d
			}
		case proto.HeaderNameIs(name, headerRetain):
		default:
			props.User = append(props.User, packets.User{Key: string(name), Value: string(value)})
		}
	})
	return expired
}

// headerHasRetain reports the Mqtt-Retain field.
func headerHasRetain(hdr []byte) bool {
	return len(hdr) > 0 && bytes.Equal(proto.HeaderValue(hdr, headerRetain), []byte("true"))
}
