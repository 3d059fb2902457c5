package auth_test

import (
	"testing"

	"github.com/leafbox/leafbox/core/auth"
)

func TestFilter(t *testing.T) {
	f := auth.NewFilter([]string{"sensors.>", "cmd.*", "lit.a"}, []string{"sensors.secret.*", "$KV.>", "cmd.stop"})
	for _, tc := range []struct {
		what string
		fn   func(string) bool
		subj string
		want bool
	}{
		{"allows", f.Allows, "sensors.temp", true},
		{"allows", f.Allows, "lit.a", true},
		{"allows", f.Allows, "lit.b", false},
		{"allows", f.Allows, "other", false},
		{"allows", f.Allows, "sensors.secret.x", false}, // deny wins
		{"allows", f.Allows, "cmd.stop", false},
		{"allows", f.Allows, "cmd.*", true}, // wildcard tokens are plain tokens
		{"interest", f.AllowsInterest, "sensors.temp", true},
		{"interest", f.AllowsInterest, ">", true}, // overlaps an allow entry
		{"interest", f.AllowsInterest, "lit.*", true},
		{"interest", f.AllowsInterest, "other.*", false},
		{"interest", f.AllowsInterest, "other", false},
		{"interest", f.AllowsInterest, "sensors.secret.*", false}, // matched token for token
		{"interest", f.AllowsInterest, "sensors.secret.>", false}, // a wider wildcard is denied too
		{"interest", f.AllowsInterest, "sensors.>", true},         // partly denied: filtered per message
		{"covers", f.DenyCovers, "sensors.secret.x", true},
		{"covers", f.DenyCovers, "sensors.secret.*", true},
		{"covers", f.DenyCovers, "sensors.secret.>", false},
		{"covers", f.DenyCovers, "$KV.a.>", true},
		{"covers", f.DenyCovers, "cmd.stop", true},
		{"covers", f.DenyCovers, "cmd.*", false},
	} {
		for range 2 { // the second time from the cache
			if got := tc.fn(tc.subj); got != tc.want {
				t.Errorf("%s %q = %v, want %v", tc.what, tc.subj, got, tc.want)
			}
		}
	}

	open := auth.NewFilter(nil, nil)
	if open.Restricted() || !open.Allows("x") || !open.AllowsInterest(">") || open.DenyCovers("x") {
		t.Fatal("a filter without lists restricts")
	}
	none := auth.NewFilter([]string{}, nil)
	if !none.Restricted() || none.Allows("x") || none.AllowsInterest(">") {
		t.Fatal("an empty allow list allows")
	}
	denyOnly := auth.NewFilter(nil, []string{"$JS.API.>"})
	if !denyOnly.Allows("a.b") || denyOnly.Allows("$JS.API.INFO") || !denyOnly.AllowsInterest(">") || denyOnly.AllowsInterest("$JS.API.>") {
		t.Fatal("deny only")
	}

	subj := []byte("sensors.temp")
	if n := testing.AllocsPerRun(100, func() { _ = f.Allows(string(subj[:])) }); n != 0 {
		t.Fatalf("a cached Allows allocates %v times", n)
	}
}
