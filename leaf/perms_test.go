package leaf

import (
	"testing"

	"github.com/leafbox/leafbox/core/proto"
)

func TestPerms(t *testing.T) {
	cfg := &Config{Domain: "edge", JetStream: true, DenyImports: []string{"noisy.>"}, DenyExports: []string{"secret.*"}}
	p := newPerms(cfg, &proto.SubjectPermission{Allow: []string{"sensors.>", "_INBOX.>", "cmd.*"}},
		&proto.SubjectPermission{Deny: []string{"admin.>"}})
	for _, tc := range []struct {
		what string
		fn   func(string) bool
		subj string
		want bool
	}{
		{"sub", p.canSubscribe, "sensors.temp", true},
		{"sub", p.canSubscribe, "other", false},
		{"sub", p.canSubscribe, ">", true}, // overlaps an allow entry; filtered per message
		{"sub", p.canSubscribe, "cmd.>", true},
		{"sub", p.canSubscribe, "$LDS.abc", true},
		{"sub", p.canSubscribe, "$KV.b.>", false},
		{"recv", p.canReceive, "sensors.x", true},
		{"recv", p.canReceive, "other", false},
		{"recv", p.canReceive, "$JS.ACK.s.c.1.1.1.1.1", true},
		{"pub", p.canPublish, "anything", true},
		{"pub", p.canPublish, "admin.reboot", false},
		{"pub", p.canPublish, "secret.x", false},
		{"pub", p.canPublish, "$JS.API.INFO", false},
		{"pub", p.canPublish, "$KV.b.k", false},
		{"pub", p.canPublish, "$OBJ.b", false},
		{"pub", p.canPublish, "$JS.edge.API.INFO", false},
		{"pub", p.canPublish, "$JS.hub.API.INFO", true},
		{"pattern", p.canPublishPattern, "secret.x", false},
		{"pattern", p.canPublishPattern, "secret.>", true}, // secret.* denies secret.x, not secret.x.y
		{"pattern", p.canPublishPattern, "secret.*", false},
		{"pattern", p.canPublishPattern, "$JS.API.>", false},
		{"pattern", p.canPublishPattern, "$JS.API.STREAM.*", false},
		{"pattern", p.canPublishPattern, "$JS.edge.API.>", false},
		{"pattern", p.canPublishPattern, "$JS.*.API.>", true},
		{"pattern", p.canPublishPattern, ">", true},
	} {
		if got := tc.fn(tc.subj); got != tc.want {
			t.Errorf("%s %q = %v, want %v", tc.what, tc.subj, got, tc.want)
		}
	}
	open := newPerms(&Config{}, nil, nil)
	if !open.canSubscribe(">") || open.canSubscribe("$KV.>") || !open.canReceive("x") || open.canReceive("$KV.a.b") {
		t.Error("default permissions")
	}
	none := newPerms(&Config{}, &proto.SubjectPermission{Allow: []string{"foo bar"}}, nil)
	if none.canSubscribe("foo") {
		t.Error("a queue-only allow list allowed a plain subject")
	}
}

func TestJSAckDeliverIndex(t *testing.T) {
	for reply, want := range map[string]int{
		"$JS.ACK.S.C.1.2.3.4.5@orders.1":   21,
		"$JS.ACK.S.C.1.2.3.4@orders.1":     -1, // too few tokens before '@'
		"_INBOX.a.b.c.d.e.f.g.h@x":         -1,
		"$JS.ACK.S.C.1.2.3.4.5":            -1,
		"$JS.ACK.dom.hash.S.C.1.2.3.4.5@x": 30,
	} {
		if got := jsAckDeliverIndex([]byte(reply)); got != want {
			t.Errorf("jsAckDeliverIndex(%q) = %d, want %d", reply, got, want)
		}
	}
}

// TestPermsPerMessageAllocs: the per-message checks of a link (a message
// received from the hub, one sent to it) allocate nothing once a subject
// has been seen.
func TestPermsPerMessageAllocs(t *testing.T) {
	p := newPerms(&Config{DenyExports: []string{"secret.*"}}, &proto.SubjectPermission{Allow: []string{"sensors.>"}}, nil)
	recv, send := "sensors.temp", "telemetry.temp"
	if !p.canReceive(recv) || !p.canPublish(send) {
		t.Fatal("refused")
	}
	if n := testing.AllocsPerRun(200, func() {
		_ = p.canReceive(recv)
		_ = p.canPublish(send)
		_ = p.canPublish("secret.x")
	}); n != 0 {
		t.Fatalf("the per-message checks allocate %v times", n)
	}
}
