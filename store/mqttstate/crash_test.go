package mqttstate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/vfs"
)

var errPowerCut = errors.New("power cut")

// crashItem is one queued message in the crash model.
type crashItem struct {
	Payload    string
	PacketID   uint16
	Pubrec     bool
	Deliveries int
}

// crashModel is one client's state as its acknowledged calls left it.
type crashModel struct {
	Queue []crashItem
	QoS2  []uint16
	Subs  int
}

func (m crashModel) clone() crashModel {
	m.Queue, m.QoS2 = slices.Clone(m.Queue), slices.Clone(m.QoS2)
	return m
}

// crashOp is one call of the storm, applied to the model once acked.
type crashOp struct {
	kind    string
	payload string
	index   int
	pid     uint16
}

func (m crashModel) apply(op crashOp) crashModel {
	m = m.clone()
	switch op.kind {
	case "enqueue":
		it := crashItem{Payload: op.payload, PacketID: op.pid}
		if op.pid != 0 {
			it.Deliveries = 1
		}
		m.Queue = append(m.Queue, it)
	case "assign":
		m.Queue[op.index].PacketID = op.pid
		m.Queue[op.index].Deliveries++
	case "pubrec":
		m.Queue[op.index].Pubrec = true
	case "release":
		m.Queue = slices.Delete(m.Queue, op.index, op.index+1)
	case "qos2":
		if !slices.Contains(m.QoS2, op.pid) {
			m.QoS2 = append(m.QoS2, op.pid)
			slices.Sort(m.QoS2)
		}
	case "qos2rel":
		m.QoS2 = slices.DeleteFunc(m.QoS2, func(p uint16) bool { return p == op.pid })
	case "put":
		m.Subs = int(op.pid)
	}
	return m
}

// TestCrashStorm cuts the power (drops every write not yet fsynced) while
// four clients and a retained-message writer run random calls against a
// file backend in sync-always mode, then opens what is left: each
// client's state is what its acknowledged calls made it, plus perhaps the
// one call in flight at the cut, and the queues keep their order.
func TestCrashStorm(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			crashStorm(t, seed)
		})
	}
}

func crashStorm(t *testing.T, seed uint64) {
	mem := vfs.NewStrictMem()
	var cut atomic.Bool
	crashable := vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if cut.Load() && op.Mutates() {
			return errPowerCut
		}
		return nil
	})
	s, err := Open(Options{Backend: Files{FS: crashable, Dir: "/mqtt"}, SweepInterval: -1})
	require.NoError(t, err)

	const clients = 4
	type result struct {
		acked   crashModel
		pending crashOp
		hasPend bool
		seqs    []uint64 // of the acked queue, in order
	}
	results := make([]result, clients)
	var retAcked, retPending sync.Map // topic → payload
	var ops atomic.Int64
	enough := make(chan struct{})
	var enoughOnce sync.Once
	var wg sync.WaitGroup
	for c := range clients {
		id := fmt.Sprintf("client.%d/ü", c)
		subs := func(n int) Session {
			x := sampleSession(id)
			x.Subs = x.Subs[:n%3]
			return x
		}
		require.NoError(t, s.PutSession(subs(0)))
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			r := &results[c]
			for i := 0; ; i++ {
				var op crashOp
				var err error
				var seq uint64
				q := r.acked.Queue
				switch k := rng.IntN(10); {
				case k < 4 || len(q) == 0:
					op = crashOp{kind: "enqueue", payload: fmt.Sprint(c, "-", i)}
					if rng.IntN(2) == 0 {
						op.pid = uint16(1 + rng.IntN(100)) // sent at once
					}
				case k < 6:
					op = crashOp{kind: "assign", index: rng.IntN(len(q)), pid: uint16(1 + rng.IntN(100))}
				case k == 6:
					op = crashOp{kind: "pubrec", index: rng.IntN(len(q))}
				case k == 7:
					op = crashOp{kind: "release", index: rng.IntN(len(q))}
				case k == 8:
					op = crashOp{kind: "qos2", pid: uint16(rng.IntN(8))}
					if rng.IntN(2) == 0 {
						op.kind = "qos2rel"
					}
				default:
					op = crashOp{kind: "put", pid: uint16(rng.IntN(3))}
				}
				r.pending, r.hasPend = op, true
				switch op.kind {
				case "enqueue":
					seq, err = s.EnqueueSent(id, Msg{Topic: "t", QoS: 1, Payload: []byte(op.payload)}, op.pid)
				case "assign":
					err = s.AssignPacketID(id, r.seqs[op.index], op.pid)
				case "pubrec":
					err = s.MarkPubrec(id, r.seqs[op.index])
				case "release":
					err = s.Release(id, r.seqs[op.index])
				case "qos2":
					err = s.AddIncomingQoS2(id, op.pid)
				case "qos2rel":
					err = s.ReleaseIncomingQoS2(id, op.pid)
				case "put":
					err = s.PutSession(subs(int(op.pid)))
				}
				if err != nil {
					return
				}
				if cut.Load() {
					return // acked after the cut: it stays the pending call
				}
				r.acked = r.acked.apply(op)
				switch op.kind {
				case "enqueue":
					r.seqs = append(r.seqs, seq)
				case "release":
					r.seqs = slices.Delete(r.seqs, op.index, op.index+1)
				}
				r.hasPend = false
				if ops.Add(1) >= 400 {
					enoughOnce.Do(func() { close(enough) })
				}
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		for i := 0; ; i++ {
			topic, payload := fmt.Sprint("r/", rng.IntN(5)), fmt.Sprint("v", i)
			if rng.IntN(4) == 0 {
				payload = ""
			}
			retPending.Store(topic, payload)
			if err := s.SetRetained(topic, Msg{Payload: []byte(payload)}); err != nil || cut.Load() {
				return
			}
			retAcked.Store(topic, payload)
			retPending.Delete(topic)
		}
	})
	<-enough
	cut.Store(true)
	mem.ResetToSyncedState()
	wg.Wait()
	_ = s.Close() // fails to write: the power is off

	s = open(t, Files{FS: mem, Dir: "/mqtt"}, Options{})
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), clients)
	for c := range clients {
		id := fmt.Sprintf("client.%d/ü", c)
		r := results[c]
		q, err := s.Queue(id, 0, 0)
		require.NoError(t, err)
		var have crashModel
		var seqs []uint64
		for _, m := range q {
			have.Queue = append(have.Queue, crashItem{string(m.Payload), m.PacketID, m.Pubrec, m.Deliveries})
			seqs = append(seqs, m.Seq)
		}
		have.QoS2, err = s.IncomingQoS2(id)
		require.NoError(t, err)
		if len(have.QoS2) == 0 {
			have.QoS2 = nil
		}
		for _, x := range got {
			if x.ClientID == id {
				have.Subs = len(x.Subs)
			}
		}
		want := []crashModel{r.acked}
		wantSeqs := [][]uint64{r.seqs}
		if r.hasPend {
			want = append(want, r.acked.apply(r.pending))
			switch r.pending.kind {
			case "release":
				wantSeqs = append(wantSeqs, slices.Delete(slices.Clone(r.seqs), r.pending.index, r.pending.index+1))
			case "enqueue":
				if len(seqs) > 0 {
					wantSeqs = append(wantSeqs, append(slices.Clone(r.seqs), seqs[len(seqs)-1]))
				}
			default:
				wantSeqs = append(wantSeqs, r.seqs)
			}
		}
		match := -1
		for i, w := range want {
			if len(w.QoS2) == 0 {
				w.QoS2 = nil
			}
			if fmt.Sprint(w) == fmt.Sprint(have) {
				match = i
			}
		}
		if match < 0 {
			t.Fatalf("client %d after the crash:\n have %+v\n want %+v", c, have, want)
		}
		// Acked sequences are kept, in order.
		if match < len(wantSeqs) {
			if !slices.Equal(seqs, wantSeqs[match]) {
				t.Fatalf("client %d: sequences %v, want %v", c, seqs, wantSeqs[match])
			}
		}
	}
	retAcked.Range(func(k, v any) bool {
		topic, payload := k.(string), v.(string)
		ms, err := s.Retained(topic)
		require.NoError(t, err)
		have := ""
		if len(ms) == 1 {
			have = string(ms[0].Payload)
		}
		if p, ok := retPending.Load(topic); ok && have == p.(string) {
			return true
		}
		require.Equal(t, have, payload, topic)
		return true
	})
}
