package leaf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// ErrNoInterest is returned by Publish when the hub has no interest in
// the subject, so the message would be dropped there.
var ErrNoInterest = errors.New("leaf: no hub interest in the subject")

// ErrMaxPayload is returned by Publish for a message larger than the
// hub's max_payload: the hub would close the link on receiving it.
var ErrMaxPayload = errors.New("leaf: message exceeds the hub's max_payload")

// ErrNotPermitted is returned by Publish for a subject the link may not
// send: the link's permissions (deny_exports, the hub's import rules, the
// JetStream deny set) forbid it, or the hub refused it with a
// "Permissions Violation for Publish" -ERR in the last
// violationMemory.
var ErrNotPermitted = errors.New("leaf: publishing to the hub is not permitted")

// violationMemory is how long Publish refuses a subject after the hub
// answered it with a publish permissions violation (which also closes
// the link): sending it again would only close the link again.
const violationMemory = 5 * time.Minute

// maxViolations bounds the subjects remembered from such -ERRs.
const maxViolations = 256

// pubViolationText starts the -ERR nats-server sends for a message a leaf
// connection may not publish (leafnode.go leafPermViolation).
const pubViolationText = "Permissions Violation for Publish to "

// Publish sends one message to the hub over this link only, not through
// the local broker: local subscribers and other links do not see it. It
// is how a store-and-forward uplink or a downlink talks to the hub of its
// own remote. It fails with ErrNotConnected when the link has no
// registered connection, ErrNoInterest when the hub has no plain interest
// in subject, ErrMaxPayload when header and payload exceed the hub's
// max_payload, and ErrNotPermitted when the link may not send subject.
// The slices are borrowed for the call.
func (l *Link) Publish(subject, reply string, hdr, data []byte) error {
	l.mu.Lock()
	s := l.sess
	var deniedAt time.Time
	if len(l.pubViolations) > 0 {
		deniedAt = l.pubViolations[subject]
	}
	l.mu.Unlock()
	if s == nil {
		return ErrNotConnected
	}
	if !s.perms.Load().canPublish(subject) {
		return fmt.Errorf("%w: %q", ErrNotPermitted, subject)
	}
	if !deniedAt.IsZero() {
		if ago := time.Since(deniedAt); ago < violationMemory {
			return fmt.Errorf("%w: %q: the hub answered %s%q %v ago", ErrNotPermitted, subject, pubViolationText, subject, ago.Round(time.Second))
		}
	}
	if mp, size := s.hubInfo.MaxPayload, len(hdr)+len(data); mp > 0 && int64(size) > mp {
		return fmt.Errorf("%w: %q has %d bytes, the hub's max_payload is %d", ErrMaxPayload, subject, size, mp)
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

// notePubViolation remembers the subject of a "Permissions Violation for
// Publish" -ERR text, for Publish.
func (l *Link) notePubViolation(text string) {
	rest, ok := strings.CutPrefix(text, pubViolationText)
	if !ok {
		return
	}
	subj, err := strconv.Unquote(strings.TrimSpace(rest))
	if err != nil {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pubViolations == nil {
		l.pubViolations = map[string]time.Time{}
	}
	if len(l.pubViolations) >= maxViolations {
		for k, at := range l.pubViolations {
			if now.Sub(at) >= violationMemory || len(l.pubViolations) >= maxViolations {
				delete(l.pubViolations, k)
			}
		}
	}
	l.pubViolations[subj] = now
}
