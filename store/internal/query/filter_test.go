package query

import "testing"

func TestClassify(t *testing.T) {
	for f, want := range map[string]Kind{"": All, ">": All, "a.b": Literal, "a*b": Literal, "a.*": Wildcard, "a.>": Wildcard, "*": Wildcard} {
		if got := Classify(f); got != want {
			t.Errorf("Classify(%q) = %d, want %d", f, got, want)
		}
	}
}
