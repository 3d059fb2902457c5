package jsapi

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/leafbox/leafbox/core/subject"
)

// Transform is a compiled subject transform (a stream's subject_transform,
// a republish, a source or mirror transform): the destination parsed once
// so that applying it to a subject allocates nothing. It behaves as
// nats-server's subject transform: a subject that does not match the
// source is not transformed, '*' tokens of the source feed the mapping
// functions of the destination, and a trailing '>' carries the rest of
// the subject over. A Transform is immutable and safe for concurrent use.
type Transform struct {
	src      string
	identity bool // ">" to ">": every subject maps to itself
	nsrc     int  // tokens in src
	parts    []transformPart
	tail     bool // dest ends in '>'
}

// transformPart is one destination token, compiled: literal text or a
// mapping function with the source token positions (0-based) it reads.
type transformPart struct {
	kind  int
	lit   string
	pos   []int
	n     int
	delim string
}

// CompileTransform compiles the transform from src (a subject filter; ""
// means ">") to dest. The errors are nats-server's, as the config checks
// return them (see the Stream*Transform* and *InvalidTransformDestination
// API errors). An empty dest compiles to nil: no transform.
func CompileTransform(src, dest string) (*Transform, error) {
	if dest == "" {
		return nil, nil
	}
	if src == "" {
		src = ">"
	}
	if err := checkTransform(src, dest); err != nil {
		return nil, err
	}
	t := &Transform{src: src, identity: src == ">" && dest == ">"}
	stoks := strings.Split(src, ".")
	t.nsrc = len(stoks)
	// wildcard n (1-based) is the source token at position wc[n].
	var wc []int
	for i, tok := range stoks {
		if tok == "*" {
			wc = append(wc, i)
		}
	}
	dtoks := strings.Split(dest, ".")
	for _, tok := range dtoks {
		d, err := parseDestToken(tok)
		if err != nil {
			return nil, err
		}
		p := transformPart{kind: d.kind, n: int(d.n), delim: d.delim}
		if d.kind == fnNone {
			if tok == ">" {
				t.tail = true
				break
			}
			p.lit = tok
		}
		if len(wc) == 0 && !strings.HasSuffix(src, ">") {
			// Without wildcards a partition hashes the whole subject.
			d.indexes = nil
		}
		for _, i := range d.indexes {
			pos := 0 // nats-server maps an index below 1 to token 0
			if i >= 1 && i <= len(wc) {
				pos = wc[i-1]
			}
			p.pos = append(p.pos, pos)
		}
		t.parts = append(t.parts, p)
	}
	return t, nil
}

// Source is the subject filter the transform applies to.
func (t *Transform) Source() string { return t.src }

// Match reports whether subj (a literal subject) is transformed.
func (t *Transform) Match(subj string) bool {
	return t.identity || subject.Match(t.src, subj)
}

// maxStackTokens is how many subject tokens Append indexes without
// allocating.
const maxStackTokens = 32

// Append appends the transform of the literal subject subj to dst and
// reports whether subj matched the source; when it did not, dst is
// returned unchanged. It allocates nothing for subjects of up to 32
// tokens (beyond dst's growth).
func (t *Transform) Append(dst []byte, subj string) ([]byte, bool) {
	if !t.Match(subj) {
		return dst, false
	}
	if t.identity {
		return append(dst, subj...), true
	}
	var stack [maxStackTokens]string
	toks := stack[:0]
	for start, i := 0, 0; ; i++ {
		if i == len(subj) || subj[i] == '.' {
			toks = append(toks, subj[start:i])
			if i == len(subj) {
				break
			}
			start = i + 1
		}
	}
	for i := range t.parts {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = t.parts[i].append(dst, subj, toks)
	}
	if t.tail {
		if len(t.parts) > 0 {
			dst = append(dst, '.')
		}
		for i := t.nsrc - 1; i < len(toks); i++ {
			if i > t.nsrc-1 {
				dst = append(dst, '.')
			}
			dst = append(dst, toks[i]...)
		}
	}
	return dst, true
}

// tok returns the source token at pos, "" beyond the subject.
func tok(toks []string, pos int) string {
	if pos < len(toks) {
		return toks[pos]
	}
	return ""
}

// append writes the part for the subject subj (tokens toks) to dst.
func (p *transformPart) append(dst []byte, subj string, toks []string) []byte {
	var src string
	if len(p.pos) > 0 {
		src = tok(toks, p.pos[0])
	}
	n := p.n
	switch p.kind {
	case fnNone:
		return append(dst, p.lit...)
	case fnWildcard:
		return append(dst, src...)
	case fnPartition:
		if n == 0 {
			return append(dst, '0')
		}
		h := uint32(2166136261) // FNV-1a, 32 bits
		mix := func(s string) {
			for i := 0; i < len(s); i++ {
				h ^= uint32(s[i])
				h *= 16777619
			}
		}
		if len(p.pos) == 0 {
			mix(subj) // partition(n): the whole subject
		} else {
			for _, pos := range p.pos {
				mix(tok(toks, pos))
			}
		}
		return strconv.AppendUint(dst, uint64(h%uint32(n)), 10)
	case fnRandom:
		if n <= 0 {
			return append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(rand.IntN(n)), 10)
	case fnSplitFromLeft:
		if n > 0 && n < len(src) {
			return append(append(append(dst, src[:n]...), '.'), src[n:]...)
		}
	case fnSplitFromRight:
		if n > 0 && n < len(src) {
			k := len(src) - n
			return append(append(append(dst, src[:k]...), '.'), src[k:]...)
		}
	case fnSliceFromLeft:
		if n > 0 && n < len(src) {
			for i := 0; i < len(src); i += n {
				if i > 0 {
					dst = append(dst, '.')
				}
				dst = append(dst, src[i:min(i+n, len(src))]...)
			}
			return dst
		}
	case fnSliceFromRight:
		if n > 0 && n < len(src) {
			first := len(src) % n
			if first > 0 {
				dst = append(append(dst, src[:first]...), '.')
			}
			for i := first; i < len(src); i += n {
				if i > first {
					dst = append(dst, '.')
				}
				dst = append(dst, src[i:i+n]...)
			}
			return dst
		}
	case fnLeft:
		if n > 0 && n < len(src) {
			return append(dst, src[:n]...)
		}
	case fnRight:
		if n > 0 && n < len(src) {
			return append(dst, src[len(src)-n:]...)
		}
	case fnSplit:
		return appendSplit(dst, src, p.delim)
	}
	return append(dst, src...)
}

// appendSplit writes the non-empty pieces of s cut at delim, joined by
// '.', as nats-server's split(): a separator precedes a piece only when
// some piece was written before it and it is not empty.
func appendSplit(dst []byte, s, delim string) []byte {
	// next returns the piece at the start of rest and what follows it.
	next := func(rest string) (piece, after string, more bool) {
		if delim == "" {
			_, size := utf8.DecodeRuneInString(rest)
			return rest[:size], rest[size:], size < len(rest)
		}
		if i := strings.Index(rest, delim); i >= 0 {
			return rest[:i], rest[i+len(delim):], true
		}
		return rest, "", false
	}
	if s == "" {
		return dst
	}
	piece, rest, more := next(s)
	for j := 0; ; j++ {
		dst = append(dst, piece...)
		if !more {
			return dst
		}
		np, nrest, nmore := next(rest)
		if np != "" && !(j == 0 && piece == "") {
			dst = append(dst, '.')
		}
		piece, rest, more = np, nrest, nmore
	}
}
