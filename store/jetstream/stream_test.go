package jetstream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
)

func TestAccountInfo(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{Domain: "edge"})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	info, err := env.js.AccountInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, info.Streams, 1)
	require.Equal(t, info.Domain, "edge")
	require.Equal(t, info.API.Level, APILevel)
}

func TestStreamCRUD(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	cfg := njs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: njs.MemoryStorage}
	s, err := env.js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, s.CachedInfo().Config.Name, "ORDERS")
	require.Equal(t, s.CachedInfo().Config.MaxMsgs, int64(-1))
	require.Equal(t, s.CachedInfo().Config.Duplicates, 2*time.Minute)

	// Identical create is idempotent; a different one is 10058.
	_, err = env.js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	cfg2 := cfg
	cfg2.MaxMsgs = 10
	_, err = env.js.CreateStream(ctx, cfg2)
	if !errors.Is(err, njs.ErrStreamNameAlreadyInUse) {
		t.Fatalf("create with other config: %v", err)
	}

	// Overlapping subjects are refused.
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "OTHER", Subjects: []string{"orders.new"}, Storage: njs.MemoryStorage})
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10065 {
		t.Fatalf("overlap: %v", err)
	}

	s, err = env.js.UpdateStream(ctx, cfg2)
	require.NoError(t, err)
	require.Equal(t, s.CachedInfo().Config.MaxMsgs, int64(10))

	_, err = env.js.UpdateStream(ctx, njs.StreamConfig{Name: "NOPE", Storage: njs.MemoryStorage})
	if !errors.Is(err, njs.ErrStreamNotFound) {
		t.Fatalf("update missing: %v", err)
	}

	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b.*"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	var names []string
	lister := env.js.StreamNames(ctx)
	for n := range lister.Name() {
		names = append(names, n)
	}
	require.NoError(t, lister.Err())
	require.Equal(t, fmt.Sprint(names), "[B ORDERS]")

	filtered := env.js.StreamNames(ctx, njs.WithStreamListSubject("b.x"))
	names = names[:0]
	for n := range filtered.Name() {
		names = append(names, n)
	}
	require.Equal(t, fmt.Sprint(names), "[B]")

	infos := env.js.ListStreams(ctx)
	count := 0
	for range infos.Info() {
		count++
	}
	require.NoError(t, infos.Err())
	require.Equal(t, count, 2)
	require.NoError(t, env.js.DeleteStream(ctx, "B"))
	if err := env.js.DeleteStream(ctx, "B"); !errors.Is(err, njs.ErrStreamNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := env.js.Stream(ctx, "B"); !errors.Is(err, njs.ErrStreamNotFound) {
		t.Fatalf("info deleted: %v", err)
	}
}

func TestPublishAndLimits(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, MaxMsgs: 5, Storage: st})
		require.NoError(t, err)
		for i := 1; i <= 8; i++ {
			ack, err := env.js.Publish(ctx, "s.x", []byte(fmt.Sprint(i)))
			require.NoError(t, err)
			require.Equal(t, ack.Sequence, uint64(i))
			require.Equal(t, ack.Stream, "S")
		}
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(5))
		require.Equal(t, info.State.FirstSeq, uint64(4))
		require.Equal(t, info.State.LastSeq, uint64(8))

		// Discard new rejects with an error ack.
		_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "N", Subjects: []string{"n"}, MaxMsgs: 1, Discard: njs.DiscardNew, Storage: st})
		require.NoError(t, err)
		_, err = env.js.Publish(ctx, "n", nil)
		require.NoError(t, err)
		_, err = env.js.Publish(ctx, "n", nil)
		var apiErr *njs.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10077 || apiErr.Description != "maximum messages exceeded" {
			t.Fatalf("discard new: %v", err)
		}

		// Per-subject limits keep the newest per subject.
		ps, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "P", Subjects: []string{"p.*"}, MaxMsgsPerSubject: 2, Storage: st})
		require.NoError(t, err)
		for i := 0; i < 5; i++ {
			_, err := env.js.Publish(ctx, "p.a", nil)
			require.NoError(t, err)
			_, err = env.js.Publish(ctx, "p.b", nil)
			require.NoError(t, err)
		}
		info, err = ps.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(4))

		// Max message size.
		_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "M", Subjects: []string{"m"}, MaxMsgSize: 10, Storage: st})
		require.NoError(t, err)
		_, err = env.js.Publish(ctx, "m", make([]byte, 11))
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10054 {
			t.Fatalf("max msg size: %v", err)
		}
	})
}

func TestPublishDedupeAndExpectations(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)

	ack, err := env.js.Publish(ctx, "s.a", []byte("1"), njs.WithMsgID("one"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, false)
	ack, err = env.js.Publish(ctx, "s.a", []byte("1"), njs.WithMsgID("one"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, true)
	require.Equal(t, ack.Sequence, uint64(1))

	var apiErr *njs.APIError
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithExpectStream("OTHER"))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10060 {
		t.Fatalf("expected stream: %v", err)
	}
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithExpectLastSequence(5))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10071 || apiErr.Description != "wrong last sequence: 1" {
		t.Fatalf("expected last seq: %v", err)
	}
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithExpectLastSequence(1))
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.b", nil, njs.WithExpectLastSequencePerSubject(0))
	require.NoError(t, err) // seq 3
	_, err = env.js.Publish(ctx, "s.b", nil, njs.WithExpectLastSequencePerSubject(1))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10071 || apiErr.Description != "wrong last sequence: 3" {
		t.Fatalf("expected last subject seq: %v", err)
	}
	_, err = env.js.Publish(ctx, "s.b", nil, njs.WithExpectLastSequencePerSubject(3))
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.c", nil, njs.WithMsgID("two"))
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.c", nil, njs.WithExpectLastMsgID("nope"))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10070 {
		t.Fatalf("expected last msg id: %v", err)
	}
	_, err = env.js.Publish(ctx, "s.c", nil, njs.WithExpectLastMsgID("two"))
	require.NoError(t, err)

	// Rollup needs allow_rollup_hdrs.
	m := nats.NewMsg("s.c")
	m.Header.Set("Nats-Rollup", "sub")
	_, err = env.js.PublishMsg(ctx, m)
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10111 {
		t.Fatalf("rollup: %v", err)
	}
	// TTL needs allow_msg_ttl.
	_, err = env.js.Publish(ctx, "s.c", nil, njs.WithMsgTTL(time.Minute))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10166 {
		t.Fatalf("ttl: %v", err)
	}
}

func TestRollup(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, AllowRollup: true, Storage: st})
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			_, err = env.js.Publish(ctx, "s.a", nil)
			require.NoError(t, err)
			_, err = env.js.Publish(ctx, "s.b", nil)
			require.NoError(t, err)
		}
		m := nats.NewMsg("s.a")
		m.Header.Set("Nats-Rollup", "sub")
		_, err = env.js.PublishMsg(ctx, m)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(4))
		m = nats.NewMsg("s.b")
		m.Header.Set("Nats-Rollup", "all")
		_, err = env.js.PublishMsg(ctx, m)
		require.NoError(t, err)
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(1))
	})
}

func TestPurgeDeleteAndGet(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, AllowDirect: true, Storage: st})
		require.NoError(t, err)
		for i := 1; i <= 10; i++ {
			m := nats.NewMsg(fmt.Sprintf("s.%d", i%2))
			m.Data = []byte(fmt.Sprint(i))
			m.Header.Set("X", fmt.Sprint(i))
			_, err := env.js.PublishMsg(ctx, m)
			require.NoError(t, err)
		}
		raw, err := s.GetMsg(ctx, 3)
		require.NoError(t, err)
		require.Equal(t, string(raw.Data), "3")
		require.Equal(t, raw.Header.Get("X"), "3")
		raw, err = s.GetLastMsgForSubject(ctx, "s.0")
		require.NoError(t, err)
		require.Equal(t, raw.Sequence, uint64(10))

		// Direct get by sequence and last by subject.
		direct, err := env.js.Stream(ctx, "S")
		require.NoError(t, err)
		raw, err = direct.GetMsg(ctx, 4, njs.WithGetMsgSubject("s.0"))
		require.NoError(t, err)
		require.Equal(t, raw.Sequence, uint64(4))
		require.NoError(t, s.DeleteMsg(ctx, 3))
		if _, err := s.GetMsg(ctx, 3); !errors.Is(err, njs.ErrMsgNotFound) {
			t.Fatalf("deleted msg: %v", err)
		}
		require.NoError(t, s.SecureDeleteMsg(ctx, 4))
		if err := s.DeleteMsg(ctx, 3); err == nil {
			t.Fatalf("delete twice succeeded")
		}
		require.NoError(t, s.Purge(ctx, njs.WithPurgeSubject("s.1")))
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(4))
		require. // 6, 8, 10 and 2
				NoError(t, s.Purge(ctx, njs.WithPurgeKeep(1)))
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(1))
		require.NoError(t, s.Purge(ctx))
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(0))
		require.Equal(t, info.State.FirstSeq, uint64(11))
	})
}

func TestDenyDeleteAndPurge(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", DenyDelete: true, DenyPurge: true, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "S", nil)
	require.NoError(t, err)
	if err := s.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("delete allowed")
	}
	if err := s.Purge(ctx); err == nil {
		t.Fatal("purge allowed")
	}
}

func TestMessageTTLAndSealed(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", AllowMsgTTL: true, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "S", []byte("short"), njs.WithMsgTTL(time.Second))
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "S", []byte("kept"))
	require.NoError(t, err)
	m := nats.NewMsg("S")
	m.Header.Set("Nats-TTL", "500ms")
	_, err = env.js.PublishMsg(ctx, m)
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10165 {
		t.Fatalf("sub-second ttl: %v", err)
	}
	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{DeliverPolicy: njs.DeliverNewPolicy, AckPolicy: njs.AckNonePolicy})
	require.NoError(t, err)
	_ = c
	// The message with a TTL goes after a second.
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := s.Info(ctx)
		require.NoError(t, err)
		if info.State.Msgs == 1 {
			require.Equal(t, info.State.FirstSeq, uint64(2))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ttl message not expired: %+v", info.State)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cfg := s.CachedInfo().Config
	cfg.Sealed = true
	_, err = env.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "S", nil)
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10109 {
		t.Fatalf("publish to sealed: %v", err)
	}
	if err := s.Purge(ctx); err == nil {
		t.Fatal("purge of sealed stream")
	}
}

func TestStorageLimits(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{MaxMemory: 1000})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "BIG", MaxBytes: 2000, Storage: njs.MemoryStorage})
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10028 {
		t.Fatalf("reservation over limit: %v", err)
	}
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	for i := 0; ; i++ {
		_, err := env.js.Publish(ctx, "S", make([]byte, 100))
		if err != nil {
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10002 {
				t.Fatalf("over account limit: %v", err)
			}
			if i < 8 {
				t.Fatalf("refused after %d messages", i)
			}
			break
		}
		if i > 20 {
			t.Fatal("account limit not enforced")
		}
	}
}

func TestStreamInfoDetailsAndUpdateSubjects(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"a.*"}, FirstSeq: 100, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	ack, err := env.js.Publish(ctx, "a.x", nil)
	require.NoError(t, err)
	require.Equal(t, ack.Sequence, uint64(100))
	publishN(t, env.js, "a.y", 3)
	require.NoError(t, s.DeleteMsg(ctx, 101))
	info, err := s.Info(ctx, njs.WithSubjectFilter("a.>"), njs.WithDeletedDetails(true))
	require.NoError(t, err)
	require.Equal(t, len(info.State.Subjects), 2)
	require.Equal(t, info.State.Subjects["a.y"], uint64(2))
	require.Equal(t, fmt.Sprint(info.State.Deleted), "[101]")

	cfg := info.Config
	cfg.Subjects = []string{"b.*"}
	_, err = env.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	ack, err = env.js.Publish(ctx, "b.x", nil)
	require.NoError(t, err)
	require.Equal(t, ack.Sequence, uint64(104))
	if _, err := env.js.Publish(ctx, "a.x", nil); !errors.Is(err, njs.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("publish to old subject: %v", err)
	}
}

func TestConsumerPause(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckNonePolicy})
	require.NoError(t, err)
	resp, err := env.js.PauseConsumer(ctx, "S", "D", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, resp.Paused, true)
	publishN(t, env.js, "S", 1)
	if _, err := c.Next(njs.FetchMaxWait(200 * time.Millisecond)); err == nil {
		t.Fatal("paused consumer delivered")
	}
	info, err := c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, info.Paused, true)
	_, err = env.js.ResumeConsumer(ctx, "S", "D")
	require.NoError(t, err)
	_, err = c.Next(njs.FetchMaxWait(2 * time.Second))
	require.NoError(t, err)
}

func TestMonitoringAccessors(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{MaxStore: 1 << 30})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "F", MaxBytes: 1 << 20})
	require.NoError(t, err)
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "M", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "F", 3)
	publishN(t, env.js, "M", 2)
	_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy})
	require.NoError(t, err)

	st := env.eng.Stats()
	require.Equal(t, st.Streams, 2)
	require.Equal(t, st.Consumers, 1)
	require.Equal(t, st.Messages, uint64(5))
	require.Equal(t, st.ReservedStore, uint64(1<<20))
	if st.Store == 0 || st.Memory == 0 || st.APITotal == 0 {
		t.Fatalf("stats: %+v", st)
	}
	details := env.eng.Streams(true)
	require.Equal(t, len(details), 2)
	require.Equal(t, details[0].Name, "F")
	require.Equal(t, details[0].State.Msgs, uint64(3))
	require.Equal(t, len(details[0].Consumers), 1)
	require.Equal(t, details[0].Consumers[0].NumPending, uint64(3))
}

// A durable deleted and at once created again under its name keeps the
// new one's state. A client that asks for the consumer learns it is gone
// as soon as it is unregistered, before its directory is deleted, and a
// bridge then creates it again at once: in a CI run that create failed
// writing meta.json into a directory the old one's removal took away.
// Here the removal is held between the two steps: the create waits for
// it, and the new consumer's meta.json is there after it.
func TestConsumerCreatedDuringRemovalWaitsForIt(t *testing.T) {
	env := newTestEnv(t, Config{StoreDir: t.TempDir()})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	cfg := jsapi.ConsumerConfig{Durable: "d", AckPolicy: jsapi.AckExplicit}
	s := env.eng.lookup("R")
	old, created, apiErr := s.createConsumer(cfg, jsapi.ActionCreate)
	if apiErr != nil || !created {
		t.Fatalf("create: %v", apiErr)
	}
	require.Equal(t, s.unregister(old), true)
	made := make(chan *jsapi.APIError, 1)
	go func() {
		_, _, err := s.createConsumer(cfg, jsapi.ActionCreate)
		made <- err
	}()
	select {
	case err := <-made:
		t.Fatalf("the create went on while the old consumer's state was being removed (%v)", err)
	case <-time.After(100 * time.Millisecond): // what a create takes, many times over
	}
	s.finishRemoval(old)
	if err := <-made; err != nil {
		t.Fatalf("create after the removal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.cfg.StoreDir, "R", "obs", "d", metaFile)); err != nil {
		t.Fatalf("the new consumer's meta.json: %v", err)
	}
}
