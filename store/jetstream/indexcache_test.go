package jetstream

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/filestore"
	njs "github.com/nats-io/nats.go/jetstream"
)

// TestSetIndexCaches sets the index cache of the file streams (what the
// memory guardrails do under pressure) and leaves memory streams alone;
// the file stream still answers reads of messages in evicted blocks.
func TestSetIndexCaches(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "F", Subjects: []string{"f.>"}, Storage: njs.FileStorage, MaxMsgSize: 1 << 20})
	require.NoError(t, err)
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "M", Subjects: []string{"m.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "f.a", 50)

	require.Equal(t, env.eng.SetIndexCaches(-1), 1)
	s := env.eng.streams["F"]
	fs, ok := s.store.(*filestore.Stream)
	if !ok {
		t.Fatalf("stream F's store is %T, want *filestore.Stream", s.store)
	}
	require.Equal(t, fs.IndexCache().Limit, int64(0))
	f, err := env.js.Stream(ctx, "F")
	require.NoError(t, err)
	m, err := f.GetMsg(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, string(m.Data), fmt.Sprint(6))

	require.Equal(t, env.eng.SetIndexCaches(0), 1)
	require.Equal(t, fs.IndexCache().Limit, int64(filestore.DefaultIndexCache))
}
