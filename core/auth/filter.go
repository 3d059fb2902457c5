package auth

import (
	"strings"

	"github.com/leafbox/leafbox/core/subject"
)

// Filter is a compiled pair of subject pattern lists, allow and deny: the
// one permission engine of leafbox, behind a user's publish permission
// (Perms.CanPublish) and both directions of a leafnode link. A subject
// passes when the allow list is absent or one of its patterns matches it,
// and no deny pattern matches it: deny wins over allow. Wildcard tokens in
// the subject checked are compared as ordinary tokens, as nats-server's
// sublist does.
//
// Literal patterns are looked up in a map and wildcard ones scanned; the
// results of Allows are cached (bounded), so a subject seen before costs
// one lookup and no allocation. A Filter is immutable but for its cache
// and safe for concurrent use. Build one with NewFilter.
type Filter struct {
	// allowAll is true when the allow list is absent, so only deny
	// restricts.
	allowAll bool
	allow    patternSet
	deny     patternSet
	cache    resultCache[string]
}

// NewFilter compiles allow and deny, whose entries must be valid subjects
// (subject.Valid). A nil allow list allows every subject; an empty
// non-nil one allows none.
func NewFilter(allow, deny []string) *Filter {
	f := &Filter{allowAll: allow == nil}
	for _, p := range allow {
		f.allow.add(p)
	}
	for _, p := range deny {
		f.deny.add(p)
	}
	return f
}

// Restricted reports whether any subject is refused.
func (f *Filter) Restricted() bool { return !f.allowAll || !f.deny.empty() }

// Allows reports whether subj passes the filter. subj is not retained: the
// caller may pass a string that aliases its read buffer (unsafe.String).
func (f *Filter) Allows(subj string) bool {
	if !f.Restricted() {
		return true
	}
	if ok, hit := f.cache.get(subj); hit {
		return ok
	}
	ok := (f.allowAll || f.allow.match(subj)) && !f.deny.match(subj)
	f.cache.put(strings.Clone(subj), ok)
	return ok
}

// AllowsInterest reports whether interest in subj, which may hold
// wildcards, may be announced: the allow list is absent, or one of its
// patterns matches subj or, when subj holds wildcards, overlaps it (the
// subjects outside the allow list are then filtered per message with
// Allows); and no deny pattern matches subj token for token (so ">" passes
// a "$KV.>" deny). This is how nats-server's canSubscribe judges a
// leafnode's subscriptions.
func (f *Filter) AllowsInterest(subj string) bool {
	if !f.allowAll && !f.allow.match(subj) && (subject.IsLiteral(subj) || !f.allow.overlaps(subj)) {
		return false
	}
	return !f.deny.match(subj)
}

// DenyCovers reports whether a deny pattern matches every subject that
// subj, which may hold wildcards, matches.
func (f *Filter) DenyCovers(subj string) bool {
	if _, ok := f.deny.literals[subj]; ok {
		return true
	}
	for _, d := range f.deny.wildcards {
		if subject.Subset(subj, d) {
			return true
		}
	}
	return false
}

// patternSet is a list of subject patterns split into literal subjects
// (looked up in a map) and wildcard patterns (scanned).
type patternSet struct {
	literals  map[string]struct{}
	wildcards []string
}

func (s *patternSet) add(p string) {
	if subject.IsLiteral(p) {
		if s.literals == nil {
			s.literals = make(map[string]struct{})
		}
		s.literals[p] = struct{}{}
		return
	}
	s.wildcards = append(s.wildcards, p)
}

func (s *patternSet) empty() bool { return len(s.literals) == 0 && len(s.wildcards) == 0 }

// match reports whether subj matches a pattern of the set. Wildcard tokens
// in subj are compared as ordinary tokens, as nats-server's sublist does.
func (s *patternSet) match(subj string) bool {
	if _, ok := s.literals[subj]; ok {
		return true
	}
	for _, p := range s.wildcards {
		if subject.Match(p, subj) {
			return true
		}
	}
	return false
}

// overlaps reports whether some subject matches both subj and a pattern of
// the set.
func (s *patternSet) overlaps(subj string) bool {
	for p := range s.literals {
		if subject.Overlap(p, subj) {
			return true
		}
	}
	for _, p := range s.wildcards {
		if subject.Overlap(p, subj) {
			return true
		}
	}
	return false
}
