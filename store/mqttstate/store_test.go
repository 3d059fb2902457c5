package mqttstate

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/vfs"
)

// conformance is the table every backend runs.
var conformance = []struct {
	name string
	run  func(t *testing.T, b Backend)
}{
	{"Sessions", testSessions},
	{"ClientIDs", testClientIDs},
	{"Queue", testQueue},
	{"QueueLimit", testQueueLimit},
	{"MessageExpiry", testMessageExpiry},
	{"DeleteDropsState", testDeleteDropsState},
	{"IncomingQoS2", testIncomingQoS2},
	{"UnknownSession", testUnknownSession},
	{"SessionExpiry", testSessionExpiry},
	{"MaxSessions", testMaxSessions},
	{"Retained", testRetained},
	{"RetainedLimits", testRetainedLimits},
	{"RetainedExpiry", testRetainedExpiry},
	{"Accounts", testAccounts},
	{"Closed", testClosed},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.run(t, b.make(t)) })
			}
		})
	}
}

func sampleSession(id string) Session {
	return Session{
		ClientID: id, Version: 5, ExpiryInterval: 3600, Account: "ACME", User: "dev-" + id,
		Subs: []Sub{
			{Filter: "a/+/c", QoS: 1, NoLocal: true, SubID: 7},
			{Filter: "sensors/#", QoS: 2, RetainAsPublished: true, RetainHandling: 2, Share: "g1"},
		},
	}
}

func testSessions(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 0)

	a, c := sampleSession("a"), sampleSession("c")
	c.Version, c.Subs = 4, nil
	require.NoError(t, s.PutSession(c))
	require.NoError(t, s.PutSession(a))
	got, err = s.LoadSessions()
	require.NoError(t, err)
	require.DeepEqual(t, got, []Session{a, c})

	// Replace keeps one session; the caller's slice is not kept.
	a.Subs = a.Subs[:1]
	require.NoError(t, s.PutSession(a))
	a.Subs[0].Filter = "changed"
	got, _ = s.LoadSessions()
	require.Equal(t, len(got), 2)
	require.DeepEqual(t, got[0].Subs, []Sub{{Filter: "a/+/c", QoS: 1, NoLocal: true, SubID: 7}})

	require.NoError(t, s.DeleteSession("a"))
	require.NoError(t, s.DeleteSession("a"), "deleting again")
	got, _ = s.LoadSessions()
	require.DeepEqual(t, got, []Session{c})
	require.Equal(t, s.Stats().Sessions, 1)
}

func testClientIDs(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	ids := []string{"", "a.b", "*", ">", "a b", "$SYS", "日本語/ü", "x\ty", strings.Repeat("long.", 200), strings.Repeat("é", 100)}
	for i, id := range ids {
		sess := sampleSession(id)
		sess.ExpiryInterval = uint32(i)
		require.NoError(t, s.PutSession(sess), id)
		_, err := s.Enqueue(id, Msg{Topic: "t", QoS: 1, Payload: []byte(id + "!")})
		require.NoError(t, err, id)
		require.NoError(t, s.AddIncomingQoS2(id, uint16(i+1)))
	}
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), len(ids))
	for _, id := range ids {
		q := queueOf(t, s, id)
		require.Equal(t, len(q), 1, id)
		require.Equal(t, q[0].Payload, id+"!")
	}
	require.ErrorIs(t, s.PutSession(Session{ClientID: "\xff"}), ErrInvalidClientID)
	require.ErrorIs(t, s.PutSession(Session{ClientID: strings.Repeat("x", 65536)}), ErrInvalidClientID)
}

func testQueue(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	require.NoError(t, s.PutSession(sampleSession("d")))
	var seqs []uint64
	received := time.Unix(1700000000, 123)
	for i := range 5 {
		m := Msg{Topic: fmt.Sprint("t/", i), QoS: byte(1 + i%2), Retain: i == 3, Header: []byte{0x01, 0x01}, Payload: []byte(fmt.Sprint("m", i)),
			Time: received}
		seq, err := s.Enqueue("c", m)
		require.NoError(t, err)
		seqs = append(seqs, seq)
		_, err = s.Enqueue("d", m)
		require.NoError(t, err)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("sequences not ascending: %v", seqs)
		}
	}
	q, err := s.Queue("c", 0, 0)
	require.NoError(t, err)
	require.Equal(t, len(q), 5)
	require.DeepEqual(t, q[3].Msg, Msg{Topic: "t/3", QoS: 2, Retain: true, Header: []byte{1, 1}, Payload: []byte("m3"), Time: received})

	q, err = s.Queue("c", seqs[1], 2)
	require.NoError(t, err)
	require.Equal(t, len(q), 2)
	require.Equal(t, q[0].Seq, seqs[2])
	require.Equal(t, q[1].Seq, seqs[3])

	require.NoError(t, s.AssignPacketID("c", seqs[0], 10))
	require.NoError(t, s.AssignPacketID("c", seqs[0], 10))
	require.NoError(t, s.AssignPacketID("c", seqs[1], 11))
	require.NoError(t, s.MarkPubrec("c", seqs[1]))
	require.NoError(t, s.Release("c", seqs[2]))
	require.ErrorIs(t, s.Release("c", seqs[2]), ErrUnknownMessage)
	require.ErrorIs(t, s.AssignPacketID("c", seqs[2], 1), ErrUnknownMessage)
	require.ErrorIs(t, s.MarkPubrec("c", 999999), ErrUnknownMessage)

	want := []queueState{
		{seqs[0], "t/0", "m0", 10, false, 2},
		{seqs[1], "t/1", "m1", 11, true, 1},
		{seqs[3], "t/3", "m3", 0, false, 0},
		{seqs[4], "t/4", "m4", 0, false, 0},
	}
	require.DeepEqual(t, queueOf(t, s, "c"), want)
	// The other session's queue is its own.
	require.Equal(t, len(queueOf(t, s, "d")), 5)
	require.ErrorIs(t, s.Release("d", seqs[0]), ErrUnknownMessage, "c's sequence in d's queue")
	require.Equal(t, s.Stats().Queued, 9)
	sent, err := s.EnqueueSent("c", Msg{Topic: "sent", QoS: 1, Payload: []byte("s")}, 9)
	require.NoError(t, err)
	require.NoError(t, s.AssignPacketID("c", sent, 9)) // a resend
	q, err = s.Queue("c", seqs[4], 0)
	require.NoError(t, err)
	require.Equal(t, len(q), 1)
	require.Equal(t, [3]any{q[0].Topic, q[0].PacketID, q[0].Deliveries}, [3]any{"sent", uint16(9), 2})
	_, err = s.Enqueue("c", Msg{Topic: "t", QoS: 3})
	require.ErrorIs(t, err, ErrInvalidQoS)
	require.ErrorIs(t, s.SetRetained("t", Msg{QoS: 3, Payload: []byte("x")}), ErrInvalidQoS)
}

func testQueueLimit(t *testing.T, b Backend) {
	s := open(t, b, Options{MaxQueued: 2})
	require.NoError(t, s.PutSession(sampleSession("c")))
	s1, err := s.Enqueue("c", Msg{Topic: "t", Payload: []byte("1")})
	require.NoError(t, err)
	_, err = s.Enqueue("c", Msg{Topic: "t", Payload: []byte("2")})
	require.NoError(t, err)
	_, err = s.Enqueue("c", Msg{Topic: "t", Payload: []byte("3")})
	require.ErrorIs(t, err, ErrQueueFull)
	require.ErrorContains(t, err, `"c" holds 2 messages`)
	require.NoError(t, s.Release("c", s1))
	_, err = s.Enqueue("c", Msg{Topic: "t", Payload: []byte("3")})
	require.NoError(t, err)
	require.Equal(t, len(queueOf(t, s, "c")), 2)
}

func testMessageExpiry(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	sent, err := s.Enqueue("c", Msg{Topic: "sent", Payload: []byte("x"), Expiry: past})
	require.NoError(t, err)
	require.NoError(t, s.AssignPacketID("c", sent, 1))
	_, err = s.Enqueue("c", Msg{Topic: "old", Payload: []byte("x"), Expiry: past})
	require.NoError(t, err)
	_, err = s.Enqueue("c", Msg{Topic: "new", Payload: []byte("x"), Expiry: future})
	require.NoError(t, err)
	topics := func() []string {
		var out []string
		for _, m := range queueOf(t, s, "c") {
			out = append(out, m.Topic)
		}
		return out
	}
	// An expired message already in flight stays; one not sent is skipped.
	require.DeepEqual(t, topics(), []string{"sent", "new"})
	res, err := s.Sweep()
	require.NoError(t, err)
	require.Equal(t, res, SweepResult{Queued: 1})
	require.DeepEqual(t, topics(), []string{"sent", "new"})
	require.Equal(t, s.Stats().Queued, 2)
	q, _ := s.Queue("c", 0, 0)
	require.Equal(t, q[1].Expiry.UnixNano(), future.UnixNano())
}

func testDeleteDropsState(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	seq, err := s.Enqueue("c", Msg{Topic: "t", QoS: 2, Payload: []byte("x")})
	require.NoError(t, err)
	require.NoError(t, s.AssignPacketID("c", seq, 5))
	require.NoError(t, s.AddIncomingQoS2("c", 9))
	require.NoError(t, s.DeleteSession("c"))
	_, err = s.Queue("c", 0, 0)
	require.ErrorIs(t, err, ErrUnknownSession)
	// A new session of the same client starts empty.
	require.NoError(t, s.PutSession(sampleSession("c")))
	require.DeepEqual(t, queueOf(t, s, "c"), []queueState{})
	pids, err := s.IncomingQoS2("c")
	require.NoError(t, err)
	require.Equal(t, len(pids), 0)
	for _, st := range []struct {
		name string
		n    uint64
	}{{"msgs", s.msgs.State().Msgs}, {"out", s.out.State().Msgs}, {"qos2in", s.qin.State().Msgs}} {
		require.Equal(t, st.n, uint64(0), st.name)
	}
}

func testIncomingQoS2(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	for _, pid := range []uint16{300, 1, 65535, 1} {
		require.NoError(t, s.AddIncomingQoS2("c", pid))
	}
	pids, err := s.IncomingQoS2("c")
	require.NoError(t, err)
	require.DeepEqual(t, pids, []uint16{1, 300, 65535})
	require.NoError(t, s.ReleaseIncomingQoS2("c", 300))
	require.NoError(t, s.ReleaseIncomingQoS2("c", 300), "unknown pid")
	pids, _ = s.IncomingQoS2("c")
	require.DeepEqual(t, pids, []uint16{1, 65535})
}

func testUnknownSession(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	_, err := s.Enqueue("nobody", Msg{Topic: "t"})
	require.ErrorIs(t, err, ErrUnknownSession)
	require.ErrorContains(t, err, `"nobody"`)
	_, err = s.Queue("nobody", 0, 0)
	require.ErrorIs(t, err, ErrUnknownSession)
	require.ErrorIs(t, s.AssignPacketID("nobody", 1, 1), ErrUnknownSession)
	require.ErrorIs(t, s.MarkPubrec("nobody", 1), ErrUnknownSession)
	require.ErrorIs(t, s.Release("nobody", 1), ErrUnknownSession)
	require.ErrorIs(t, s.AddIncomingQoS2("nobody", 1), ErrUnknownSession)
	require.ErrorIs(t, s.ReleaseIncomingQoS2("nobody", 1), ErrUnknownSession)
	_, err = s.IncomingQoS2("nobody")
	require.ErrorIs(t, err, ErrUnknownSession)
}

func testSessionExpiry(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	now := time.Now()
	gone := Session{ClientID: "gone", ExpiryInterval: 10, DisconnectedAt: now.Add(-11 * time.Second)}
	zero := Session{ClientID: "zero", ExpiryInterval: 0, DisconnectedAt: now.Add(-time.Millisecond)}
	kept := Session{ClientID: "kept", ExpiryInterval: 10, DisconnectedAt: now.Add(-9 * time.Second)}
	forever := Session{ClientID: "forever", ExpiryInterval: NeverExpire, DisconnectedAt: now.Add(-1000 * time.Hour)}
	online := Session{ClientID: "online", ExpiryInterval: 0}
	for _, x := range []Session{gone, zero, kept, forever, online} {
		require.NoError(t, s.PutSession(x))
	}
	_, err := s.Enqueue("gone", Msg{Topic: "t", Payload: []byte("x")})
	require.NoError(t, err)
	ids := func() []string {
		got, err := s.LoadSessions()
		require.NoError(t, err)
		var out []string
		for _, x := range got {
			out = append(out, x.ClientID)
		}
		return out
	}
	require.DeepEqual(t, ids(), []string{"forever", "kept", "online"})
	require.Equal(t, s.Stats().Sessions, 5)
	res, err := s.Sweep()
	require.NoError(t, err)
	require.Equal(t, res, SweepResult{Sessions: 2})
	require.Equal(t, s.Stats(), Stats{Sessions: 3})
	require.Equal(t, s.msgs.State().Msgs, uint64(0))
}

func testMaxSessions(t *testing.T, b Backend) {
	s := open(t, b, Options{MaxSessions: 2})
	require.NoError(t, s.PutSession(sampleSession("a")))
	require.NoError(t, s.PutSession(sampleSession("b")))
	err := s.PutSession(sampleSession("c"))
	require.ErrorIs(t, err, ErrMaxSessions)
	require.NoError(t, s.PutSession(sampleSession("a")), "replacing is no new session")
	require.NoError(t, s.DeleteSession("b"))
	require.NoError(t, s.PutSession(sampleSession("c")))
}

func testRetained(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	set := func(topic, payload string) {
		t.Helper()
		require.NoError(t, s.SetRetained(topic, Msg{QoS: 1, Payload: []byte(payload), Header: []byte{3, 0, 1, 'x'}}))
	}
	set("a/b/c", "1")
	set("a/b", "2")
	set("a/x/c", "3")
	set("$SYS/up", "4")
	set("a/b", "2b") // replace
	set("/lead", "5")
	set("sp ace/.dot/*/>", "6")
	require.DeepEqual(t, retainedTopics(t, s, "#"), []string{"/lead=5", "a/b=2b", "a/b/c=1", "a/x/c=3", "sp ace/.dot/*/>=6"})
	require.DeepEqual(t, retainedTopics(t, s, "a/+/c"), []string{"a/b/c=1", "a/x/c=3"})
	require.DeepEqual(t, retainedTopics(t, s, "a/#"), []string{"a/b=2b", "a/b/c=1", "a/x/c=3"})
	require.DeepEqual(t, retainedTopics(t, s, "a/b"), []string{"a/b=2b"})
	require.DeepEqual(t, retainedTopics(t, s, "+/up"), []string{})
	require.DeepEqual(t, retainedTopics(t, s, "$SYS/#"), []string{"$SYS/up=4"})
	require.DeepEqual(t, retainedTopics(t, s, "+/lead"), []string{"/lead=5"})
	require.DeepEqual(t, retainedTopics(t, s, "sp ace/.dot/*/>"), []string{"sp ace/.dot/*/>=6"})
	ms, err := s.Retained("a/b/c")
	require.NoError(t, err)
	require.DeepEqual(t, ms, []Msg{{Topic: "a/b/c", QoS: 1, Retain: true, Header: []byte{3, 0, 1, 'x'}, Payload: []byte("1")}})

	// An empty payload clears; clearing nothing is no error.
	require.NoError(t, s.SetRetained("a/b", Msg{}))
	require.NoError(t, s.SetRetained("never/set", Msg{}))
	require.DeepEqual(t, retainedTopics(t, s, "a/#"), []string{"a/b/c=1", "a/x/c=3"})
	require.Equal(t, s.Stats().Retained, 5)

	require.ErrorIs(t, s.SetRetained("a/+", Msg{Payload: []byte("x")}), ErrInvalidTopic)
	require.ErrorIs(t, s.SetRetained("", Msg{Payload: []byte("x")}), ErrInvalidTopic)
	for _, bad := range []string{"", "a/#/b", "a+", "#a", "\xff"} {
		_, err := s.Retained(bad)
		require.ErrorIs(t, err, ErrInvalidFilter, bad)
	}
}

func testRetainedLimits(t *testing.T, b Backend) {
	s := open(t, b, Options{MaxRetained: 2, MaxRetainedBytes: 20})
	require.NoError(t, s.SetRetained("a", Msg{Payload: []byte("12345")})) // 6 bytes
	require.NoError(t, s.SetRetained("b", Msg{Payload: []byte("12345")})) // 12
	require.ErrorIs(t, s.SetRetained("c", Msg{Payload: []byte("1")}), ErrMaxRetained)
	require.NoError(t, s.SetRetained("a", Msg{Payload: []byte("123456789")})) // 16
	err := s.SetRetained("b", Msg{Payload: []byte("1234567890")})             // 11+10 = 21
	require.ErrorIs(t, err, ErrMaxRetainedBytes)
	require.ErrorContains(t, err, "of 20")
	require.DeepEqual(t, retainedTopics(t, s, "#"), []string{"a=123456789", "b=12345"})
	require.Equal(t, s.Stats().RetainedBytes, int64(16))
	require.NoError(t, s.SetRetained("b", Msg{}))
	require.NoError(t, s.SetRetained("c", Msg{Payload: []byte("1")}))
	require.Equal(t, s.Stats().RetainedBytes, int64(12))
}

func testRetainedExpiry(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.SetRetained("old", Msg{Payload: []byte("x"), Expiry: time.Now().Add(-time.Millisecond)}))
	require.NoError(t, s.SetRetained("new", Msg{Payload: []byte("y"), Expiry: time.Now().Add(time.Hour)}))
	require.DeepEqual(t, retainedTopics(t, s, "#"), []string{"new=y"})
	require.DeepEqual(t, retainedTopics(t, s, "old"), []string{})
	res, err := s.Sweep()
	require.NoError(t, err)
	require.Equal(t, res, SweepResult{Retained: 1})
	require.Equal(t, s.rmsgs.State().Msgs, uint64(1))
}

func testAccounts(t *testing.T, b Backend) {
	one := open(t, b, Options{Account: "ONE"})
	two := open(t, b, Options{Account: "a.b/c"})
	require.NoError(t, one.PutSession(sampleSession("c")))
	require.NoError(t, one.SetRetained("t", Msg{Payload: []byte("1")}))
	got, err := two.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 0)
	require.DeepEqual(t, retainedTopics(t, two, "#"), []string{})
}

func testClosed(t *testing.T, b Backend) {
	s := open(t, b, Options{})
	require.NoError(t, s.PutSession(sampleSession("c")))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.PutSession(sampleSession("c")), ErrClosed)
	_, err := s.Enqueue("c", Msg{})
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.LoadSessions()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.SetRetained("t", Msg{Payload: []byte("x")}), ErrClosed)
	_, err = s.Retained("#")
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Sweep()
	require.ErrorIs(t, err, ErrClosed)
}

func TestOpenOptions(t *testing.T) {
	_, err := Open(Options{})
	require.ErrorContains(t, err, "Backend is nil")
	_, err = Open(Options{Backend: Memory{}, MaxQueued: -1})
	require.ErrorContains(t, err, "negative limit")
	_, err = Open(Options{Backend: Files{FS: vfs.Inject(vfs.NewMem(), func(op vfs.Op, _ string) error {
		if op == vfs.OpMkdirAll {
			return errPowerCut
		}
		return nil
	}), Dir: "/x"}})
	require.ErrorIs(t, err, errPowerCut)
	require.ErrorContains(t, err, "mqttstate: open mqtt.$G.sess")
	require.DeepEqual(t, StreamNames("A"), []string{"mqtt.A.sess", "mqtt.A.msgs", "mqtt.A.out", "mqtt.A.qos2in", "mqtt.A.rmsgs"})
}

// TestConcurrent runs every call from several goroutines at once, with
// sweeps and deletes beside them, for the race detector; each worker's
// own queue ends as it left it.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	s := open(t, Files{Dir: t.TempDir(), SyncInterval: time.Hour}, Options{})
	// must reports from any goroutine (t.Fatal may not leave one).
	must := func(err error) {
		if err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := s.Sweep()
			must(err)
			_ = s.Stats()
			_, err = s.LoadSessions()
			must(err)
			_, err = s.Retained("#")
			must(err)
			must(s.DeleteSession("transient"))
			must(s.PutSession(Session{ClientID: "transient", ExpiryInterval: 0, DisconnectedAt: time.Now()}))
		}
	})
	var workers sync.WaitGroup
	for w := range 4 {
		id := fmt.Sprint("w", w)
		workers.Go(func() {
			must(s.PutSession(sampleSession(id)))
			var kept []uint64
			for i := range 200 {
				seq, err := s.EnqueueSent(id, Msg{Topic: "t", QoS: 1, Payload: []byte(fmt.Sprint(i))}, uint16(i+1))
				must(err)
				if i%3 == 0 {
					kept = append(kept, seq)
				} else {
					must(s.Release(id, seq))
				}
				must(s.SetRetained(fmt.Sprint("r/", id, "/", i%5), Msg{Payload: []byte("x")}))
				must(s.AddIncomingQoS2(id, uint16(i)))
				must(s.ReleaseIncomingQoS2(id, uint16(i)))
				if i%50 == 0 {
					must(s.PutSession(sampleSession(id)))
				}
			}
			q, err := s.Queue(id, 0, 0)
			must(err)
			var got []uint64
			for _, m := range q {
				got = append(got, m.Seq)
			}
			if !slices.Equal(got, kept) {
				t.Errorf("%s: queue %v, want %v", id, got, kept)
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	require.Equal(t, s.Stats().Retained, 20)
}
