package config

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// TestLineMessage: lineMessage and unknownField answer as the regular
// expressions they replace.
func TestLineMessage(t *testing.T) {
	syntaxRE := regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	typeRE := regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRE := regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	msgs := []string{
		"yaml: line 3: did not find expected key",
		"yaml: line 12: mapping values are not allowed in this context",
		"yaml: line : x", "yaml: line 3 x", "yaml: line 3:x", "yaml: line 3: a\nb", "yaml: line 3: ",
		"yaml: control characters are not allowed",
		"line 4: field listen not found in type config.Config",
		"line 4: cannot unmarshal !!str `x` into int",
		"line 99999999999999999999: x", "line 7: field a b not found in type c", "xline 1: y",
		"field a not found in type b", "field  not found in type b", "field a not found in type b c",
		"field a not found in type ", "field a\tb not found in type c", "field a not found in type b\n",
	}
	check := func(re *regexp.Regexp, msg, prefix string) {
		line, text, ok := lineMessage(msg, prefix)
		m := re.FindStringSubmatch(msg)
		require.Equal(t, ok, m != nil, msg)
		if ok {
			want, _ := strconv.Atoi(m[1])
			require.Equal(t, line, want, msg)
			require.Equal(t, text, m[2], msg)
		}
	}
	for _, msg := range msgs {
		check(syntaxRE, msg, "yaml: ")
		check(typeRE, msg, "")
		key, typ, ok := unknownField(msg)
		u := unknownRE.FindStringSubmatch(msg)
		require.Equal(t, ok, u != nil, msg)
		if ok {
			require.Equal(t, key, u[1], msg)
			require.Equal(t, typ, u[2], msg)
		}
	}
}
