package auth

import (
	"fmt"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/subject"
)

// Defaults applied to a ResponsePermission whose fields are zero; they are
// nats-server's DEFAULT_ALLOW_RESPONSE_MAX_MSGS and
// DEFAULT_ALLOW_RESPONSE_EXPIRATION.
const (
	DefaultResponseMaxMsgs = 1
	DefaultResponseExpires = 2 * time.Minute
)

// Perms are a user's compiled permissions. A nil *Perms allows everything,
// and every method may be called on a nil receiver.
//
// A Perms is shared by all connections of one user: it is immutable apart
// from its internal result caches and is safe for concurrent use.
type Perms struct {
	// pub are the publish permissions. Its allow list is absent when only
	// deny restricts; it is an empty list when a response permission is
	// configured without one: then only replies may be published.
	pub      Filter
	sub      subPerms
	response *ResponsePermission

	deliverCache resultCache[deliverKey]
}

// subPerms are the compiled subscribe permissions.
type subPerms struct {
	// hasAllow is true when the allow list has entries, plain or queue.
	hasAllow bool
	allow    []string
	allowQ   []queueEntry
	deny     []string
	denyQ    []queueEntry
}

// queueEntry is a "subject queue" permission entry. The queue may itself
// be a pattern with wildcard tokens ("v1.*").
type queueEntry struct {
	subject string
	queue   string
}

// deliverKey is the key of the delivery-time deny cache.
type deliverKey struct {
	subject string
	queue   string
}

// CanPublish reports whether the user may publish to subject. A subject is
// allowed when the allow list is absent or one of its patterns matches, and
// no deny pattern matches. With a response permission and no allow list
// nothing is allowed here: the caller must then consult its own record of
// reply subjects (see Response).
//
// Results are cached per Perms (bounded), so repeated subjects cost one
// lookup and no allocation. subject is not retained: the caller may pass a
// string that aliases its read buffer (unsafe.String).
func (p *Perms) CanPublish(subject string) bool {
	return p == nil || p.pub.Allows(subject)
}

// CanSubscribe reports whether the user may subscribe to subject, which may
// hold wildcard tokens, in queue group queue ("" for none).
//
// Allow: the subscription must be covered by an allow pattern (every subject
// it can receive also matches the pattern). When queue is set and allow
// entries of the "subject queue" form cover the subscription, queue must
// match one of their queues, whatever plain entries allow.
//
// Deny: the subscription is refused when a deny pattern matches its subject
// taken token by token (so deny "foo.>" refuses "foo.*", and deny "foo.*"
// refuses "foo.>"), or when queue matches the queue of such a "subject
// queue" deny entry. A wildcard subscription that only partly overlaps a
// deny pattern is allowed; the denied subjects must then be filtered when
// messages are delivered (see NeedsDeliveryCheck and CanDeliver).
func (p *Perms) CanSubscribe(subject, queue string) bool {
	if p == nil {
		return true
	}
	sp := &p.sub
	if sp.hasAllow && !sp.allowed(subject, queue) {
		return false
	}
	return !sp.denied(subject, queue)
}

func (sp *subPerms) allowed(subj, queue string) bool {
	ok := false
	for _, a := range sp.allow {
		if subject.Subset(subj, a) {
			ok = true
			break
		}
	}
	if queue == "" {
		return ok
	}
	covered := false
	for _, e := range sp.allowQ {
		if !subject.Subset(subj, e.subject) {
			continue
		}
		if queueMatches(queue, e.queue) {
			return true
		}
		covered = true
	}
	if covered {
		return false
	}
	return ok
}

// denied reports whether a deny entry matches subj, which is compared token
// by token (wildcard tokens in subj are not expanded). It serves both the
// subscription check and the delivery check.
func (sp *subPerms) denied(subj, queue string) bool {
	for _, d := range sp.deny {
		if subject.Match(d, subj) {
			return true
		}
	}
	if queue == "" {
		return false
	}
	for _, e := range sp.denyQ {
		if subject.Match(e.subject, subj) && queueMatches(queue, e.queue) {
			return true
		}
	}
	return false
}

// queueMatches reports whether queue is the permission entry's queue, or
// matches it when the entry's queue holds wildcard tokens.
func queueMatches(queue, pattern string) bool {
	if queue == pattern {
		return true
	}
	return !subject.IsLiteral(pattern) && subject.Subset(queue, pattern)
}

// NeedsDeliveryCheck reports whether messages delivered to an allowed
// subscription on subject in queue group queue must be passed through
// CanDeliver: true when the subscription holds wildcards and overlaps a
// deny entry that applies to it. For other allowed subscriptions
// CanDeliver always returns true, so the server may skip it.
func (p *Perms) NeedsDeliveryCheck(subj, queue string) bool {
	if p == nil || subject.IsLiteral(subj) {
		return false
	}
	for _, d := range p.sub.deny {
		if subject.Overlap(d, subj) {
			return true
		}
	}
	if queue == "" {
		return false
	}
	for _, e := range p.sub.denyQ {
		if queueMatches(queue, e.queue) && subject.Overlap(e.subject, subj) {
			return true
		}
	}
	return false
}

// CanDeliver reports whether a message published on the literal subject may
// be delivered to this user's subscription in queue group queue ("" for
// none). It applies the subscribe deny list to the message subject, which
// is how nats-server enforces deny entries that a wildcard subscription
// only partly overlaps (client.go checkDenySub). Results are cached per
// Perms (bounded); neither string is retained, as for CanPublish.
func (p *Perms) CanDeliver(subject, queue string) bool {
	if p == nil || (len(p.sub.deny) == 0 && len(p.sub.denyQ) == 0) {
		return true
	}
	key := deliverKey{subject, queue}
	if ok, hit := p.deliverCache.get(key); hit {
		return ok
	}
	ok := !p.sub.denied(subject, queue)
	p.deliverCache.put(deliverKey{strings.Clone(subject), strings.Clone(queue)}, ok)
	return ok
}

// Response returns the user's response permission with defaults applied, or
// nil if it has none. The caller must not modify it.
//
// When it is set, the server records the reply subject of each message it
// delivers to the user and lets the user publish to a recorded reply
// subject that CanPublish refuses, at most MaxMsgs times and within
// Expires of the delivery.
func (p *Perms) Response() *ResponsePermission {
	if p == nil {
		return nil
	}
	return p.response
}

// compilePerms validates and compiles cp. It returns nil when cp restricts
// nothing.
func compilePerms(cp *Permissions) (*Perms, error) {
	if cp == nil {
		return nil, nil
	}
	p := &Perms{}
	var pubAllow, pubDeny []string
	if cp.Publish != nil {
		pubAllow, pubDeny = cp.Publish.Allow, cp.Publish.Deny
	}
	if err := compilePatterns(&p.pub.allow, "publish allow", pubAllow); err != nil {
		return nil, err
	}
	if err := compilePatterns(&p.pub.deny, "publish deny", pubDeny); err != nil {
		return nil, err
	}
	if cp.Subscribe != nil {
		var err error
		if p.sub.allow, p.sub.allowQ, err = compileSubEntries("subscribe allow", cp.Subscribe.Allow); err != nil {
			return nil, err
		}
		if p.sub.deny, p.sub.denyQ, err = compileSubEntries("subscribe deny", cp.Subscribe.Deny); err != nil {
			return nil, err
		}
		p.sub.hasAllow = len(cp.Subscribe.Allow) > 0
	}
	if r := cp.Response; r != nil {
		if r.MaxMsgs < 0 {
			return nil, fmt.Errorf("response: negative MaxMsgs %d", r.MaxMsgs)
		}
		if r.Expires < 0 {
			return nil, fmt.Errorf("response: negative Expires %v", r.Expires)
		}
		rp := *r
		if rp.MaxMsgs == 0 {
			rp.MaxMsgs = DefaultResponseMaxMsgs
		}
		if rp.Expires == 0 {
			rp.Expires = DefaultResponseExpires
		}
		p.response = &rp
	}
	// As in nats-server (auth.go validateResponsePermissions), a response
	// permission without a publish allow list turns off the implicit
	// "allow everything": the user may publish replies only.
	p.pub.allowAll = p.pub.allow.empty() && p.response == nil
	if !p.pub.Restricted() && !p.sub.hasAllow && len(p.sub.deny) == 0 && len(p.sub.denyQ) == 0 && p.response == nil {
		return nil, nil
	}
	return p, nil
}

// compilePatterns adds the publish patterns in list to set.
func compilePatterns(set *patternSet, what string, list []string) error {
	for _, s := range list {
		if !subject.Valid(s) {
			if len(strings.Fields(s)) == 2 {
				return fmt.Errorf("%s: queue group not allowed in publish permission %q", what, s)
			}
			return fmt.Errorf("%s: invalid subject %q", what, s)
		}
		set.add(s)
	}
	return nil
}

// compileSubEntries splits subscribe permission entries into plain
// subjects and "subject queue" entries.
func compileSubEntries(what string, list []string) (plain []string, queued []queueEntry, err error) {
	for _, s := range list {
		if subject.Valid(s) {
			plain = append(plain, s)
			continue
		}
		f := strings.Fields(s)
		if len(f) != 2 {
			return nil, nil, fmt.Errorf("%s: invalid subject %q", what, s)
		}
		if !subject.Valid(f[0]) {
			return nil, nil, fmt.Errorf("%s: invalid subject %q in %q", what, f[0], s)
		}
		if !subject.Valid(f[1]) {
			return nil, nil, fmt.Errorf("%s: invalid queue %q in %q", what, f[1], s)
		}
		queued = append(queued, queueEntry{subject: f[0], queue: f[1]})
	}
	return plain, queued, nil
}
