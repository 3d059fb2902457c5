package outbox

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// batchedTests makes the dedupHub of the tests take fast batches and the
// outboxes they open forward in them (Config.Batch); the Batched tests
// below set it around the tests they run again.
var batchedTests bool

// batchPublishes counts the fast batch publishes dedupHubs took.
var batchPublishes atomic.Int64

// runBatched runs test with fast batches, and fails unless some were sent.
func runBatched(t *testing.T, test func(*testing.T)) {
	batchedTests = true
	defer func() { batchedTests = false }()
	before := batchPublishes.Load()
	test(t)
	if n := batchPublishes.Load() - before; n == 0 {
		t.Fatal("no fast batch publish reached the hub")
	} else {
		t.Logf("%d fast batch publishes", n)
	}
}

// TestPowerCutKeepsAcceptedMessagesBatched is
// TestPowerCutKeepsAcceptedMessages with the forwarder sending fast
// batches to a hub that takes them.
func TestPowerCutKeepsAcceptedMessagesBatched(t *testing.T) {
	runBatched(t, TestPowerCutKeepsAcceptedMessages)
}

// TestDeferredSyncForwardsOnlySyncedBatched is
// TestDeferredSyncForwardsOnlySynced with fast batches.
func TestDeferredSyncForwardsOnlySyncedBatched(t *testing.T) {
	runBatched(t, TestDeferredSyncForwardsOnlySynced)
}

// hubBatch is a fast batch the dedupHub has open.
type hubBatch struct {
	lseq uint64 // the last batch sequence taken
	flow uint64 // a flow ack every flow messages
}

// publishBatch takes a fast batch publish as nats-server v2.15.2 does in
// gap-fail mode: the first message of a batch is answered with a flow ack
// of sequence 0, every flow-th with one of its sequence, the commit (with
// a message, or an end-of-batch without one, not stored) with a PubAck
// counting the batch; a message out of sequence or of an unknown batch is
// refused and not stored. h.mu is not held.
func (h *dedupHub) publishBatch(subject, reply string, hdr, data []byte) error {
	f := strings.Split(strings.TrimSuffix(reply, batchSuffix), ".")
	if len(f) < 6 {
		return fmt.Errorf("dedupHub: batch reply %q", reply)
	}
	id, flowText, seqText, op := f[len(f)-5], f[len(f)-4], f[len(f)-2], f[len(f)-1]
	batchPublishes.Add(1)
	flow, _ := strconv.ParseUint(flowText, 10, 64)
	bseq, _ := strconv.ParseUint(seqText, 10, 64)
	var answers []string
	h.mu.Lock()
	b := h.batches[id]
	switch {
	case b == nil && bseq == 1 && op != "3":
		b = &hubBatch{flow: max(1, flow)}
		h.batches[id] = b
		if op != "2" {
			answers = append(answers, `{"type":"ack","seq":0,"msgs":`+flowText+`}`)
		}
	case b == nil:
		answers = append(answers, `{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"S","seq":0}`)
	case bseq != b.lseq+1:
		answers = append(answers, fmt.Sprintf(`{"type":"gap","last_seq":%d,"seq":%d}`, b.lseq+1, bseq),
			fmt.Sprintf(`{"stream":"S","seq":%d,"batch":%q,"count":%d}`, len(h.stored), id, b.lseq))
		delete(h.batches, id)
		b = nil
	}
	if b != nil {
		if op != "3" {
			msgID := ""
			for _, line := range strings.Split(string(hdr), "\r\n") {
				if v, ok := strings.CutPrefix(line, HeaderMsgID+": "); ok {
					msgID = v
				}
			}
			if !h.ids[msgID] {
				h.ids[msgID] = true
				h.stored = append(h.stored, sent{subject: subject, data: append([]byte(nil), data...)})
			}
			b.lseq = bseq
		}
		switch {
		case op == "2" || op == "3":
			answers = append(answers, fmt.Sprintf(`{"stream":"S","seq":%d,"batch":%q,"count":%d}`, len(h.stored), id, b.lseq))
			delete(h.batches, id)
		case b.lseq%b.flow == 0:
			answers = append(answers, fmt.Sprintf(`{"type":"ack","seq":%d,"msgs":%d}`, b.lseq, b.flow))
		}
	}
	ob := h.ob
	h.mu.Unlock()
	h.changes.Notify()
	for _, a := range answers {
		ob.HandleReply(reply, []byte(a))
	}
	return nil
}
