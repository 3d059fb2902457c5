package store

import (
	"strings"
	"testing"
)

func TestParseDiscardPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		want DiscardPolicy
	}{{"old", DiscardOld}, {"new", DiscardNew}, {"OLD", DiscardOld}, {"New", DiscardNew}} {
		got, err := ParseDiscardPolicy(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("ParseDiscardPolicy(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "sometimes", "old ", "newest"} {
		_, err := ParseDiscardPolicy(bad)
		if err == nil || !strings.Contains(err.Error(), "want old or new") {
			t.Errorf("ParseDiscardPolicy(%q) error = %v; want one naming old and new", bad, err)
		}
	}
}
