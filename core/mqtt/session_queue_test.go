package mqtt

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// TestRemoveQueued removes from the head (the common, in-order ack), the
// middle and the end, reporting where each was, and ignores a message not
// queued.
func TestRemoveQueued(t *testing.T) {
	msgs := []*outMsg{{}, {}, {}, {}}
	q := append([]*outMsg(nil), msgs...)
	remove := func(m *outMsg, at int) {
		t.Helper()
		var k int
		q, k = removeQueued(q, m)
		require.Equal(t, k, at)
	}
	remove(msgs[0], 0)
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[2], msgs[3]})
	remove(msgs[2], 1)
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[3]})
	remove(msgs[0], -1)
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[3]})
	remove(msgs[3], 1)
	remove(msgs[1], 0)
	require.Equal(t, len(q), 0)
}

// BenchmarkAckDeepQueue acks the head of a deep queue, as a subscriber
// behind its publishers does: constant time per ack, not the queue's
// length.
func BenchmarkAckDeepQueue(b *testing.B) {
	q := make([]*outMsg, 0, b.N+1)
	for range b.N + 1 {
		q = append(q, &outMsg{})
	}
	b.ResetTimer()
	for range b.N {
		q, _ = removeQueued(q, q[0])
	}
}
