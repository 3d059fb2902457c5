// Package query classifies the subject filters of store queries, which
// the memory and file engines answer by different means: every message, the
// per-subject index, or a scan.
package query

import "github.com/leafbox/leafbox/core/subject"

// Kind is the class of a filter subject.
type Kind uint8

const (
	// All is "" or ">": every message matches.
	All Kind = iota
	// Literal has no wildcard token: one subject matches.
	Literal
	// Wildcard has a "*" or a trailing ">" token.
	Wildcard
)

// Classify returns f's Kind.
func Classify(f string) Kind {
	switch {
	case f == "" || f == subject.FullWildcard:
		return All
	case subject.IsLiteral(f):
		return Literal
	default:
		return Wildcard
	}
}
