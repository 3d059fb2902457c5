package auth_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/subject"
)

// permsFor compiles p as the permissions of a user and returns them.
func permsFor(t *testing.T, p *auth.Permissions) *auth.Perms {
	t.Helper()
	a := mustNew(t, auth.Config{Users: []auth.User{{Name: "u", Permissions: p}}})
	return requireAuthorized(t, a, auth.Credentials{User: "u"}, "").Perms
}

func pubPerms(allow, deny []string) *auth.Permissions {
	return &auth.Permissions{Publish: &auth.SubjectPermission{Allow: allow, Deny: deny}}
}

func subPerms(allow, deny []string) *auth.Permissions {
	return &auth.Permissions{Subscribe: &auth.SubjectPermission{Allow: allow, Deny: deny}}
}

func TestCanPublish(t *testing.T) {
	tests := []struct {
		name  string
		perms *auth.Permissions
		want  map[string]bool
	}{
		{"allow only", pubPerms([]string{"foo.*", "bar.>", "baz"}, nil), map[string]bool{
			"foo.a": true, "foo.a.b": false, "foo": false,
			"bar.x": true, "bar.x.y": true, "bar": false,
			"baz": true, "baz.x": false, "other": false,
		}},
		{"deny only", pubPerms(nil, []string{"secret.>", "admin"}), map[string]bool{
			"x": true, "secret.a": false, "secret.a.b": false, "secret": true,
			"admin": false, "admin.x": true,
		}},
		{"allow and deny", pubPerms([]string{"foo.>"}, []string{"foo.secret.*"}), map[string]bool{
			"foo.a": true, "foo.secret.x": false, "foo.secret": true, "foo.secret.x.y": true, "bar": false,
		}},
		{"deny wins over identical allow", pubPerms([]string{"a", "b"}, []string{"a"}), map[string]bool{
			"a": false, "b": true,
		}},
		{"empty lists", pubPerms([]string{}, []string{}), map[string]bool{
			"anything": true, "a.b.c": true,
		}},
		{"wildcard publish subjects are literal tokens", pubPerms([]string{"foo.*", "lit.bar"}, []string{"den.>"}), map[string]bool{
			"foo.*": true, "foo.>": true, "lit.*": false, "den.*": false,
		}},
		{"response without allow list denies all", &auth.Permissions{Response: &auth.ResponsePermission{}}, map[string]bool{
			"anything": false, "_INBOX.x": false,
		}},
		{"response with allow list", &auth.Permissions{
			Publish:  &auth.SubjectPermission{Allow: []string{"req.>"}},
			Response: &auth.ResponsePermission{},
		}, map[string]bool{"req.a": true, "_INBOX.x": false}},
		{"response with deny list only", &auth.Permissions{
			Publish:  &auth.SubjectPermission{Deny: []string{"x"}},
			Response: &auth.ResponsePermission{},
		}, map[string]bool{"y": false}},
		{"subscribe-only permissions", subPerms([]string{"foo"}, nil), map[string]bool{
			"anything": true,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := permsFor(t, tc.perms)
			for range 2 { // the second round is answered from the cache
				for subj, want := range tc.want {
					if got := p.CanPublish(subj); got != want {
						t.Errorf("CanPublish(%q) = %v, want %v", subj, got, want)
					}
				}
			}
		})
	}
}

func TestNilPermsAllowEverything(t *testing.T) {
	var p *auth.Perms
	if !p.CanPublish("a") || !p.CanSubscribe(">", "") || !p.CanSubscribe("a", "q") || !p.CanDeliver("a", "q") {
		t.Fatal("nil Perms must allow everything")
	}
	if p.NeedsDeliveryCheck(">", "q") {
		t.Fatal("nil Perms need no delivery check")
	}
	if p.Response() != nil {
		t.Fatal("nil Perms have no response permission")
	}
}

type subCase struct {
	subject, queue string
	want           bool
}

func checkSubscribe(t *testing.T, p *auth.Perms, cases []subCase) {
	t.Helper()
	for _, c := range cases {
		if got := p.CanSubscribe(c.subject, c.queue); got != c.want {
			t.Errorf("CanSubscribe(%q, %q) = %v, want %v", c.subject, c.queue, got, c.want)
		}
	}
}

func TestCanSubscribe(t *testing.T) {
	tests := []struct {
		name  string
		perms *auth.Permissions
		cases []subCase
	}{
		{"literal allow", subPerms([]string{"foo", "bar.baz"}, nil), []subCase{
			{"foo", "", true}, {"bar.baz", "", true}, {"foo", "q", true},
			{"bar", "", false}, {"foo.x", "", false}, {"*", "", false}, {">", "", false}, {"bar.*", "", false},
		}},
		{"wildcard subset of allow", subPerms([]string{"foo.*", "bar.>"}, nil), []subCase{
			{"foo.a", "", true}, {"foo.*", "", true}, {"foo.a.b", "", false},
			{"bar.>", "", true}, {"bar.*", "", true}, {"bar.a.*", "", true}, {"bar.*.>", "", true},
			{"*", "", false}, {">", "", false}, {"*.a", "", false}, {"bar", "", false},
			// Stricter than nats-server, whose sublist match admits it.
			{"foo.>", "", false},
		}},
		{"literal deny", subPerms(nil, []string{"foo.secret"}), []subCase{
			{"foo.secret", "", false}, {"foo.secret", "q", false},
			{"foo.public", "", true},
			// Wildcards overlapping a deny entry are allowed and filtered on delivery.
			{"foo.*", "", true}, {"foo.>", "", true}, {">", "", true}, {"*.secret", "", true},
		}},
		{"wildcard deny", subPerms(nil, []string{"admin.>", "foo.*"}), []subCase{
			{"admin.x", "", false}, {"admin.*", "", false}, {"admin.>", "", false}, {"admin.x.y", "", false},
			{"admin", "", true}, {">", "", true},
			{"foo.a", "", false}, {"foo.*", "", false}, {"foo.a.b", "", true},
			// nats-server compares token by token, so "*" in the deny
			// entry matches the ">" of the subscription.
			{"foo.>", "", false},
		}},
		{"allow and deny", subPerms([]string{"foo.>"}, []string{"foo.secret.>"}), []subCase{
			{"foo.a", "", true}, {"foo.>", "", true}, {"foo.secret.x", "", false}, {"foo.secret.>", "", false},
			{"foo.secret", "", true}, {"bar", "", false},
		}},
		{"queue allow only", subPerms([]string{"foo.> workers", "bar"}, nil), []subCase{
			{"foo.a", "", false}, {"foo.a", "workers", true}, {"foo.a", "other", false},
			{"foo.*", "workers", true}, {"foo.>", "workers", true}, {">", "workers", false},
			{"bar", "", true}, {"bar", "any", true},
		}},
		{"queue allow narrows plain allow", subPerms([]string{"foo.>", "foo.bar workers"}, nil), []subCase{
			{"foo.bar", "", true}, {"foo.bar", "workers", true}, {"foo.bar", "other", false},
			{"foo.baz", "other", true},
		}},
		{"queue allow with wildcard queue", subPerms([]string{"foo v1.*"}, nil), []subCase{
			{"foo", "v1.a", true}, {"foo", "v1.*", true}, {"foo", "v2.a", false},
			{"foo", "v1.a.b", false}, {"foo", "v1", false}, {"foo", "", false},
		}},
		{"queue deny", subPerms(nil, []string{"foo.> workers"}), []subCase{
			{"foo.a", "workers", false}, {"foo.*", "workers", false}, {"foo.a", "other", true},
			{"foo.a", "", true}, {">", "workers", true}, {"bar", "workers", true},
		}},
		{"queue deny with wildcard queue", subPerms(nil, []string{"foo v1.*"}), []subCase{
			{"foo", "v1.x", false}, {"foo", "v2", true}, {"foo", "", true},
		}},
		{"publish-only permissions", pubPerms([]string{"x"}, nil), []subCase{
			{">", "", true}, {"a", "q", true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSubscribe(t, permsFor(t, tc.perms), tc.cases)
		})
	}
}

func TestDeliveryFilter(t *testing.T) {
	p := permsFor(t, subPerms(nil, []string{"foo.secret", "foo.> workers"}))
	tests := []struct {
		sub, queue string
		needs      bool
		deliver    map[string]bool
	}{
		{"foo.*", "", true, map[string]bool{"foo.secret": false, "foo.public": true}},
		{">", "", true, map[string]bool{"foo.secret": false, "foo.a.b": true, "bar": true}},
		{"foo.public", "", false, map[string]bool{"foo.public": true}},
		{"bar.*", "", false, map[string]bool{"bar.x": true}},
		{">", "workers", true, map[string]bool{"foo.a": false, "foo.secret": false, "bar": true}},
		{">", "other", true, map[string]bool{"foo.a": true, "foo.secret": false}},
		{"bar.>", "workers", false, map[string]bool{"bar.x": true}},
	}
	for _, tc := range tests {
		t.Run(tc.sub+" "+tc.queue, func(t *testing.T) {
			if !p.CanSubscribe(tc.sub, tc.queue) {
				t.Fatalf("CanSubscribe(%q, %q) = false", tc.sub, tc.queue)
			}
			require.Equal(t, p.NeedsDeliveryCheck(tc.sub, tc.queue), tc.needs)
			for range 2 {
				for subj, want := range tc.deliver {
					if got := p.CanDeliver(subj, tc.queue); got != want {
						t.Errorf("CanDeliver(%q, %q) = %v, want %v", subj, tc.queue, got, want)
					}
				}
			}
		})
	}
	// Without a deny list nothing is filtered.
	open := permsFor(t, subPerms([]string{"foo.>"}, nil))
	if open.NeedsDeliveryCheck("foo.*", "") || !open.CanDeliver("foo.x", "") {
		t.Fatal("allow-only permissions must not filter deliveries")
	}
}

func TestResponseDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *auth.ResponsePermission
		want *auth.ResponsePermission
	}{
		{"none", nil, nil},
		{"zero", &auth.ResponsePermission{}, &auth.ResponsePermission{MaxMsgs: 1, Expires: 2 * time.Minute}},
		{"max only", &auth.ResponsePermission{MaxMsgs: 5}, &auth.ResponsePermission{MaxMsgs: 5, Expires: 2 * time.Minute}},
		{"expiry only", &auth.ResponsePermission{Expires: time.Second}, &auth.ResponsePermission{MaxMsgs: 1, Expires: time.Second}},
		{"both", &auth.ResponsePermission{MaxMsgs: 3, Expires: time.Hour}, &auth.ResponsePermission{MaxMsgs: 3, Expires: time.Hour}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := permsFor(t, &auth.Permissions{
				Publish:  &auth.SubjectPermission{Allow: []string{"x"}},
				Response: tc.in,
			})
			got := p.Response()
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("Response() = %+v, want nil", *got)
			case tc.want != nil && (got == nil || *got != *tc.want):
				t.Fatalf("Response() = %+v, want %+v", got, *tc.want)
			}
		})
	}
	require.Equal(t, auth.DefaultResponseMaxMsgs, 1)
	require.Equal(t, auth.DefaultResponseExpires, 2*time.Minute)
}

func TestCanPublishCachedAllocs(t *testing.T) {
	p := permsFor(t, pubPerms([]string{"orders.*", "events.>"}, []string{"events.secret.>"}))
	// Build the subjects at run time so they are not constants.
	buf := []byte("orders.new events.secret.x")
	allowed, denied := string(buf[:10]), string(buf[11:])
	if !p.CanPublish(allowed) || p.CanPublish(denied) {
		t.Fatal("unexpected results")
	}
	n := testing.AllocsPerRun(1000, func() {
		if !p.CanPublish(allowed) || p.CanPublish(denied) {
			t.Fatal("unexpected results")
		}
	})
	require.Equal(t, n, 0.0)
}

func TestCanDeliverCachedAllocs(t *testing.T) {
	p := permsFor(t, subPerms(nil, []string{"foo.secret", "foo.> workers"}))
	buf := []byte("foo.public workers")
	subj, queue := string(buf[:10]), string(buf[11:])
	p.CanDeliver(subj, queue)
	n := testing.AllocsPerRun(1000, func() {
		if p.CanDeliver(subj, queue) {
			t.Fatal("foo.public must not reach queue workers")
		}
	})
	require.Equal(t, n, 0.0)
}

// TestCanPublishMatchesModel checks the compiled, cached publish check
// against a direct reading of the rules over random subjects, from many
// goroutines so that caching and pruning run concurrently (use -race).
func TestCanPublishMatchesModel(t *testing.T) {
	allow := []string{"a.*", "b.>", "c", "*.x", "d.*.e"}
	deny := []string{"b.secret.>", "c", "a.y"}
	p := permsFor(t, pubPerms(allow, deny))
	model := func(s string) bool {
		ok := false
		for _, a := range allow {
			ok = ok || subject.Match(a, s)
		}
		for _, d := range deny {
			ok = ok && !subject.Match(d, s)
		}
		return ok
	}
	tokens := []string{"a", "b", "c", "d", "e", "x", "y", "secret"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 5000 {
				s := tokens[r.IntN(len(tokens))]
				for range r.IntN(4) {
					s += "." + tokens[r.IntN(len(tokens))]
				}
				n := r.IntN(300) // many distinct subjects, to exercise pruning,
				if i%2 == 0 {
					n = r.IntN(3) // and many repeats, to exercise the cache
				}
				s += fmt.Sprintf(".%d", n)
				if got, want := p.CanPublish(s), model(s); got != want {
					t.Errorf("CanPublish(%q) = %v, want %v", s, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkCanPublish(b *testing.B) {
	a, err := auth.New(auth.Config{Users: []auth.User{{Name: "u", Permissions: pubPerms(
		[]string{"orders.*", "events.>", "a", "b", "c"}, []string{"events.secret.>"})}}})
	if err != nil {
		b.Fatal(err)
	}
	id, err := a.Authenticate(auth.Credentials{User: "u"}, "")
	if err != nil {
		b.Fatal(err)
	}
	p := id.Perms
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.CanPublish("events.eu.created")
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.CanPublish("events.eu.created")
			}
		})
	})
}
