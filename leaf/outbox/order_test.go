package outbox

import (
	"io"
	"log/slog"
	"testing"
)

// TestCheckOrderCountsResendsStoredBehindLaterMessages feeds checkOrder
// the PubAcks of a per-message round across a stream leader's loss: 1-3
// stored at hub sequences 10-12, 4 and 5 lost with the leader, 6 and 7
// stored by the next one at 13 and 14, then 4 and 5 resent and stored at
// 15 and 16. Both resends are counted; in-order acks, a late duplicate
// PubAck pointing at where the first copy went in order, and a stream
// recreated (sequences start again) are not.
func TestCheckOrderCountsResendsStoredBehindLaterMessages(t *testing.T) {
	o := &Outbox{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	acks := []struct {
		stream   string
		seq, hub uint64
		want     uint64 // Reordered after it
	}{
		{"SITE", 1, 10, 0}, {"SITE", 2, 11, 0}, {"SITE", 3, 12, 0},
		{"SITE", 6, 13, 0}, {"SITE", 7, 14, 0},
		{"SITE", 4, 15, 1}, {"SITE", 5, 16, 2},
		{"SITE", 8, 17, 2},
		{"SITE", 9, 19, 2}, {"SITE", 8, 18, 2}, // 8's duplicate PubAck: stored before 9
		{"SITE", 10, 1, 2}, {"SITE", 11, 2, 2}, // the hub stream recreated
		{"OTHER", 3, 50, 2}, // another stream's order is its own
	}
	for _, a := range acks {
		o.checkOrder(a.stream, a.seq, a.hub)
		if got := o.reordered.Load(); got != a.want {
			t.Fatalf("after the PubAck of %d at %s %d: reordered %d, want %d", a.seq, a.stream, a.hub, got, a.want)
		}
	}
}
