package leaf

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrNoInterest is returned by Publish when the hub has no interest in
// the subject, so the message would be dropped there.
var ErrNoInterest = errors.New("leaf: no hub interest in the subject")

// Publish sends one message to the hub over this link only, not through
// the local broker: local subscribers and other links do not see it. It
// is how a store-and-forward uplink or a downlink talks to the hub of its
// own remote. It fails with ErrNotConnected when the link has no
// registered connection, ErrNoInterest when the hub has no plain interest
// in subject, and an error when the link's permissions (deny_exports, the
// hub's import rules, the JetStream deny set) forbid it. The slices are
// borrowed for the call.
func (l *Link) Publish(subject, reply string, hdr, data []byte) error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s == nil {
		return ErrNotConnected
	}
	if !s.perms.Load().canPublish(subject) {
		return fmt.Errorf("leaf: publishing %q to the hub is not permitted", subject)
	}
	subj := unsafe.Slice(unsafe.StringData(subject), len(subject))
	if r := s.hub.match(subj, nil); !r.plain {
		return fmt.Errorf("%w %q", ErrNoInterest, subject)
	}
	if !s.send(subj, unsafe.Slice(unsafe.StringData(reply), len(reply)), nil, hdr, data) {
		return ErrNotConnected
	}
	return nil
}
