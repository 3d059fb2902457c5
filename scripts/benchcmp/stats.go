package main

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// median returns the middle value of xs (the mean of the two middle values
// when len(xs) is even) and false when xs is empty. xs is not modified.
func median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid], true
	}
	return (s[mid-1] + s[mid]) / 2, true
}

// formatRatio formats a/b as "1.03×", or "n/a" when either value is
// missing or b is zero.
func formatRatio(a, b float64, okA, okB bool) string {
	if !okA || !okB || b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "n/a"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

// formatValue formats v in unit u: rates as grouped integers
// ("2,265,595"), everything else with one decimal ("246.0").
func formatValue(v float64, u unit) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	if u == unitRate || u == unitRequests || u == unitConns {
		return groupThousands(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// groupThousands writes n with a comma between each group of three digits.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
