package jetstream

import (
	"errors"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

func TestWorkQueueRetention(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "WQ", Subjects: []string{"wq.*"}, Retention: njs.WorkQueuePolicy, Storage: st})
		mustNoErr(t, err)
		publishN(t, env.js, "wq.a", 3)
		publishN(t, env.js, "wq.b", 2)
		ca, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "A", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "wq.a"})
		mustNoErr(t, err)

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
		mustNoErr(t, err)
		for m := range batch.Messages() {
			mustNoErr(t, m.DoubleAck(ctx))
		}
		info, err := s.Info(ctx)
		mustNoErr(t, err)
		mustEqual(t, info.State.Msgs, uint64(2))
		mustEqual(t, info.State.FirstSeq, uint64(4))
	})
}

func TestInterestRetention(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "I", Subjects: []string{"i.*"}, Retention: njs.InterestPolicy, Storage: st})
		mustNoErr(t, err)
		// No consumers: nothing is kept.
		publishN(t, env.js, "i.a", 2)
		info, err := s.Info(ctx)
		mustNoErr(t, err)
		mustEqual(t, info.State.Msgs, uint64(0))
		mustEqual(t, info.State.LastSeq, uint64(2))

		c1, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "C1", AckPolicy: njs.AckExplicitPolicy})
		mustNoErr(t, err)
		c2, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "C2", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "i.a"})
		mustNoErr(t, err)
		publishN(t, env.js, "i.a", 2) // 3, 4: both consumers
		publishN(t, env.js, "i.b", 1) // 5: only C1

		ackAll := func(c njs.Consumer, n int) {
			t.Helper()
			batch, err := c.Fetch(n)
			mustNoErr(t, err)
			got := 0
			for m := range batch.Messages() {
				mustNoErr(t, m.DoubleAck(ctx))
				got++
			}
			mustEqual(t, got, n)
		}
		ackAll(c1, 3)
		info, err = s.Info(ctx)
		mustNoErr(t, err)
		mustEqual(t, info.State.Msgs, uint64(2)) // 3 and 4 wait for C2
		ackAll(c2, 2)
		info, err = s.Info(ctx)
		mustNoErr(t, err)
		mustEqual(t, info.State.Msgs, uint64(0))

		// Deleting a consumer releases what only it was holding.
		publishN(t, env.js, "i.a", 1)
		ackAll(c1, 1)
		mustNoErr(t, s.DeleteConsumer(ctx, "C2"))
		info, err = s.Info(ctx)
		mustNoErr(t, err)
		mustEqual(t, info.State.Msgs, uint64(0))
	})
}

func TestFileRestart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, MaxMsgsPerSubject: 10})
	mustNoErr(t, err)
	publishN(t, env.js, "s.a", 10)
	mustNoErr(t, s.DeleteMsg(ctx, 2))
	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, AckWait: time.Hour})
	mustNoErr(t, err)
	batch, err := c.Fetch(4)
	mustNoErr(t, err)
	i := 0
	for m := range batch.Messages() {
		if i < 2 {
			mustNoErr(t, m.DoubleAck(ctx)) // 1 and 3
		}
		i++
	}
	// 4 and 5 stay pending.
	_, err = env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("id-1"))
	mustNoErr(t, err)
	kv, err := env.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "kv"})
	mustNoErr(t, err)
	_, err = kv.Put(ctx, "k", []byte("v"))
	mustNoErr(t, err)
	before, err := c.Info(ctx)
	mustNoErr(t, err)

	env.restart()

	s, err = env.js.Stream(ctx, "S")
	mustNoErr(t, err)
	info := s.CachedInfo()
	mustEqual(t, info.State.Msgs, uint64(10))
	mustEqual(t, info.State.LastSeq, uint64(11))
	mustEqual(t, info.State.NumDeleted, 1)
	mustEqual(t, info.Config.MaxMsgsPerSubject, int64(10))
	c, err = s.Consumer(ctx, "D")
	mustNoErr(t, err)
	after := c.CachedInfo()
	mustEqual(t, after.AckFloor.Stream, before.AckFloor.Stream)
	mustEqual(t, after.Delivered.Stream, before.Delivered.Stream)
	mustEqual(t, after.NumAckPending, before.NumAckPending)
	mustEqual(t, after.NumPending, before.NumPending)

	// Dedupe survives the restart.
	ack, err := env.js.Publish(ctx, "s.a", nil, njs.WithMsgID("id-1"))
	mustNoErr(t, err)
	mustEqual(t, ack.Duplicate, true)

	// The consumer continues after its last delivery.
	m, err := c.Next()
	mustNoErr(t, err)
	meta, _ := m.Metadata()
	mustEqual(t, meta.Sequence.Stream, uint64(6))

	kv, err = env.js.KeyValue(ctx, "kv")
	mustNoErr(t, err)
	e, err := kv.Get(ctx, "k")
	mustNoErr(t, err)
	mustEqual(t, string(e.Value()), "v")
}
