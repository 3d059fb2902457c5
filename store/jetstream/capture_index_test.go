package jetstream

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
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
	require.Equal(t, captured("cmd.a"), "")
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "BARE", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	require.Equal(t, captured("cmd.a"), "CMDS")
	require.Equal(t, captured("cmd.a.b"), "CMDS")
	require.Equal(t, captured("BARE"), "BARE") // no subjects: the stream's name
	require.Equal(t, captured("cmd"), "")

	_, err = env.js.UpdateStream(ctx, njs.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.site1.*"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	require.Equal(t, captured("cmd.a"), "")
	require.Equal(t, captured("cmd.site1.x"), "CMDS")

	env.restart() // restored streams are indexed again
	require.Equal(t, captured("cmd.site1.x"), "CMDS")
	require.Equal(t, captured("BARE"), "")

	require.NoError(t, env.js.DeleteStream(ctx, "CMDS"))
	require.Equal(t, captured("cmd.site1.x"), "")

	if n := testing.AllocsPerRun(100, func() { env.eng.CapturingStream("cmd.site1.x") }); n != 0 {
		t.Errorf("cached CapturingStream: %v allocations", n)
	}
}
