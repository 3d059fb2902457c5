package jsapi

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/core/subject"
)

// This file checks subject-transform destinations the way nats-server
// does when it validates stream, mirror, source and republish transforms
// (ValidateMapping and NewSubjectTransform), and compiles them
// (CompileTransform in transform_apply.go).

// Transform errors, with nats-server's texts since they reach clients
// inside 10146, 10154 and 10156 descriptions.
var (
	errBadSubject            = errors.New("invalid subject")
	errMappingInvalidSubject = errors.New("invalid mapping destination: invalid transform")
	errMappingUnknownFunc    = errors.New("invalid mapping destination: unknown function")
	errMappingOutOfRange     = errors.New("invalid mapping destination: wildcard index out of range")
	errMappingNotEnoughArgs  = errors.New("invalid mapping destination: not enough arguments passed to the function")
	errMappingInvalidArg     = errors.New("invalid mapping destination: function argument is invalid or in the wrong format")
	errMappingTooManyArgs    = errors.New("invalid mapping destination: too many arguments passed to the function")
)

// mappingError names the destination token an error is about, as
// nats-server's mappingDestinationErr: "<err> in <token>", or just
// "<err>" for an empty token.
type mappingError struct {
	token string
	err   error
}

// Error formats the error as nats-server does.
func (e *mappingError) Error() string {
	if e.token == "" {
		return e.err.Error()
	}
	return e.err.Error() + " in " + e.token
}

// Unwrap returns the underlying error.
func (e *mappingError) Unwrap() error { return e.err }

// mapping function kinds.
const (
	fnNone = iota
	fnWildcard
	fnPartition
	fnSplitFromLeft
	fnSplitFromRight
	fnSliceFromLeft
	fnSliceFromRight
	fnRight
	fnLeft
	fnSplit
	fnRandom
)

var (
	argSeparator = regexp.MustCompile(`,\s*`)
	mappingFuncs = []struct {
		re   *regexp.Regexp
		kind int
	}{
		{regexp.MustCompile(`{{\s*[wW]ildcard\s*\((.*)\)\s*}}`), fnWildcard},
		{regexp.MustCompile(`{{\s*[pP]artition\s*\((.*)\)\s*}}`), fnPartition},
		{regexp.MustCompile(`{{\s*[sS]plit[fF]rom[lL]eft\s*\((.*)\)\s*}}`), fnSplitFromLeft},
		{regexp.MustCompile(`{{\s*[sS]plit[fF]rom[rR]ight\s*\((.*)\)\s*}}`), fnSplitFromRight},
		{regexp.MustCompile(`{{\s*[sS]lice[fF]rom[lL]eft\s*\((.*)\)\s*}}`), fnSliceFromLeft},
		{regexp.MustCompile(`{{\s*[sS]lice[fF]rom[rR]ight\s*\((.*)\)\s*}}`), fnSliceFromRight},
		{regexp.MustCompile(`{{\s*[rR]ight\s*\((.*)\)\s*}}`), fnRight},
		{regexp.MustCompile(`{{\s*[lL]eft\s*\((.*)\)\s*}}`), fnLeft},
		{regexp.MustCompile(`{{\s*[sS]plit\s*\((.*)\)\s*}}`), fnSplit},
		{regexp.MustCompile(`{{\s*[rR]andom\s*\((.*)\)\s*}}`), fnRandom},
	}
)

func isFuncToken(t string) bool {
	return len(t) > 4 && strings.HasPrefix(t, "{{") && strings.HasSuffix(t, "}}")
}

// validateMapping is nats-server's ValidateMapping: a token-level check of
// dest followed by checkTransform.
func validateMapping(src, dest string) error {
	if dest == "" {
		return nil
	}
	afterFull := false
	for _, t := range strings.Split(dest, ".") {
		if t == "" || afterFull {
			return &mappingError{t, errMappingInvalidSubject}
		}
		if isFuncToken(t) {
			known := false
			for _, f := range mappingFuncs {
				if f.re.MatchString(t) {
					known = true
					break
				}
			}
			if !known {
				return &mappingError{t, errMappingUnknownFunc}
			}
			continue
		}
		if t == ">" {
			afterFull = true
		} else if strings.ContainsAny(t, "\t\n\f\r ") {
			return errMappingInvalidSubject
		}
	}
	return checkTransform(src, dest)
}

// subjectShape reports validity, tokens, the number of '*' tokens and
// whether the subject ends in '>'.
func subjectShape(s string) (valid bool, toks []string, pwcs int, fwc bool) {
	toks = strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return false, nil, 0, false
		case t == "*":
			pwcs++
		case t == ">":
			if i != len(toks)-1 {
				return false, nil, 0, false
			}
			fwc = true
		}
	}
	return true, toks, pwcs, fwc
}

// checkTransform is the validation part of nats-server's
// NewSubjectTransform (non-strict): src and dest are valid subjects, dest
// has no '*' and ends in '>' exactly when src does, and every mapping
// function is well formed and refers to existing '*' tokens of src.
func checkTransform(src, dest string) error {
	if dest == "" {
		return nil
	}
	if src == "" {
		src = ">"
	}
	sv, _, npwcs, sfwc := subjectShape(src)
	sv = sv && subject.Valid(src)
	dv, dtoks, dpwcs, dfwc := subjectShape(dest)
	if !sv || !dv || dpwcs > 0 || sfwc != dfwc {
		return errBadSubject
	}
	for _, t := range dtoks {
		kind, indexes, err := placeholders(t)
		if err != nil {
			return err
		}
		if npwcs == 0 && !sfwc {
			if kind != fnNone && kind != fnRandom && kind != fnPartition {
				return &mappingError{t, errMappingOutOfRange}
			}
			continue
		}
		for _, i := range indexes {
			if i > npwcs {
				return &mappingError{t + ": [" + strconv.Itoa(i) + "]", errMappingOutOfRange}
			}
		}
	}
	return nil
}

// destToken is one parsed destination token: its mapping function kind,
// the wildcard indexes it refers to (1-based, as written), its integer
// argument (partitions, position, size, length, random ceiling) and its
// string argument (the split delimiter).
type destToken struct {
	kind    int
	indexes []int
	n       int32
	delim   string
}

// placeholders parses one destination token: its mapping function kind
// and the wildcard indexes it refers to.
func placeholders(t string) (kind int, indexes []int, err error) {
	d, err := parseDestToken(t)
	return d.kind, d.indexes, err
}

// parseDestToken parses one destination token as nats-server's
// indexPlaceHolders does.
func parseDestToken(t string) (destToken, error) {
	if len(t) > 1 && t[0] == '$' {
		// Legacy "$1" form; other $ tokens are literals.
		if n, err := strconv.Atoi(t[1:]); err == nil {
			return destToken{kind: fnWildcard, indexes: []int{n}}, nil
		}
		return destToken{}, nil
	}
	if !isFuncToken(t) {
		return destToken{}, nil
	}
	for _, f := range mappingFuncs {
		m := f.re.FindStringSubmatch(t)
		if len(m) < 2 {
			continue
		}
		return parseFuncArgs(t, f.kind, argSeparator.Split(m[1], -1))
	}
	return destToken{}, &mappingError{t, errMappingUnknownFunc}
}

func atoiArg(s string) (int, bool) {
	n, err := strconv.Atoi(strings.Trim(s, " "))
	return n, err == nil
}

func parseFuncArgs(t string, kind int, args []string) (destToken, error) {
	bad := func(e error) (destToken, error) { return destToken{kind: kind}, &mappingError{t, e} }
	switch kind {
	case fnWildcard:
		switch {
		case len(args) == 1 && args[0] == "":
			return bad(errMappingNotEnoughArgs)
		case len(args) > 1:
			return bad(errMappingTooManyArgs)
		}
		i, ok := atoiArg(args[0])
		if !ok {
			return bad(errMappingInvalidArg)
		}
		return destToken{kind: kind, indexes: []int{i}}, nil
	case fnPartition:
		n, ok := atoiArg(args[0])
		if !ok || n > math.MaxInt32 {
			return bad(errMappingInvalidArg)
		}
		var idx []int
		for _, a := range args[1:] {
			i, ok := atoiArg(a)
			if !ok {
				return bad(errMappingInvalidArg)
			}
			idx = append(idx, i)
		}
		return destToken{kind: kind, indexes: idx, n: int32(n)}, nil
	case fnSplit:
		switch {
		case len(args) < 2:
			return bad(errMappingNotEnoughArgs)
		case len(args) > 2:
			return bad(errMappingTooManyArgs)
		}
		i, ok := atoiArg(args[0])
		if !ok || strings.ContainsAny(args[1], " .") {
			return bad(errMappingInvalidArg)
		}
		return destToken{kind: kind, indexes: []int{i}, delim: args[1]}, nil
	case fnRandom:
		if len(args) != 1 {
			return bad(errMappingNotEnoughArgs)
		}
		n, ok := atoiArg(args[0])
		if !ok || n > math.MaxInt32 {
			return bad(errMappingInvalidArg)
		}
		return destToken{kind: kind, n: int32(n)}, nil
	default: // splitFromLeft/Right, sliceFromLeft/Right, left, right
		switch {
		case len(args) < 2:
			return bad(errMappingNotEnoughArgs)
		case len(args) > 2:
			return bad(errMappingTooManyArgs)
		}
		i, ok := atoiArg(args[0])
		if !ok {
			return bad(errMappingInvalidArg)
		}
		n, err := strconv.ParseInt(strings.Trim(args[1], " "), 10, 32)
		if err != nil {
			return bad(errMappingInvalidArg)
		}
		return destToken{kind: kind, indexes: []int{i}, n: int32(n)}, nil
	}
}
