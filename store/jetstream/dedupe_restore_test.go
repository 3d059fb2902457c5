package jetstream

import (
	"fmt"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/filestore"
)

// TestDedupeRestoredAmongPlainMessages restarts on a file stream where a
// few messages with a msg id sit among many without a header, over blocks
// the index cache evicted: every id is in the duplicate window again (a
// publish of it is answered duplicate), and a new id is stored.
func TestDedupeRestoredAmongPlainMessages(t *testing.T) {
	env := newTestEnv(t, Config{SyncInterval: time.Second})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	st := env.eng.streams["S"].store
	payload := make([]byte, 128)
	const n = 120_000
	ids := map[int]string{}
	for i := range n {
		var hdr []byte
		if i%25_000 == 7 || i == n-2 {
			ids[i] = fmt.Sprintf("id-%d", i)
			hdr = fmt.Appendf(nil, "NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n", ids[i])
		}
		_, _, err := st.Store("s.a", hdr, payload, 0)
		require.NoError(t, err)
	}
	env.restart()

	fs := env.eng.streams["S"].store.(*filestore.Stream)
	if c := fs.IndexCache(); c.Evicted == 0 {
		t.Fatalf("no block evicted: %+v", c)
	}
	for i, id := range ids {
		ack, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID(id))
		require.NoError(t, err)
		require.Equal(t, ack.Duplicate, true, id)
		require.Equal(t, ack.Sequence, uint64(i+1), id)
	}
	ack, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("new"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, false)
	require.Equal(t, ack.Sequence, uint64(n+1))
}

// TestDedupeRestoreSkipsOlderThanWindow restarts on a file stream whose
// duplicate window has passed for its first msg id but not its second:
// only the second is a duplicate after the restart.
func TestDedupeRestoreSkipsOlderThanWindow(t *testing.T) {
	env := newTestEnv(t, Config{SyncInterval: time.Second})
	ctx := testCtx(t)
	const window = time.Second
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, Duplicates: window})
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("old"))
	require.NoError(t, err)
	publishN(t, env.js, "s.a", 20)
	time.Sleep(window + 100*time.Millisecond)
	publishN(t, env.js, "s.a", 20)
	recent, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("recent"))
	require.NoError(t, err)
	env.restart()

	ack, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("recent"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, true)
	require.Equal(t, ack.Sequence, recent.Sequence)
	ack, err = env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("old"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, false)
}
