package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// ErrNoStream is returned by Store when no local stream captures the
// subject (the publish found no responders).
var ErrNoStream = errors.New("bridge: no stream stores this subject")

// StoreError is a local stream's refusal of a message Store published.
type StoreError struct {
	// Subject is the message's subject.
	Subject string
	// Err is the stream's API error.
	Err *jsapi.APIError
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("bridge: stream refused %q: %v", e.Subject, e.Err)
}

// Store publishes a message into the local JetStream stream that captures
// subject and returns once the stream acknowledged it as stored, with the
// stream's name and sequence. Only then may a bridge acknowledge the
// device side. hdr may carry Nats-Msg-Id, so that a message the device
// sends again after a lost acknowledgement is stored once.
func Store(ctx context.Context, bus Bus, subject string, hdr, data []byte) (stream string, seq uint64, err error) {
	reply, err := bus.Request(ctx, subject, hdr, data)
	if err != nil {
		return "", 0, err
	}
	if code, _ := proto.ParseStatus(reply.Header); code == 503 {
		return "", 0, fmt.Errorf("%w: %q", ErrNoStream, subject)
	}
	ack, apiErr, err := jsapi.DecodePubAck(reply.Data)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("bridge: storing %q: reply is no PubAck: %w", subject, err)
	case apiErr != nil:
		return "", 0, &StoreError{Subject: subject, Err: apiErr}
	}
	return ack.Stream, ack.Sequence, nil
}
