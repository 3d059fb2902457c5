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

// TestTransformPublishAllocs holds a publish into a file stream with a
// subject transform, and with a transform and a republish, to the budget
// of a plain publish (TestPublishAllocs): the transformed subject and the
// republish destination are built in reused buffers and named without
// allocating, the republish headers in a pooled buffer.
func TestTransformPublishAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  njs.StreamConfig
	}{
		{"transform", njs.StreamConfig{Name: "B", Subjects: []string{"b"},
			SubjectTransform: &njs.SubjectTransformConfig{Source: "b", Destination: "t.{{partition(4)}}.b"}}},
		{"transform+republish", njs.StreamConfig{Name: "B", Subjects: []string{"b"},
			SubjectTransform: &njs.SubjectTransformConfig{Source: "b", Destination: "t.{{partition(4)}}.b"},
			RePublish:        &njs.RePublish{Source: "t.*.b", Destination: "rp.{{wildcard(1)}}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, Config{SyncInterval: 100 * time.Millisecond})
			_, err := env.js.CreateStream(testCtx(t), tc.cfg)
			require.NoError(t, err)
			perMsg := publishAllocs(t, env.srv.Addr().String())
			t.Logf("%s: %.4f allocations per publish", tc.name, perMsg)
			if perMsg > 1.1 {
				t.Fatalf("%s publish allocates %.4f times, budget 1.1", tc.name, perMsg)
			}
			st, err := env.js.Stream(testCtx(t), "B")
			require.NoError(t, err)
			m, err := st.GetLastMsgForSubject(testCtx(t), "t.*.b")
			require.NoError(t, err)
			if m.Subject != "t.1.b" {
				t.Fatalf("stored under %q, want t.1.b", m.Subject)
			}
		})
	}
}
