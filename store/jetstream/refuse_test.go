package jetstream

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	njs "github.com/nats-io/nats.go/jetstream"
)

// TestRefusePublish: while Config.RefusePublish says so, a publish is
// answered 503/10023 "insufficient resources" and nothing is stored;
// afterwards publishes are stored again.
func TestRefusePublish(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	env := newTestEnv(t, Config{RefusePublish: refuse.Load})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	refuse.Store(true)
	_, err = env.js.Publish(ctx, "S", []byte("x"))
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10023 || apiErr.Code != 503 || apiErr.Description != "insufficient resources" {
		t.Fatalf("publish under pressure: %v, want 503/10023 insufficient resources", err)
	}
	refuse.Store(false)
	_, err = env.js.Publish(ctx, "S", []byte("y"))
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, info.State.Msgs, uint64(1))
}
