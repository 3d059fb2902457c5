package mqtt

import (
	"context"
	"errors"
	"fmt"
)

// subscription is one topic filter the client subscribes to on every
// connection.
type subscription struct {
	filter string
	qos    byte
}

// events is what a client reports to the bridge. The functions run on
// the client's and paho's goroutines.
type events struct {
	// up: a connection is established and subscribed (first is true
	// once).
	up func(first bool)
	// down: the connection was lost (err says why; the client
	// reconnects).
	down func(err error)
	// connectError: one connection attempt failed.
	connectError func(err error)
	// refused: the broker refused the connection with a CONNACK error
	// that retrying cannot fix; the client stops.
	refused func(err error)
	// message: an inbound PUBLISH; ack acknowledges it to the broker (a
	// no-op at QoS 0). p lives as long as the call.
	message func(p *packet, ack func())
	// inline: an inbound PUBLISH of QoS 0 or 1 on the read goroutine,
	// before message; see inlineFunc. nil: every message goes to message.
	inline inlineFunc
}

// client is a connection to the broker (pahoClient),
// reconnecting by itself until close.
type client interface {
	// publish sends p and, at QoS 1/2, waits for the broker's
	// acknowledgement. It returns errNotConnected at once while the
	// connection is down.
	publish(ctx context.Context, p *packet) error
	// close disconnects and stops reconnecting.
	close(ctx context.Context)
}

// errNotConnected is returned by publish while the connection is down.
var errNotConnected = errors.New("mqtt: not connected to the broker")

// RefusedError is the broker's refusal of the bridge's CONNECT.
type RefusedError struct {
	// Version is the protocol version the bridge asked for.
	Version Version
	// Code is the CONNACK return code (3.1.1) or reason code (5).
	Code byte
	// Reason is the broker's text, or the code's meaning.
	Reason string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("mqtt: broker refused the connection (MQTT %s, code %#x): %s", e.Version, e.Code, e.Reason)
	if e.VersionRefused() {
		other := V311
		if e.Version == V311 {
			other = V5
		}
		msg += fmt.Sprintf("; the broker does not speak MQTT %s, set version: %s", e.Version, other)
	}
	return msg
}

// VersionRefused reports whether the broker refused the protocol version.
func (e *RefusedError) VersionRefused() bool {
	return e.Code == 0x01 || e.Code == 0x84
}

// connackReasons are the meanings of the CONNACK codes of both versions.
var connackReasons = map[byte]string{
	0x01: "unacceptable protocol version",
	0x02: "identifier rejected",
	0x03: "server unavailable",
	0x04: "bad user name or password",
	0x05: "not authorized",
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8C: "bad authentication method",
	0x97: "quota exceeded",
	0x9D: "server moved",
}

// refusedFor builds the RefusedError of CONNACK code with the broker's
// reason text, if any.
func refusedFor(v Version, code byte, reason string) *RefusedError {
	if reason == "" {
		reason = connackReasons[code]
	}
	if reason == "" {
		reason = "refused"
	}
	return &RefusedError{Version: v, Code: code, Reason: reason}
}

// PublishRefusedError is the broker's refusal of one PUBLISH (an MQTT 5
// reason code of 0x80 or above): the message cannot go out as it is.
type PublishRefusedError struct {
	// Topic is the message's topic.
	Topic string
	// Code is the PUBACK or PUBREC reason code.
	Code byte
}

func (e *PublishRefusedError) Error() string {
	return fmt.Sprintf("mqtt: broker refused the publish to %q (reason %#x)", e.Topic, e.Code)
}
