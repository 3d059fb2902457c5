package outbox

import (
	"crypto/rand"
)

// epochChars is the length of an epoch: 50 random bits.
const epochChars = 10

// epochAlphabet is lowercase base32 (RFC 4648).
const epochAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// inboxTokenChars is the length of the random token of an Outbox's
// reply inbox: 65 bits, so that no two gateways on one hub share an
// inbox (each would take the other's PubAcks for its own).
const inboxTokenChars = 13

// newEpoch returns a random epoch for the ids of an Outbox's captures.
func newEpoch() string { return randomToken(epochChars) }

// randomToken returns n random characters of epochAlphabet.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = epochAlphabet[b[i]&31]
	}
	return string(b)
}

// IDPrefix returns the prefix of the Nats-Msg-Id Capture gives each
// message, "<server>.<uplink>.<epoch>.", followed by a number counting
// this Outbox's captures from 1. The epoch is new for each Outbox, so two
// openings of one outbox never share an id.
func (o *Outbox) IDPrefix() string { return o.idBase }

// InboxPrefix is the prefix of every reply subject the forwarder uses,
// ending in '.'. The caller subscribes InboxPrefix()+">" where the hub's
// replies arrive and passes them to HandleReply.
func (o *Outbox) InboxPrefix() string { return o.inbox }

// HubSubject returns the subject a captured message is sent to the hub
// on.
func (o *Outbox) HubSubject(subject string) string { return o.cfg.HubPrefix + subject }
