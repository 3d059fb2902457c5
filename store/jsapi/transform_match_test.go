package jsapi

import (
	"regexp"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// refFuncs are nats-server's mapping-function regular expressions, in
// mappingFuncs' order: matchFunc must agree with them.
var refFuncs = []*regexp.Regexp{
	regexp.MustCompile(`{{\s*[wW]ildcard\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[pP]artition\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[sS]plit[fF]rom[lL]eft\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[sS]plit[fF]rom[rR]ight\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[sS]lice[fF]rom[lL]eft\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[sS]lice[fF]rom[rR]ight\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[rR]ight\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[lL]eft\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[sS]plit\s*\((.*)\)\s*}}`),
	regexp.MustCompile(`{{\s*[rR]andom\s*\((.*)\)\s*}}`),
}

var refArgSeparator = regexp.MustCompile(`,\s*`)

// checkAgainstRegexp fails unless matchFunc and splitArgs answer as the
// regular expressions do for t.
func checkAgainstRegexp(t *testing.T, tok string) {
	t.Helper()
	for i, f := range mappingFuncs {
		args, ok := matchFunc(tok, f.words)
		m := refFuncs[i].FindStringSubmatch(tok)
		if ok != (m != nil) {
			t.Fatalf("%q, %s: matchFunc says %v, the regexp %v", tok, strings.Join(f.words, ""), ok, m != nil)
		}
		if !ok {
			continue
		}
		require.Equal(t, args, m[1], tok)
		require.DeepEqual(t, splitArgs(args), refArgSeparator.Split(m[1], -1), tok)
	}
}

func TestMatchFunc(t *testing.T) {
	cases := []struct {
		tok   string
		words string // the function matched first, "" for none
		args  string
	}{
		{"{{wildcard(1)}}", "wildcard", "1"},
		{"{{ wildcard(1) }}", "wildcard", "1"},
		{"{{\twildcard ( 1 )\n}}", "wildcard", " 1 "},
		{"{{Wildcard(1)}}", "wildcard", "1"},
		{"{{WILDCARD(1)}}", "", ""},
		{"{{wildCard(1)}}", "", ""},
		{"{{splitFromLeft(1,2)}}", "splitfromleft", "1,2"},
		{"{{SplitFromLeft(1,2)}}", "splitfromleft", "1,2"},
		{"{{splitfromleft(1,2)}}", "splitfromleft", "1,2"},
		{"{{splitFROMleft(1,2)}}", "", ""},
		{"{{SliceFromRight(1, 2)}}", "slicefromright", "1, 2"},
		{"{{split(1,-)}}", "split", "1,-"},
		{"{{left(1,2)}}", "left", "1,2"},
		{"{{Right(1,2)}}", "right", "1,2"},
		{"{{partition(10,1,2)}}", "partition", "10,1,2"},
		{"{{random(5)}}", "random", "5"},
		{"{{wildcard()}}", "wildcard", ""},
		{"{{wildcard(1)}", "", ""},
		{"{{wildcard 1}}", "", ""},
		{"{{wildcard(1}}", "", ""},
		{"{{wildcard1)}}", "", ""},
		{"{{ wildcard(1) }} trailing", "wildcard", "1"},
		{"{{{wildcard(1)}}", "wildcard", "1"},
		{"{{nope}}{{wildcard(2)}}", "wildcard", "2"},
		{"{{wildcard(1)}}{{wildcard(2)}}", "wildcard", "1)}}{{wildcard(2"},
		{"{{wildcard(1)) }}", "wildcard", "1)"},
		{"{{wildcard(1\n)}}", "", ""},
		{"{{wildcard(1)\n}}", "wildcard", "1"},
		{"{{unknown(1)}}", "", ""},
		{"{{}}", "", ""},
	}
	for _, c := range cases {
		checkAgainstRegexp(t, c.tok)
		got := ""
		var args string
		for _, f := range mappingFuncs {
			if a, ok := matchFunc(c.tok, f.words); ok {
				got, args = strings.Join(f.words, ""), a
				break
			}
		}
		require.Equal(t, got, c.words, c.tok)
		require.Equal(t, args, c.args, c.tok)
	}
	require.DeepEqual(t, splitArgs("1,  2,\t3,,4 "), []string{"1", "2", "3", "", "4 "})
	require.DeepEqual(t, splitArgs(""), []string{""})
}

// FuzzMatchFunc: matchFunc and splitArgs agree with nats-server's regular
// expressions on any token.
func FuzzMatchFunc(f *testing.F) {
	for _, s := range []string{"{{wildcard(1)}}", "{{ SplitFromLeft( 1 , 2 ) }}", "{{{partition(1,2)}}}",
		"{{left(1)\n}}", "{{random(1)) }}x", "{{wildcard(1)}}{{wildcard(2)}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		checkAgainstRegexp(t, tok)
	})
}

func TestValidGroupName(t *testing.T) {
	ref := regexp.MustCompile(`^[a-zA-Z0-9/_=-]{1,16}$`)
	for _, g := range []string{"", "a", "A-z_0/9=", "0123456789abcdef", "0123456789abcdefg", "a b", "a.b", "a\n", "ü", "a*", "=-/_"} {
		require.Equal(t, validGroupName(g), ref.MatchString(g), g)
	}
}
