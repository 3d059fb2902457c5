package jetstream

import (
	"errors"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

func TestWorkQueueRetention(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "WQ", Subjects: []string{"wq.*"}, Retention: njs.WorkQueuePolicy, Storage: st})
		require.NoError(t, err)
		publishN(t, env.js, "wq.a", 3)
		publishN(t, env.js, "wq.b", 2)
		ca, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "A", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "wq.a"})
		require.NoError(t, err)

		var apiErr *njs.APIError
		_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "ALL", AckPolicy: njs.AckExplicitPolicy})
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10099 {
			t.Fatalf("unfiltered second consumer: %v", err)
		}
		_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "A2", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "wq.a"})
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10100 {
			t.Fatalf("overlapping consumer: %v", err)
		}
		_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "N", AckPolicy: njs.AckNonePolicy, FilterSubject: "wq.b"})
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10084 {
			t.Fatalf("ack none on workqueue: %v", err)
		}

		batch, err := ca.Fetch(3)
		require.NoError(t, err)
		for m := range batch.Messages() {
			require.NoError(t, m.DoubleAck(ctx))
		}
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(2))
		require.Equal(t, info.State.FirstSeq, uint64(4))
	})
}

func TestInterestRetention(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "I", Subjects: []string{"i.*"}, Retention: njs.InterestPolicy, Storage: st})
		require.NoError(t, err)
		// No consumers: nothing is kept.
		publishN(t, env.js, "i.a", 2)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(0))
		require.Equal(t, info.State.LastSeq, uint64(2))

		c1, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "C1", AckPolicy: njs.AckExplicitPolicy})
		require.NoError(t, err)
		c2, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "C2", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "i.a"})
		require.NoError(t, err)
		publishN(t, env.js, "i.a", 2) // 3, 4: both consumers
		publishN(t, env.js, "i.b", 1) // 5: only C1

		ackAll := func(c njs.Consumer, n int) {
			t.Helper()
			batch, err := c.Fetch(n)
			require.NoError(t, err)
			got := 0
			for m := range batch.Messages() {
				require.NoError(t, m.DoubleAck(ctx))
				got++
			}
			require.Equal(t, got, n)
		}
		ackAll(c1, 3)
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(2)) // 3 and 4 wait for C2
		ackAll(c2, 2)
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(0))

		// Deleting a consumer releases what only it was holding.
		publishN(t, env.js, "i.a", 1)
		ackAll(c1, 1)
		require.NoError(t, s.DeleteConsumer(ctx, "C2"))
		info, err = s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(0))
	})
}

func TestFileRestart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, MaxMsgsPerSubject: 10})
	require.NoError(t, err)
	publishN(t, env.js, "s.a", 10)
	require.NoError(t, s.DeleteMsg(ctx, 2))
	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, AckWait: time.Hour})
	require.NoError(t, err)
	batch, err := c.Fetch(4)
	require.NoError(t, err)
	i := 0
	for m := range batch.Messages() {
		if i < 2 {
			require.NoError(t, m.DoubleAck(ctx)) // 1 and 3
		}
		i++
	}
	// 4 and 5 stay pending.
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("id-1"))
	require.NoError(t, err)
	kv, err := env.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "kv"})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)
	before, err := c.Info(ctx)
	require.NoError(t, err)

	env.restart()

	s, err = env.js.Stream(ctx, "S")
	require.NoError(t, err)
	info := s.CachedInfo()
	require.Equal(t, info.State.Msgs, uint64(10))
	require.Equal(t, info.State.LastSeq, uint64(11))
	require.Equal(t, info.State.NumDeleted, 1)
	require.Equal(t, info.Config.MaxMsgsPerSubject, int64(10))
	c, err = s.Consumer(ctx, "D")
	require.NoError(t, err)
	after := c.CachedInfo()
	require.Equal(t, after.AckFloor.Stream, before.AckFloor.Stream)
	require.Equal(t, after.Delivered.Stream, before.Delivered.Stream)
	require.Equal(t, after.NumAckPending, before.NumAckPending)
	require.Equal(t, after.NumPending, before.NumPending)

	// Dedupe survives the restart.
	ack, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("id-1"))
	require.NoError(t, err)
	require.Equal(t, ack.Duplicate, true)

	// The consumer continues after its last delivery.
	m, err := c.Next()
	require.NoError(t, err)
	meta, _ := m.Metadata()
	require.Equal(t, meta.Sequence.Stream, uint64(6))

	kv, err = env.js.KeyValue(ctx, "kv")
	require.NoError(t, err)
	e, err := kv.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, string(e.Value()), "v")
}
