package jetstream

import (
	"errors"
	"fmt"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// publishN publishes n messages "0".."n-1" to subj.
func publishN(t *testing.T, js njs.JetStream, subj string, n int) {
	t.Helper()
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		_, err := js.Publish(ctx, subj, []byte(fmt.Sprint(i)))
		require.NoError(t, err)
	}
}

func TestPullFetchAck(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: st})
		require.NoError(t, err)
		publishN(t, env.js, "s.a", 10)

		c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy})
		require.NoError(t, err)
		require.Equal(t, c.CachedInfo().NumPending, uint64(10))

		batch, err := c.Fetch(4)
		require.NoError(t, err)
		n := 0
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			require.NoError(t, err)
			require.Equal(t, meta.Sequence.Stream, uint64(n+1))
			require.Equal(t, meta.Sequence.Consumer, uint64(n+1))
			require.Equal(t, meta.NumPending, uint64(10-n-1))
			require.Equal(t, meta.NumDelivered, uint64(1))
			require.Equal(t, string(m.Data()), fmt.Sprint(n))
			require.Equal(t, m.Subject(), "s.a")
			require.NoError(t, m.DoubleAck(ctx))
			n++
		}
		require.NoError(t, batch.Error())
		require.Equal(t, n, 4)

		info, err := c.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.NumPending, uint64(6))
		require.Equal(t, info.NumAckPending, 0)
		require.Equal(t, info.AckFloor.Stream, uint64(4))
		require.Equal(t, info.Delivered.Consumer, uint64(4))

		// Fetch more than is there: 6 arrive, then the request expires.
		batch, err = c.Fetch(10, njs.FetchMaxWait(300*time.Millisecond))
		require.NoError(t, err)
		n = 0
		for m := range batch.Messages() {
			require.NoError(t, m.Ack())
			n++
		}
		require.NoError(t, batch.Error())
		require.Equal(t, n, 6)

		// No wait on an empty consumer returns at once.
		batch, err = c.FetchNoWait(5)
		require.NoError(t, err)
		for range batch.Messages() {
			t.Fatal("unexpected message")
		}
		require.NoError(t, batch.Error())

		// Next times out with nothing pending.
		if _, err := c.Next(njs.FetchMaxWait(200 * time.Millisecond)); !errors.Is(err, njs.ErrMsgIteratorClosed) && !errors.Is(err, njs.ErrNoMessages) && err == nil {
			t.Fatalf("next on empty: %v", err)
		}
	})
}

func TestPullNakRedeliveryAndTerm(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: st})
		require.NoError(t, err)
		publishN(t, env.js, "s", 3)
		c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, MaxDeliver: 3})
		require.NoError(t, err)

		m, err := c.Next()
		require.NoError(t, err)
		require.NoError(t, m.Nak())
		m, err = c.Next()
		require.NoError(t, err)
		meta, _ := m.Metadata()
		require.Equal(t, meta.Sequence.Stream, uint64(1))
		require.Equal(t, meta.NumDelivered, uint64(2))
		require.Equal(t, meta.Sequence.Consumer, uint64(2))
		require.

			// NAK with delay: the next message comes first.
			NoError(t, m.NakWithDelay(300*time.Millisecond))
		m, err = c.Next()
		require.NoError(t, err)
		meta, _ = m.Metadata()
		require.Equal(t, meta.Sequence.Stream, uint64(2))
		require.NoError(t, m.Term())
		m, err = c.Next()
		require.NoError(t, err)
		meta, _ = m.Metadata()
		require.Equal(t, meta.Sequence.Stream, uint64(3))
		require.NoError(t, m.Ack())
		start := time.Now()
		m, err = c.Next()
		require.NoError(t, err)
		meta, _ = m.Metadata()
		require.Equal(t, meta.Sequence.Stream, uint64(1))
		require.Equal(t, meta.NumDelivered, uint64(3))
		if time.Since(start) > 2*time.Second {
			t.Fatalf("nak delay took %v", time.Since(start))
		}
		require.
			// Third delivery was the last: a NAK drops it.
			NoError(t, m.Nak())
		if _, err := c.Next(njs.FetchMaxWait(300 * time.Millisecond)); err == nil {
			t.Fatal("redelivered beyond max_deliver")
		}
		info, err := c.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.NumAckPending, 0)
		require.Equal(t, info.AckFloor.Stream, uint64(3))
	})
}

func TestPullAckWaitAndProgress(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s", 1)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, AckWait: 200 * time.Millisecond})
	require.NoError(t, err)
	m, err := c.Next()
	require.NoError(t, err)
	// In progress keeps it ours past one ack wait.
	deadline := time.Now().Add(400 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.NoError(t, m.InProgress())
		time.Sleep(50 * time.Millisecond)
	}
	info, err := c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, info.NumRedelivered, 0)
	// Then, unacked, it comes back after ack_wait.
	m, err = c.Next(njs.FetchMaxWait(2 * time.Second))
	require.NoError(t, err)
	meta, _ := m.Metadata()
	require.Equal(t, meta.NumDelivered, uint64(2))
	require.NoError(t, m.Ack())
}

func TestPullBackoff(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s", 1)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
		Durable: "D", AckPolicy: njs.AckExplicitPolicy, MaxDeliver: 3,
		BackOff: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
	})
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		m, err := c.Next(njs.FetchMaxWait(2 * time.Second))
		require.NoError(t, err)
		meta, _ := m.Metadata()
		require.Equal(t, meta.NumDelivered, uint64(i))
	}
	if _, err := c.Next(njs.FetchMaxWait(300 * time.Millisecond)); err == nil {
		t.Fatal("delivered beyond max_deliver")
	}
}

func TestPullConsume(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "s.a"})
	require.NoError(t, err)
	const total = 2000
	got := make(chan uint64, total)
	cc, err := c.Consume(func(m njs.Msg) {
		meta, _ := m.Metadata()
		_ = m.Ack()
		got <- meta.Sequence.Stream
	}, njs.PullMaxMessages(100))
	require.NoError(t, err)
	defer cc.Stop()
	pubErr := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			if _, err := env.js.PublishAsync("s.b", nil); err != nil {
				pubErr <- err
				return
			}
			if _, err := env.js.PublishAsync("s.a", []byte(fmt.Sprint(i))); err != nil {
				pubErr <- err
				return
			}
		}
	}()
	var last uint64
	for i := 0; i < total; i++ {
		select {
		case seq := <-got:
			if seq <= last {
				t.Fatalf("out of order: %d after %d", seq, last)
			}
			last = seq
		case err := <-pubErr:
			t.Fatalf("publish: %v", err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d", i, total)
		}
	}
}

func TestPullMaxAckPending(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s", 10)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, MaxAckPending: 3})
	require.NoError(t, err)
	batch, err := c.Fetch(10, njs.FetchMaxWait(300*time.Millisecond))
	require.NoError(t, err)
	var msgs []njs.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	require.Equal(t, len(msgs), 3)
	require.NoError(t, msgs[0].Ack())
	m, err := c.Next()
	require.NoError(t, err)
	meta, _ := m.Metadata()
	require.Equal(t, meta.Sequence.Stream, uint64(4))
}

func TestPullAckAll(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s", 5)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckAllPolicy})
	require.NoError(t, err)
	batch, err := c.Fetch(5)
	require.NoError(t, err)
	var last njs.Msg
	for m := range batch.Messages() {
		last = m
	}
	require.NoError(t, last.DoubleAck(ctx))
	info, err := c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, info.NumAckPending, 0)
	require.Equal(t, info.AckFloor.Stream, uint64(5))
}

func TestDeliverPolicies(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, Storage: st})
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			publishN(t, env.js, "s.a", 1)
			publishN(t, env.js, "s.b", 1)
		}
		mid := time.Now()
		publishN(t, env.js, "s.c", 1) // seq 7
		cases := []struct {
			name    string
			cfg     njs.ConsumerConfig
			seqs    []uint64
			pending uint64
		}{
			{"all", njs.ConsumerConfig{}, []uint64{1, 2, 3}, 7},
			{"last", njs.ConsumerConfig{DeliverPolicy: njs.DeliverLastPolicy}, []uint64{7}, 1},
			{"new", njs.ConsumerConfig{DeliverPolicy: njs.DeliverNewPolicy}, nil, 0},
			{"by_start_sequence", njs.ConsumerConfig{DeliverPolicy: njs.DeliverByStartSequencePolicy, OptStartSeq: 5}, []uint64{5, 6, 7}, 3},
			{"by_start_time", njs.ConsumerConfig{DeliverPolicy: njs.DeliverByStartTimePolicy, OptStartTime: &mid}, []uint64{7}, 1},
			{"last_per_subject", njs.ConsumerConfig{DeliverPolicy: njs.DeliverLastPerSubjectPolicy, FilterSubjects: []string{"s.a", "s.b", "s.c"}}, []uint64{5, 6, 7}, 3},
			{"filtered", njs.ConsumerConfig{FilterSubject: "s.b"}, []uint64{2, 4, 6}, 3},
			{"multi_filtered", njs.ConsumerConfig{FilterSubjects: []string{"s.b", "s.c"}}, []uint64{2, 4, 6}, 4},
			{"last_per_subject_filtered", njs.ConsumerConfig{DeliverPolicy: njs.DeliverLastPerSubjectPolicy, FilterSubject: "s.a"}, []uint64{5}, 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cfg := tc.cfg
				cfg.AckPolicy = njs.AckNonePolicy
				c, err := s.CreateConsumer(ctx, cfg)
				require.NoError(t, err)
				require.Equal(t, c.CachedInfo().NumPending, tc.pending)
				batch, err := c.Fetch(3, njs.FetchMaxWait(200*time.Millisecond))
				require.NoError(t, err)
				var seqs []uint64
				for m := range batch.Messages() {
					meta, _ := m.Metadata()
					seqs = append(seqs, meta.Sequence.Stream)
				}
				require.Equal(t, fmt.Sprint(seqs), fmt.Sprint(tc.seqs))
			})
		}
	})
}

func TestConsumerCRUD(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	cfg := njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, FilterSubject: "s.a"}
	c, err := s.CreateConsumer(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, c.CachedInfo().Config.AckWait, 30*time.Second)
	require.Equal(t, c.CachedInfo().Config.MaxAckPending, 1000)
	// Same config: fine; other config with create: 10148.
	_, err = s.CreateConsumer(ctx, cfg)
	require.NoError(t, err)
	cfg2 := cfg
	cfg2.Description = "x"
	if _, err := s.CreateConsumer(ctx, cfg2); !errors.Is(err, njs.ErrConsumerExists) {
		t.Fatalf("create other: %v", err)
	}
	c, err = s.UpdateConsumer(ctx, cfg2)
	require.NoError(t, err)
	require.Equal(t, c.CachedInfo().Config.Description, "x")
	if _, err := s.UpdateConsumer(ctx, njs.ConsumerConfig{Durable: "NOPE", AckPolicy: njs.AckExplicitPolicy}); !errors.Is(err, njs.ErrConsumerDoesNotExist) {
		t.Fatalf("update missing: %v", err)
	}
	cfg3 := cfg2
	cfg3.AckPolicy = njs.AckNonePolicy
	if _, err := s.UpdateConsumer(ctx, cfg3); err == nil {
		t.Fatal("ack policy updated")
	}
	_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Name: "E", AckPolicy: njs.AckNonePolicy})
	require.NoError(t, err)
	names := s.ConsumerNames(ctx)
	var got []string
	for n := range names.Name() {
		got = append(got, n)
	}
	require.NoError(t, names.Err())
	require.Equal(t, fmt.Sprint(got), "[D E]")
	list := s.ListConsumers(ctx)
	count := 0
	for range list.Info() {
		count++
	}
	require.Equal(t, count, 2)
	require.NoError(t, s.DeleteConsumer(ctx, "D"))
	if _, err := s.Consumer(ctx, "D"); !errors.Is(err, njs.ErrConsumerNotFound) {
		t.Fatalf("deleted consumer: %v", err)
	}
	if err := s.DeleteConsumer(ctx, "D"); !errors.Is(err, njs.ErrConsumerNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestEphemeralInactiveThreshold(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Name: "eph", AckPolicy: njs.AckNonePolicy, InactiveThreshold: 100 * time.Millisecond})
	require.NoError(t, err)
	c := env.eng.lookup("S").lookupConsumer("eph")
	select {
	case <-c.done:
	case <-ctx.Done():
		t.Fatal("ephemeral consumer not removed")
	}
	if _, err := s.Consumer(ctx, "eph"); !errors.Is(err, njs.ErrConsumerNotFound) {
		t.Fatalf("ephemeral consumer still there: %v", err)
	}
}
