package leaf

import (
	"strings"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
)

// jsDeny lists the subjects nats-server denies in both directions on every
// leafnode link of a non-system account (jetstream_api.go denyAllClientJs,
// applied in leafnode.go addLeafNodeConnection). A hub closes the link when
// it receives a literal LS+ or any LMSG on one of them.
var jsDeny = []string{"$JS.API.>", "$KV.>", "$OBJ.>"}

// perms are the link's effective permissions, as nats-server computes them
// for a solicited leaf: the hub's import (what we may subscribe to, and so
// receive) and export (what we may send) from its connect_info INFO,
// merged with our deny_imports and deny_exports and the JetStream deny
// set. Both directions are core/auth filters (deny wins over allow). A
// perms value is immutable; a new INFO replaces it.
type perms struct {
	sub, pub *auth.Filter
}

// newPerms builds the permissions from the configuration and the hub's
// import and export (either may be nil).
func newPerms(cfg *Config, imp, exp *proto.SubjectPermission) *perms {
	var subAllow, subDeny, pubAllow, pubDeny []string
	subDeny = append(subDeny, jsDeny...)
	pubDeny = append(pubDeny, jsDeny...)
	if cfg.Domain != "" && cfg.JetStream {
		// Requests for our own domain never leave (nats-server's
		// blockMappingOutgoing).
		pubDeny = append(pubDeny, "$JS."+cfg.Domain+".API.>")
	}
	subDeny = append(subDeny, cfg.DenyImports...)
	pubDeny = append(pubDeny, cfg.DenyExports...)
	if imp != nil {
		subAllow = imp.Allow
		subDeny = append(subDeny, plainEntries(imp.Deny)...)
	}
	if exp != nil {
		pubAllow = exp.Allow
		pubDeny = append(pubDeny, plainEntries(exp.Deny)...)
	}
	return &perms{
		sub: auth.NewFilter(plainEntries(subAllow), subDeny),
		pub: auth.NewFilter(plainEntries(pubAllow), pubDeny),
	}
}

// plainEntries drops queue-qualified permission entries ("subject queue"),
// which restrict queue subscriptions only; the link does not apply them.
func plainEntries(list []string) []string {
	if list == nil {
		return nil // no list: everything allowed (or nothing denied)
	}
	// An allow list whose entries are all queue-qualified stays a non-nil
	// empty list: it allows nothing rather than everything.
	out := make([]string, 0, len(list))
	for _, s := range list {
		if !strings.ContainsAny(s, " \t") && subject.Valid(s) {
			out = append(out, s)
		}
	}
	return out
}

// exempt reports subjects that skip permission checks on a leafnode link:
// loop detection and gateway-routed replies.
func exempt(subj string) bool {
	return strings.HasPrefix(subj, ldsPrefix) || strings.HasPrefix(subj, "$GR.") || strings.HasPrefix(subj, "_GR_.")
}

// canSubscribe reports whether the link may announce interest in subj (an
// LS+), following nats-server's canSubscribe for a leaf: a wildcard subject
// is allowed when it overlaps an allow entry, and denied when a deny entry
// matches it token for token (so ">" passes a "$KV.>" deny and is filtered
// per message instead).
func (p *perms) canSubscribe(subj string) bool {
	return exempt(subj) || p.sub.AllowsInterest(subj)
}

// canReceive reports whether a message on the literal subject subj may be
// delivered locally. JetStream acks and service-import replies are always
// allowed, as in nats-server's leafMsgAllowed.
func (p *perms) canReceive(subj string) bool {
	if strings.HasPrefix(subj, "$JS.ACK.") || strings.HasPrefix(subj, "_R_.") || exempt(subj) {
		return true
	}
	return p.sub.Allows(subj)
}

// canPublish reports whether a message on the literal subject subj may be
// sent to the hub.
func (p *perms) canPublish(subj string) bool {
	return exempt(subj) || p.pub.Allows(subj)
}

// canPublishPattern reports whether the hub's interest in subj (which may
// hold wildcards) can ever be served. A literal the link may not publish
// to is ignored, as nats-server's spoke ignores such an LS+, and so is a
// wildcard that a deny entry covers entirely (the hub announces its own
// $JS.API.>, which no local message may ever reach); other wildcards are
// kept and filtered per message.
func (p *perms) canPublishPattern(subj string) bool {
	if subject.IsLiteral(subj) {
		return p.canPublish(subj)
	}
	return exempt(subj) || !p.pub.DenyCovers(subj)
}
