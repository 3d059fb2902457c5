package jetstream

import (
	"testing"

	njs "github.com/nats-io/nats.go/jetstream"
)

// TestCapturingStream follows the capture index through a stream's
// create, subject update, restart and delete.
func TestCapturingStream(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	captured := func(subj string) string {
		name, ok := env.eng.CapturingStream(subj)
		if ok == (name == "") {
			t.Fatalf("CapturingStream(%q) = %q, %v", subj, name, ok)
		}
		return name
	}
	mustEqual(t, captured("cmd.a"), "")
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"}, Storage: njs.FileStorage})
	mustNoErr(t, err)
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "BARE", Storage: njs.MemoryStorage})
	mustNoErr(t, err)
	mustEqual(t, captured("cmd.a"), "CMDS")
	mustEqual(t, captured("cmd.a.b"), "CMDS")
	mustEqual(t, captured("BARE"), "BARE") // no subjects: the stream's name
	mustEqual(t, captured("cmd"), "")

	_, err = env.js.UpdateStream(ctx, njs.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.site1.*"}, Storage: njs.FileStorage})
	mustNoErr(t, err)
	mustEqual(t, captured("cmd.a"), "")
	mustEqual(t, captured("cmd.site1.x"), "CMDS")

	env.restart() // restored streams are indexed again
	mustEqual(t, captured("cmd.site1.x"), "CMDS")
	mustEqual(t, captured("BARE"), "")

	mustNoErr(t, env.js.DeleteStream(ctx, "CMDS"))
	mustEqual(t, captured("cmd.site1.x"), "")

	if n := testing.AllocsPerRun(100, func() { env.eng.CapturingStream("cmd.site1.x") }); n != 0 {
		t.Errorf("cached CapturingStream: %v allocations", n)
	}
}
