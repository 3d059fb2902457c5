package mqtt

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// TestRemoveQueued removes from the head (the common, in-order ack), the
// middle and the end, and ignores a message not queued.
func TestRemoveQueued(t *testing.T) {
	msgs := []*outMsg{{}, {}, {}, {}}
	q := append([]*outMsg(nil), msgs...)
	q = removeQueued(q, msgs[0])
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[2], msgs[3]})
	q = removeQueued(q, msgs[2])
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[3]})
	q = removeQueued(q, msgs[0])
	require.DeepEqual(t, q, []*outMsg{msgs[1], msgs[3]})
	q = removeQueued(q, msgs[3])
	q = removeQueued(q, msgs[1])
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
		q = removeQueued(q, q[0])
	}
}
