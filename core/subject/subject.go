// Package subject validates and matches NATS subjects.
//
// A subject is a non-empty sequence of tokens separated by '.'. Tokens are
// non-empty and contain no whitespace. In a subscription pattern the token
// "*" matches exactly one token and the token ">" matches one or more
// trailing tokens; ">" may only be the last token. A '*' or '>' inside a
// longer token ("a*b") is an ordinary character.
//
// Every function here is pure, allocation-free and safe for concurrent use.
// Names, the one type with state, remembers subjects as strings for hot
// paths that receive them as bytes.
package subject

const (
	// Sep separates the tokens of a subject.
	Sep = '.'
	// Wildcard matches exactly one token.
	Wildcard = "*"
	// FullWildcard matches one or more trailing tokens.
	FullWildcard = ">"
)

// isSpace reports whether c is a byte that may never appear in a subject,
// queue name or sid: the protocol's argument separators and line breaks.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0
}

// Valid reports whether s is a valid subscription subject: literal tokens,
// optionally with "*" tokens and a final ">" token.
func Valid(s string) bool { return validate(s, true) }

// ValidLiteral reports whether s is a valid subject without wildcard tokens,
// as required of a publish subject.
func ValidLiteral(s string) bool { return validate(s, false) }

// ValidPublish reports whether s can be routed as a published subject:
// non-empty tokens free of whitespace. Unlike ValidLiteral it admits "*"
// and ">" tokens, which then match like ordinary tokens (a subscription's
// wildcard matches them, a literal subscription does not), as nats-server
// routes them: JetStream API subjects carry filters such as "orders.>".
func ValidPublish(s string) bool {
	if len(s) == 0 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != Sep {
			if isSpace(s[i]) {
				return false
			}
			continue
		}
		if i == start {
			return false
		}
		start = i + 1
	}
	return true
}

// ValidBytes is Valid for a byte slice; it does not retain b.
func ValidBytes(b []byte) bool { return validateBytes(b, true) }

// ValidLiteralBytes is ValidLiteral for a byte slice; it does not retain b.
func ValidLiteralBytes(b []byte) bool { return validateBytes(b, false) }

func validate(s string, wildcards bool) bool {
	if len(s) == 0 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != Sep {
			if isSpace(s[i]) {
				return false
			}
			continue
		}
		tok := s[start:i]
		if len(tok) == 0 {
			return false
		}
		if len(tok) == 1 && (tok[0] == '*' || tok[0] == '>') {
			if !wildcards {
				return false
			}
			if tok[0] == '>' && i != len(s) {
				return false
			}
		}
		start = i + 1
	}
	return true
}

func validateBytes(b []byte, wildcards bool) bool {
	// The conversion in a call argument position does not allocate when
	// the callee does not retain the string.
	return validate(string(b), wildcards)
}

// IsLiteral reports whether s contains no wildcard token. It does not
// validate s.
func IsLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '*' || c == '>') && (i == 0 || s[i-1] == Sep) && (i+1 == len(s) || s[i+1] == Sep) {
			return false
		}
	}
	return true
}

// ValidQueue reports whether q is a valid queue group name: non-empty and
// free of whitespace.
func ValidQueue(q string) bool {
	if len(q) == 0 {
		return false
	}
	for i := 0; i < len(q); i++ {
		if isSpace(q[i]) {
			return false
		}
	}
	return true
}

// Match reports whether the literal subject matches pattern, which may hold
// wildcard tokens. Both are assumed valid.
func Match(pattern, subject string) bool {
	for {
		pt, prest, pmore := cut(pattern)
		st, srest, smore := cut(subject)
		switch {
		case pt == FullWildcard:
			return len(st) > 0
		case pt == Wildcard:
		case pt != st:
			return false
		}
		if !pmore || !smore {
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// Subset reports whether every subject matched by sub is also matched by
// super. Both may hold wildcards and are assumed valid. It is used to decide
// whether a subscription is covered by a permission or stream filter.
func Subset(sub, super string) bool {
	for {
		st, srest, smore := cut(sub)
		pt, prest, pmore := cut(super)
		switch {
		case pt == FullWildcard:
			return true
		case st == FullWildcard:
			return false
		case pt == Wildcard:
		case st == Wildcard || st != pt:
			return false
		}
		if !smore || !pmore {
			return smore == pmore
		}
		sub, super = srest, prest
	}
}

// Overlap reports whether some literal subject is matched by both a and b.
func Overlap(a, b string) bool {
	for {
		at, arest, amore := cut(a)
		bt, brest, bmore := cut(b)
		if at == FullWildcard || bt == FullWildcard {
			return true
		}
		if at != bt && at != Wildcard && bt != Wildcard {
			return false
		}
		if !amore || !bmore {
			return amore == bmore
		}
		a, b = arest, brest
	}
}

// NumTokens returns the number of tokens in s.
func NumTokens(s string) int {
	if s == "" {
		return 0
	}
	n := 1
	for i := 0; i < len(s); i++ {
		if s[i] == Sep {
			n++
		}
	}
	return n
}

// Token returns the i-th token of s (0-based), or "" if s has fewer tokens.
func Token(s string, i int) string {
	for ; i > 0; i-- {
		_, rest, more := cut(s)
		if !more {
			return ""
		}
		s = rest
	}
	tok, _, _ := cut(s)
	return tok
}

// cut splits s at its first separator.
func cut(s string) (tok, rest string, more bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == Sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
