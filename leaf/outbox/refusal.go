package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/store/jsapi"
)

// DefaultDeadLetterAfter is how many permanent refusals of one message
// move it to the dead-letter stream when Config.DeadLetterAfter is 0.
const DefaultDeadLetterAfter = 3

// Refusal reasons: why the hub will never take a message as it is. They
// name a dead-lettered message's Leafbox-Dead-Reason.
const (
	// ReasonNoStream: no hub stream captures the subject (the hub's
	// JetStream API said so, see Config.HubDomain).
	ReasonNoStream = "no_stream"
	// ReasonWrongStream: the subject is captured by another stream than
	// the expected one (err_code 10060).
	ReasonWrongStream = "wrong_stream"
	// ReasonTooLarge: the message exceeds the hub's max_payload, or the
	// stream's maximum message or header size (10054, 10097).
	ReasonTooLarge = "too_large"
	// ReasonPermission: the leaf connection may not publish the subject.
	ReasonPermission = "permission"
	// ReasonHubError: another JetStream error about the message itself
	// (a publisher's expectation header, a per-message TTL, a counter or
	// schedule header the stream refuses, a sealed stream).
	ReasonHubError = "hub_error"
	// ReasonDuplicateID: the hub reported a message sent for the first
	// time as a duplicate: its Nats-Msg-Id collided with another
	// message's. It is dead-lettered at once; a requeue gives it a new id.
	ReasonDuplicateID = "duplicate_id"
)

// ErrNoResponders means nothing on the hub receives the subject: the hub
// has no interest in it. A Hub returns it (wrapped) from Publish. It is
// ambiguous: no stream captures the subject, or the hub is still
// restoring its streams; with Config.HubDomain the forwarder asks the
// hub's JetStream which.
var ErrNoResponders = errors.New("outbox: no responders on the hub")

// RefusedError is a permanent refusal: the hub will not take the message
// however often it is sent. A Hub returns one from Publish (see Refused)
// for what it knows before sending, such as a message larger than the
// hub's max_payload.
type RefusedError struct {
	Reason string // one of the Reason constants
	Err    error  // the hub's error
}

// Error returns the reason and the hub's error.
func (e *RefusedError) Error() string {
	return "outbox: refused by the hub (" + e.Reason + "): " + e.Err.Error()
}

// Unwrap returns the hub's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused wraps err as a permanent refusal for reason.
func Refused(reason string, err error) error { return &RefusedError{Reason: reason, Err: err} }

// hubError is a JetStream API error of the hub, as the outbox reports it.
type hubError struct{ *jsapi.APIError }

func (e hubError) Error() string {
	return fmt.Sprintf("hub error %d (%d): %s", e.Code, e.ErrCode, e.Description)
}

// Unwrap returns the API error.
func (e hubError) Unwrap() error { return e.APIError }

// permanentCodes maps the JetStream err_codes (nats-server errors.json)
// that no retry can change, because they are about the message itself or
// its stream's fixed settings, to a refusal reason. Every other code is
// transient: 10008 cluster temporarily unavailable (a leader election),
// 10023 and 10047 insufficient resources, 10039 and 10076 JetStream not
// enabled (the hub restarting), 10077 store failed (a full stream under
// discard new), 10118 and 10194 stream offline, 10158 a duplicate in
// process, 10163 temporarily unavailable, 10211 too many in flight, and
// codes this table does not know.
var permanentCodes = map[uint16]string{
	10060: ReasonWrongStream, // expected stream does not match
	10054: ReasonTooLarge,    // message size exceeds maximum allowed
	10097: ReasonTooLarge,    // header size exceeds maximum allowed of 64k
	10070: ReasonHubError,    // wrong last msg ID
	10071: ReasonHubError,    // wrong last sequence: {seq}
	10164: ReasonHubError,    // wrong last sequence
	10193: ReasonHubError,    // missing sequence for expected last sequence per subject
	10109: ReasonHubError,    // invalid operation on sealed stream
	10165: ReasonHubError,    // invalid per-message TTL
	10166: ReasonHubError,    // per-message TTL is disabled
	10168: ReasonHubError,    // message counters is disabled
	10169: ReasonHubError,    // message counter increment is missing
	10170: ReasonHubError,    // message counter has payload
	10171: ReasonHubError,    // message counter increment is invalid
	10177: ReasonHubError,    // atomic publish unsupported header used
	10188: ReasonHubError,    // message schedules is disabled
	10189: ReasonHubError,    // message schedules pattern is invalid
	10190: ReasonHubError,    // message schedules target is invalid
	10191: ReasonHubError,    // message schedules invalid per-message TTL
	10192: ReasonHubError,    // message schedules invalid rollup
	10203: ReasonHubError,    // message schedules source is invalid
	10205: ReasonHubError,    // batch publish is disabled
	10206: ReasonHubError,    // batch publish pattern is invalid
	10207: ReasonHubError,    // batch publish ID is invalid
	10212: ReasonHubError,    // message schedules invalid scheduler
	10223: ReasonHubError,    // message schedules time zone is invalid
	10227: ReasonHubError,    // message stream source header is not allowed
}

// classifyAPIError returns err as a *RefusedError when the PubAck error is
// permanent, else err unchanged (transient).
func classifyAPIError(e *jsapi.APIError, err error) error {
	if reason, ok := permanentCodes[e.ErrCode]; ok {
		return Refused(reason, err)
	}
	return err
}

// streamNamesRequest is the body of $JS.API.STREAM.NAMES with a subject
// filter, as the official clients send it to find a stream by subject.
type streamNamesRequest struct {
	Subject string `json:"subject"`
}

// lookupTimeout bounds the wait for the hub's answer to a stream lookup.
const lookupTimeout = 2 * time.Second

// parseStreamNames reads the answer to a stream lookup for subject: a
// *RefusedError (ReasonNoStream) when it says no stream captures it, nil
// when one does, and another error when it is no definite answer.
func parseStreamNames(subject string, data []byte) error {
	var r jsapi.StreamNamesResponse
	apiErr, err := jsapi.DecodeReply(data, &r)
	if err != nil {
		return fmt.Errorf("outbox: stream lookup: invalid answer %q", truncate(data))
	}
	switch {
	case apiErr != nil:
		return fmt.Errorf("outbox: stream lookup: %w", hubError{apiErr})
	case r.Type != jsapi.StreamNamesResponseType:
		return fmt.Errorf("outbox: stream lookup: not a stream names response: %q", truncate(data))
	case r.Total == 0 && len(r.Streams) == 0:
		return Refused(ReasonNoStream, fmt.Errorf("no hub stream captures subject %q", subject))
	}
	return nil
}

// lookupStream asks the hub's JetStream whether a stream captures subject
// (the hub subject), through $JS.<Config.HubDomain>.API.STREAM.NAMES over
// the same path as the messages. It returns a *RefusedError when the hub
// definitely has none, nil when it has one, and another error when it
// gave no answer (transient). The forwarder alone calls it.
func (o *Outbox) lookupStream(ctx context.Context, subject string) error {
	if o.cfg.HubDomain == "" {
		return errors.New("outbox: no hub_domain to ask the hub's JetStream")
	}
	o.lookups++
	id := o.lookups
	body, _ := json.Marshal(streamNamesRequest{Subject: subject})
	api := "$JS." + o.cfg.HubDomain + ".API.STREAM.NAMES"
	for { // drop a stale answer
		select {
		case <-o.lookupCh:
			continue
		default:
		}
		break
	}
	if err := o.hub.Publish(api, o.inbox+lookupToken+strconv.FormatUint(id, 10), nil, body); err != nil {
		return fmt.Errorf("outbox: stream lookup: %w", err)
	}
	t := time.NewTimer(lookupTimeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("outbox: stream lookup: no answer from %s within %v", api, lookupTimeout)
		case a := <-o.lookupCh:
			if a.id == id {
				return parseStreamNames(subject, a.data)
			}
		}
	}
}

// lookupToken starts the reply token of a stream lookup (InboxPrefix() +
// "q." + id); PubAck replies are <round>.<seq>.
const lookupToken = "q."

// lookupAnswer is a reply to a stream lookup.
type lookupAnswer struct {
	id   uint64
	data []byte
}
