package jsapi

import "encoding/json"

// Reply is a decoded JetStream reply: a response type of this package (or
// a caller's struct that embeds APIResponse to read only the fields it
// needs) or a PubAckResponse. Every client of a JetStream API, local or
// the hub's, decodes replies through DecodeReply.
type Reply interface {
	// ReplyError returns the error the reply carries, or nil.
	ReplyError() *APIError
}

// ReplyError returns the response's error, or nil.
func (r *APIResponse) ReplyError() *APIError { return r.Error }

// ReplyError returns the publish's refusal, or nil.
func (r *PubAckResponse) ReplyError() *APIError { return r.Error }

// DecodeReply decodes the JetStream reply data into v and returns the API
// error the reply carries, if any. err reports data that is no JSON reply
// of v's shape (an empty status-only reply among them); apiErr is then
// nil. v is filled as far as data goes either way.
func DecodeReply(data []byte, v Reply) (apiErr *APIError, err error) {
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return v.ReplyError(), nil
}

// DecodePubAck decodes the reply to a JetStream publish with DecodeReply:
// the ack (zero where the reply has no such field: a successful reply
// always names its stream), the refusal when the stream did not store the
// message, and an error when data is no PubAck.
func DecodePubAck(data []byte) (ack PubAck, apiErr *APIError, err error) {
	r := PubAckResponse{PubAck: &ack}
	apiErr, err = DecodeReply(data, &r)
	return ack, apiErr, err
}
