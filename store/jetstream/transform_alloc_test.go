//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package jetstream

import (
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// transformAllocsConfig stores "b" as "t.1.b" (FNV-1a of "b" mod 4).
var transformAllocsConfig = njs.StreamConfig{Name: "B", Subjects: []string{"b"},
	SubjectTransform: &njs.SubjectTransformConfig{Source: "b", Destination: "t.{{partition(4)}}.b"}}

// TestTransformPublishAllocs holds a publish into a file stream with a
// subject transform to the budget of a plain publish (TestPublishAllocs),
// end to end: the transformed subject is built in a reused buffer and
// named without allocating.
func TestTransformPublishAllocs(t *testing.T) {
	env := newTestEnv(t, Config{SyncInterval: 100 * time.Millisecond})
	_, err := env.js.CreateStream(testCtx(t), transformAllocsConfig)
	require.NoError(t, err)
	perMsg := publishAllocs(t, env.srv.Addr().String())
	t.Logf("%.4f allocations per publish", perMsg)
	if perMsg > 1.1 {
		t.Fatalf("publish allocates %.4f times, budget 1.1", perMsg)
	}
	st, err := env.js.Stream(testCtx(t), "B")
	require.NoError(t, err)
	m, err := st.GetLastMsgForSubject(testCtx(t), "t.*.b")
	require.NoError(t, err)
	if m.Subject != "t.1.b" {
		t.Fatalf("stored under %q, want t.1.b", m.Subject)
	}
}

// TestTransformRepublishStoreAllocs: the engine's publish step for a file
// stream with a subject transform and a republish (store, PubAck into a
// reused buffer, republish header built in the stream's cached buffer and
// handed to the broker) allocates nothing. The end-to-end count of
// TestTransformPublishAllocs is too noisy for an exact zero.
func TestTransformRepublishStoreAllocs(t *testing.T) {
	env := newTestEnv(t, Config{SyncInterval: 100 * time.Millisecond})
	cfg := transformAllocsConfig
	cfg.RePublish = &njs.RePublish{Source: "t.*.b", Destination: "rp.{{wildcard(1)}}"}
	_, err := env.js.CreateStream(testCtx(t), cfg)
	require.NoError(t, err)
	s := env.eng.lookup("B")
	data := make([]byte, 128)
	buf := make([]byte, 0, 256)
	// Measured without a subscriber: a client's outbound buffers are the
	// connection's cost, not the publish step's.
	n := testing.AllocsPerRun(5000, func() {
		s.processPublish(buf[:0], "b", nil, data)
	})
	if n != 0 {
		t.Fatalf("publish step with transform and republish allocates %.4f times", n)
	}
	sub, err := env.nc.SubscribeSync("rp.*")
	require.NoError(t, err)
	require.NoError(t, env.nc.Flush())
	s.processPublish(buf[:0], "b", nil, data)
	m, err := sub.NextMsg(5 * time.Second)
	require.NoError(t, err)
	if m.Subject != "rp.1" || m.Header.Get("Nats-Subject") != "t.1.b" {
		t.Fatalf("republished %s %v", m.Subject, m.Header)
	}
}
