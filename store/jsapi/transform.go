package jsapi

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/core/subject"
)

// This file checks subject-transform destinations the way nats-server
// does when it validates stream, mirror, source and republish transforms
// (ValidateMapping and NewSubjectTransform). It only validates; applying
// a transform is the engine's business.

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
	fnIndexInt // splitFromLeft/Right, sliceFromLeft/Right, left, right
	fnSplit
	fnRandom
)

// mappingFuncs lists the mapping functions in the order nats-server tries
// them, each name split into its words: a token calls one when it holds
// `{{`, spaces, the name, spaces, `(`, arguments, `)`, spaces and `}}`,
// the first letter of each word in either case ("splitFromLeft",
// "SplitfromLeft"). nats-server matches the regular expression
// `{{\s*[sS]plit[fF]rom[lL]eft\s*\((.*)\)\s*}}` and the like; matchFunc
// does the same by hand (the regexp engine is about 100 KB of a binary).
var mappingFuncs = []struct {
	words []string
	kind  int
}{
	{[]string{"wildcard"}, fnWildcard},
	{[]string{"partition"}, fnPartition},
	{[]string{"split", "from", "left"}, fnIndexInt},
	{[]string{"split", "from", "right"}, fnIndexInt},
	{[]string{"slice", "from", "left"}, fnIndexInt},
	{[]string{"slice", "from", "right"}, fnIndexInt},
	{[]string{"right"}, fnIndexInt},
	{[]string{"left"}, fnIndexInt},
	{[]string{"split"}, fnSplit},
	{[]string{"random"}, fnRandom},
}

// reSpace is what `\s` matches in Go's regular expressions.
const reSpace = "\t\n\f\r "

// matchFunc finds a call of the function named by words in t as the
// unanchored regular expression `{{\s*name\s*\((.*)\)\s*}}` would: at
// the leftmost `{{` where it matches, with the longest argument text (no
// line break in it). It returns that argument text.
func matchFunc(t string, words []string) (args string, ok bool) {
	for from := 0; ; from++ {
		i := strings.Index(t[from:], "{{")
		if i < 0 {
			return "", false
		}
		from += i
		if args, ok := matchFuncAt(t[from+2:], words); ok {
			return args, true
		}
	}
}

// matchFuncAt matches `\s*name\s*\((.*)\)\s*}}` at the start of r.
func matchFuncAt(r string, words []string) (string, bool) {
	r = strings.TrimLeft(r, reSpace)
	for _, w := range words {
		if len(r) < len(w) || (r[0] != w[0] && r[0] != w[0]-'a'+'A') || r[1:len(w)] != w[1:] {
			return "", false
		}
		r = r[len(w):]
	}
	r = strings.TrimLeft(r, reSpace)
	if r == "" || r[0] != '(' {
		return "", false
	}
	r = r[1:]
	line := r
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl] // `.` does not match a line break
	}
	for e := strings.LastIndexByte(line, ')'); e >= 0; e = strings.LastIndexByte(line[:e], ')') {
		if strings.HasPrefix(strings.TrimLeft(r[e+1:], reSpace), "}}") {
			return r[:e], true
		}
	}
	return "", false
}

// splitArgs splits a function's argument text at commas, dropping the
// white space after each (nats-server splits at the regular expression
// `,\s*`).
func splitArgs(s string) []string {
	args := strings.Split(s, ",")
	for i := 1; i < len(args); i++ {
		args[i] = strings.TrimLeft(args[i], reSpace)
	}
	return args
}

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
				if _, ok := matchFunc(t, f.words); ok {
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

// placeholders parses one destination token: its mapping function kind
// and the wildcard indexes it refers to.
func placeholders(t string) (kind int, indexes []int, err error) {
	if len(t) > 1 && t[0] == '$' {
		// Legacy "$1" form; other $ tokens are literals.
		if n, err := strconv.Atoi(t[1:]); err == nil {
			return fnWildcard, []int{n}, nil
		}
		return fnNone, nil, nil
	}
	if !isFuncToken(t) {
		return fnNone, nil, nil
	}
	for _, f := range mappingFuncs {
		if args, ok := matchFunc(t, f.words); ok {
			return parseFuncArgs(t, f.kind, splitArgs(args))
		}
	}
	return fnNone, nil, &mappingError{t, errMappingUnknownFunc}
}

func atoiArg(s string) (int, bool) {
	n, err := strconv.Atoi(strings.Trim(s, " "))
	return n, err == nil
}

func parseFuncArgs(t string, kind int, args []string) (int, []int, error) {
	bad := func(e error) (int, []int, error) { return kind, nil, &mappingError{t, e} }
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
		return kind, []int{i}, nil
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
		return kind, idx, nil
	case fnIndexInt, fnSplit:
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
		if kind == fnSplit {
			if strings.ContainsAny(args[1], " .") {
				return bad(errMappingInvalidArg)
			}
		} else if _, err := strconv.ParseInt(strings.Trim(args[1], " "), 10, 32); err != nil {
			return bad(errMappingInvalidArg)
		}
		return kind, []int{i}, nil
	default: // fnRandom
		if len(args) != 1 {
			return bad(errMappingNotEnoughArgs)
		}
		if n, ok := atoiArg(args[0]); !ok || n > math.MaxInt32 {
			return bad(errMappingInvalidArg)
		}
		return kind, nil, nil
	}
}
