package subject

import (
	"slices"
	"strings"
	"testing"
)

// The naive functions below restate the subject rules with strings.Split so
// that the fuzz targets can check the allocation-free implementations.

func naiveValid(s string, wildcards bool) bool {
	if s == "" {
		return false
	}
	toks := strings.Split(s, ".")
	for i, tok := range toks {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n\f\x00") {
			return false
		}
		if tok == "*" || tok == ">" {
			if !wildcards || (tok == ">" && i != len(toks)-1) {
				return false
			}
		}
	}
	return true
}

func naiveMatch(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) || (p != "*" && p != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{"foo", "foo.bar", "foo.*", "foo.>", ">", "*", "foo.>.bar", "a*b.c>", "", ".", "foo..bar", "foo bar", "\x00", "$JS.API.>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid, literal := naiveValid(s, true), naiveValid(s, false)
		if got := Valid(s); got != valid {
			t.Fatalf("Valid(%q) = %v, want %v", s, got, valid)
		}
		if got := ValidLiteral(s); got != literal {
			t.Fatalf("ValidLiteral(%q) = %v, want %v", s, got, literal)
		}
		if ValidBytes([]byte(s)) != valid || ValidLiteralBytes([]byte(s)) != literal {
			t.Fatalf("byte validators disagree on %q", s)
		}
		queue := s != "" && !strings.ContainsAny(s, " \t\r\n\f\x00")
		if got := ValidQueue(s); got != queue {
			t.Fatalf("ValidQueue(%q) = %v, want %v", s, got, queue)
		}
		if !valid {
			return
		}
		toks := strings.Split(s, ".")
		if got := NumTokens(s); got != len(toks) {
			t.Fatalf("NumTokens(%q) = %d, want %d", s, got, len(toks))
		}
		for i, tok := range append(toks, "") {
			if got := Token(s, i); got != tok {
				t.Fatalf("Token(%q, %d) = %q, want %q", s, i, got, tok)
			}
		}
		if got := IsLiteral(s); got != literal {
			t.Fatalf("IsLiteral(%q) = %v, want %v", s, got, literal)
		}
		if !Subset(s, s) || !Overlap(s, s) {
			t.Fatalf("%q is not a subset of or overlapping itself", s)
		}
		if literal && !Match(s, s) {
			t.Fatalf("Match(%q, %q) = false", s, s)
		}
	})
}

func FuzzMatch(f *testing.F) {
	for _, c := range [][2]string{
		{"foo", "foo"}, {"foo.*", "foo.bar"}, {"foo.*", "foo"}, {"foo.*", "foo.bar.baz"}, {"foo.>", "foo"},
		{"foo.>", "foo.bar.baz"}, {">", "a"}, {"*.b.*", "a.b.c"}, {"a.b", "a.b.c"}, {"a*.>", "a*.b"}, {"*.*", "a.b"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		if !Valid(pattern) || !ValidLiteral(subject) {
			return
		}
		want := naiveMatch(pattern, subject)
		if got := Match(pattern, subject); got != want {
			t.Fatalf("Match(%q, %q) = %v, want %v", pattern, subject, got, want)
		}
		// A literal subject is a subset of, and overlaps, exactly the
		// patterns that match it.
		if got := Subset(subject, pattern); got != want {
			t.Fatalf("Subset(%q, %q) = %v, want %v", subject, pattern, got, want)
		}
		if Overlap(pattern, subject) != want || Overlap(subject, pattern) != want {
			t.Fatalf("Overlap(%q, %q) disagrees with Match = %v", pattern, subject, want)
		}
	})
}

func FuzzSubset(f *testing.F) {
	for _, c := range [][2]string{
		{"foo.bar", "foo.*"}, {"foo.*", "foo.>"}, {"foo.>", "foo.*"}, {"*", "a"}, {"foo.*", "*.bar"}, {"a.>", "a"},
		{"*.>", ">"}, {"a.*.c", "a.b.*"}, {">", "*.*"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !Valid(a) || !Valid(b) || NumTokens(a) > 3 || NumTokens(b) > 3 {
			return
		}
		checkPatternPair(t, a, b)
		checkPatternPair(t, b, a)
	})
}

// checkPatternPair compares Subset(a, b) and Overlap(a, b) with their
// definitions, evaluated over every literal subject built from the literal
// tokens of a and b plus one fresh token, up to one token longer than
// either. That universe holds a witness whenever one exists.
func checkPatternPair(t *testing.T, a, b string) {
	t.Helper()
	var alphabet []string
	longest := 0
	for _, tok := range append(strings.Split(a, "."), strings.Split(b, ".")...) {
		longest = max(longest, len(tok))
		if tok != "*" && tok != ">" && !slices.Contains(alphabet, tok) {
			alphabet = append(alphabet, tok)
		}
	}
	alphabet = append(alphabet, strings.Repeat("z", longest+1)) // fresh
	maxLen := max(NumTokens(a), NumTokens(b)) + 1
	subset, overlap := true, false
	var visit func(prefix string, n int)
	visit = func(prefix string, n int) {
		if n > 0 {
			ma, mb := naiveMatch(a, prefix), naiveMatch(b, prefix)
			subset = subset && (!ma || mb)
			overlap = overlap || (ma && mb)
		}
		if n == maxLen {
			return
		}
		for _, tok := range alphabet {
			if n > 0 {
				tok = prefix + "." + tok
			}
			visit(tok, n+1)
		}
	}
	visit("", 0)
	if got := Subset(a, b); got != subset {
		t.Fatalf("Subset(%q, %q) = %v, want %v", a, b, got, subset)
	}
	if got := Overlap(a, b); got != overlap {
		t.Fatalf("Overlap(%q, %q) = %v, want %v", a, b, got, overlap)
	}
}
