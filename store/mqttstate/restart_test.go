package mqttstate

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// reopeners return, for one place on disk, a fresh Backend each call: the
// second sees what the first stored.
var reopeners = []struct {
	name string
	make func(t *testing.T) func() Backend
}{
	{"filestore", func(t *testing.T) func() Backend {
		dir := t.TempDir()
		return func() Backend { return Files{Dir: dir} }
	}},
	{"jetstream", func(t *testing.T) func() Backend {
		dir := t.TempDir()
		return func() Backend { return newEngine(t, dir) }
	}},
}

// TestRestart stores every kind of state, closes, reopens and finds it
// all, except what expired meanwhile.
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, r := range reopeners {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			next := r.make(t)
			s := open(t, next(), Options{Account: "ACC"})
			now := time.Now()
			online := sampleSession("online")
			away := sampleSession("away")
			away.DisconnectedAt = now.Add(-time.Minute).Round(0)
			expired := Session{ClientID: "expired", ExpiryInterval: 5, DisconnectedAt: now.Add(-time.Minute)}
			brief := Session{ClientID: "brief"} // connected, ends with its connection
			for _, x := range []Session{online, away, expired, brief} {
				require.NoError(t, s.PutSession(x))
			}
			var seqs []uint64
			for i := range 4 {
				seq, err := s.Enqueue("away", Msg{Topic: "q", QoS: 2, Payload: []byte{byte('a' + i)}, Header: []byte{1, 1}})
				require.NoError(t, err)
				seqs = append(seqs, seq)
			}
			sent, err := s.EnqueueSent("away", Msg{Topic: "q", QoS: 1, Payload: []byte("e"), Time: now.Round(0)}, 500)
			require.NoError(t, err)
			_, err = s.Enqueue("expired", Msg{Topic: "q", Payload: []byte("lost")})
			require.NoError(t, err)
			require.NoError(t, s.AssignPacketID("away", seqs[0], 1))
			require.NoError(t, s.AssignPacketID("away", seqs[1], 2))
			require.NoError(t, s.AssignPacketID("away", seqs[1], 2))
			require.NoError(t, s.MarkPubrec("away", seqs[1]))
			require.NoError(t, s.AssignPacketID("away", seqs[2], 3))
			require.NoError(t, s.Release("away", seqs[2]))
			require.NoError(t, s.AddIncomingQoS2("away", 77))
			require.NoError(t, s.AddIncomingQoS2("away", 78))
			require.NoError(t, s.ReleaseIncomingQoS2("away", 77))
			require.NoError(t, s.AddIncomingQoS2("expired", 1))
			require.NoError(t, s.SetRetained("r/1", Msg{QoS: 1, Payload: []byte("one")}))
			require.NoError(t, s.SetRetained("r/2", Msg{Payload: []byte("two"), Expiry: now.Add(time.Hour).Round(0)}))
			require.NoError(t, s.SetRetained("r/3", Msg{Payload: []byte("three"), Expiry: now.Add(-time.Second)}))
			require.NoError(t, s.SetRetained("r/4", Msg{Payload: []byte("four")}))
			require.NoError(t, s.SetRetained("r/4", Msg{}))
			wantQueue := queueOf(t, s, "away")
			require.NoError(t, s.Close())

			before := time.Now()
			s = open(t, next(), Options{Account: "ACC"})
			got, err := s.LoadSessions()
			require.NoError(t, err)
			require.Equal(t, len(got), 2)
			require.Equal(t, got[0].ClientID, "away")
			require.DeepEqual(t, got[0], away)
			// The session that was connected counts as disconnected at Open.
			if got[1].DisconnectedAt.Before(before) || got[1].DisconnectedAt.After(time.Now()) {
				t.Fatalf("online session's DisconnectedAt %v not stamped at Open", got[1].DisconnectedAt)
			}
			got[1].DisconnectedAt = time.Time{}
			require.DeepEqual(t, got[1], online)

			require.DeepEqual(t, queueOf(t, s, "away"), wantQueue)
			require.DeepEqual(t, wantQueue, []queueState{
				{seqs[0], "q", "a", 1, false, 1},
				{seqs[1], "q", "b", 2, true, 2},
				{seqs[3], "q", "d", 0, false, 0},
				{sent, "q", "e", 500, false, 1},
			})
			q, err := s.Queue("away", seqs[3], 0)
			require.NoError(t, err)
			require.Equal(t, q[0].Time.Equal(now), true, "receipt time")
			pids, err := s.IncomingQoS2("away")
			require.NoError(t, err)
			require.DeepEqual(t, pids, []uint16{78})
			ms, err := s.Retained("#")
			require.NoError(t, err)
			require.DeepEqual(t, ms, []Msg{
				{Topic: "r/1", QoS: 1, Retain: true, Payload: []byte("one")},
				{Topic: "r/2", Retain: true, Payload: []byte("two"), Expiry: now.Add(time.Hour).Round(0)},
			})
			// What expired is gone from the streams too.
			require.Equal(t, s.Stats(), Stats{Sessions: 2, Queued: 4, Retained: 2, RetainedBytes: 12})
			require.Equal(t, s.msgs.State().Msgs, uint64(4))
			require.Equal(t, s.qin.State().Msgs, uint64(1))
			require.Equal(t, s.rmsgs.State().Msgs, uint64(2))
			require.Equal(t, s.out.State().Msgs, uint64(2))

			// Writes go on after the reload, above the old sequences.
			seq, err := s.Enqueue("away", Msg{Topic: "q", Payload: []byte("f")})
			require.NoError(t, err)
			if seq <= sent {
				t.Fatalf("sequence %d after restart not above %d", seq, sent)
			}
			require.NoError(t, s.Release("away", seqs[0]))
			require.NoError(t, s.Close())
			s = open(t, next(), Options{Account: "ACC"})
			require.Equal(t, len(queueOf(t, s, "away")), 4)
		})
	}
}

// TestOpenRemovesLeftovers plants the records a crash can leave (a
// deleted session's queue, delivery state of a released message, QoS 2
// state without a session) and an undecodable record: Open removes the
// first kinds and skips the last.
func TestOpenRemovesLeftovers(t *testing.T) {
	t.Parallel()
	b := Files{Dir: t.TempDir()}
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	seq, err := s.Enqueue("c", Msg{Topic: "t", Payload: []byte("x")})
	require.NoError(t, err)
	tok := s.sessions["c"].token
	require.NoError(t, s.Close())

	names := StreamNames("")
	raw := func(i int, subj string, data []byte) {
		t.Helper()
		st, err := b.OpenInternalStream(names[i], store.Config{})
		require.NoError(t, err)
		_, _, err = st.Store(subj, nil, data, 0)
		require.NoError(t, err)
		require.NoError(t, st.Close())
	}
	ghost := baseToken("ghost")
	raw(1, msgsPrefix+ghost, appendMsg(nil, &Msg{Topic: "t"}))
	raw(2, outPrefix+tok+".999", appendOut(nil, 1, false, 1))
	raw(2, outPrefix+ghost+".1", appendOut(nil, 1, false, 1))
	raw(3, qinPrefix+ghost+".5", nil)
	raw(0, sessPrefix+baseToken("bad"), []byte("{not json"))
	raw(4, retPrefix+baseToken("bad"), []byte{9, 9})

	s = open(t, b, Options{})
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 1)
	require.DeepEqual(t, queueOf(t, s, "c"), []queueState{{seq, "t", "x", 0, false, 0}})
	require.Equal(t, s.msgs.State().Msgs, uint64(1))
	require.Equal(t, s.out.State().Msgs, uint64(0))
	require.Equal(t, s.qin.State().Msgs, uint64(0))
	require.Equal(t, s.sess.State().Msgs, uint64(2), "the bad session record is kept, not read")
	require.Equal(t, s.Stats().Retained, 0)
}

// TestEngineHidesStreams checks that the JetStream engine's internal
// streams stay out of its API and restore: after a restart the engine
// lists no stream and reports no failure, and the state is there.
func TestEngineHidesStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	eng := newEngine(t, dir)
	s := open(t, eng, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	require.Equal(t, len(eng.Streams(false)), 0)
	require.NoError(t, s.Close())
	require.NoError(t, eng.Close())

	eng = newEngine(t, dir)
	require.Equal(t, len(eng.Streams(false)), 0)
	require.Equal(t, len(eng.RestoreFailures()), 0)
	s = open(t, eng, Options{})
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 1)
	_, err = eng.OpenInternalStream("nodot", store.Config{})
	require.ErrorIs(t, err, store.ErrInvalidConfig)
	_, err = eng.OpenInternalStream("a.b/../c", store.Config{})
	require.ErrorIs(t, err, store.ErrInvalidConfig)
}

// TestDeleteFailsHalfway fails the disk under the queue stream while a
// session is deleted: the error is reported, and a new session of the
// same client starts empty once the disk is back, without a restart.
func TestDeleteFailsHalfway(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	fsys := vfs.Inject(vfs.NewMem(), func(op vfs.Op, name string) error {
		if failing.Load() && op.Mutates() && strings.Contains(name, ".msgs") {
			return errPowerCut
		}
		return nil
	})
	s := open(t, Files{FS: fsys, Dir: "/m"}, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	_, err := s.Enqueue("c", Msg{Topic: "t", Payload: []byte("old")})
	require.NoError(t, err)
	failing.Store(true)
	require.ErrorIs(t, s.DeleteSession("c"), errPowerCut)
	failing.Store(false)
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 0)
	require.NoError(t, s.PutSession(sampleSession("c")))
	require.DeepEqual(t, queueOf(t, s, "c"), []queueState{})
	require.Equal(t, s.msgs.State().Msgs, uint64(0))
}
