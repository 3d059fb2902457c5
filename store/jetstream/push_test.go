package jetstream

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

func TestPushConsumerLegacy(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s.a", 5)
	js, err := env.nc.JetStream()
	require.NoError(t, err)

	// Durable push consumer with explicit acks and a queue group.
	got := make(chan *nats.Msg, 100)
	sub, err := js.QueueSubscribe("s.a", "workers", func(m *nats.Msg) {
		_ = m.Ack()
		got <- m
	}, nats.Durable("PUSH"), nats.ManualAck(), nats.DeliverAll())
	require.NoError(t, err)
	defer sub.Unsubscribe()
	for i := 0; i < 5; i++ {
		select {
		case m := <-got:
			meta, err := m.Metadata()
			require.NoError(t, err)
			require.Equal(t, meta.Sequence.Stream, uint64(i+1))
			require.Equal(t, m.Subject, "s.a")
		case <-ctx.Done():
			t.Fatalf("received %d of 5", i)
		}
	}
	publishN(t, env.js, "s.a", 1)
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("live message not delivered")
	}
	info, err := sub.ConsumerInfo()
	require.NoError(t, err)
	require.Equal(t, info.PushBound, true)
}

func TestPushHeartbeatsAndFlowControl(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	// A raw push consumer shows the status messages themselves.
	inbox := nats.NewInbox()
	sub, err := env.nc.SubscribeSync(inbox)
	require.NoError(t, err)
	js, err := env.nc.JetStream()
	require.NoError(t, err)
	_, err = js.AddConsumer("S", &nats.ConsumerConfig{
		Name: "P", DeliverSubject: inbox, AckPolicy: nats.AckNonePolicy,
		Heartbeat: 100 * time.Millisecond, FlowControl: true,
	})
	require.NoError(t, err)
	m, err := sub.NextMsg(2 * time.Second)
	require.NoError(t, err)
	require.Equal(t, m.Header.Get("Status"), "100")
	require.Equal(t, m.Header.Get("Description"), "Idle Heartbeat")
	require.Equal(t, m.Header.Get("Nats-Last-Consumer"), "0")

	// Publish more than the first flow-control window (2 MiB).
	payload := make([]byte, 64<<10)
	for i := 0; i < 48; i++ {
		_, err := env.js.Publish(ctx, "s", payload)
		require.NoError(t, err)
	}
	var data, fc int
	for data < 48 {
		m, err := sub.NextMsg(2 * time.Second)
		if err != nil {
			t.Fatalf("after %d messages and %d flow controls: %v", data, fc, err)
		}
		switch {
		case len(m.Data) > 0:
			data++
		case m.Header.Get("Description") == "FlowControl Request":
			fc++
			require.NoError(t, m.Respond(nil))
		}
	}
	if fc == 0 {
		t.Fatal("no flow control request")
	}
}

func TestOrderedConsumer(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, Storage: st})
		require.NoError(t, err)
		publishN(t, env.js, "s.a", 100)
		oc, err := s.OrderedConsumer(ctx, njs.OrderedConsumerConfig{FilterSubjects: []string{"s.a"}})
		require.NoError(t, err)
		for i := 0; i < 100; i++ {
			m, err := oc.Next(njs.FetchMaxWait(2 * time.Second))
			require.NoError(t, err)
			require.Equal(t, string(m.Data()), fmt.Sprint(i))
		}
		publishN(t, env.js, "s.a", 1)
		m, err := oc.Next(njs.FetchMaxWait(2 * time.Second))
		require.NoError(t, err)
		require.Equal(t, string(m.Data()), "0")

		// Legacy push ordered consumer.
		js, err := env.nc.JetStream()
		require.NoError(t, err)
		got := make(chan *nats.Msg, 200)
		sub, err := js.Subscribe("s.a", func(m *nats.Msg) { got <- m }, nats.OrderedConsumer())
		require.NoError(t, err)
		defer sub.Unsubscribe()
		for i := 0; i < 101; i++ {
			select {
			case m := <-got:
				meta, err := m.Metadata()
				require.NoError(t, err)
				require.Equal(t, meta.Sequence.Consumer, uint64(i+1))
			case <-ctx.Done():
				t.Fatalf("ordered push: got %d of 101", i)
			}
		}
	})
}

func TestKeyValue(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		kv, err := env.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "cfg", History: 5, Storage: st})
		require.NoError(t, err)

		rev, err := kv.Put(ctx, "a", []byte("1"))
		require.NoError(t, err)
		require.Equal(t, rev, uint64(1))
		e, err := kv.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, string(e.Value()), "1")
		require.Equal(t, e.Revision(), uint64(1))

		if _, err := kv.Create(ctx, "a", []byte("x")); !errors.Is(err, njs.ErrKeyExists) {
			t.Fatalf("create existing: %v", err)
		}
		rev, err = kv.Update(ctx, "a", []byte("2"), 1)
		require.NoError(t, err)
		require.Equal(t, rev, uint64(2))
		if _, err := kv.Update(ctx, "a", []byte("3"), 1); err == nil {
			t.Fatal("update with stale revision")
		}
		_, err = kv.Create(ctx, "b", []byte("b1"))
		require.NoError(t, err)
		require.NoError(t, kv.Delete(ctx, "b"))
		if _, err := kv.Get(ctx, "b"); !errors.Is(err, njs.ErrKeyNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
		// Create over a delete marker works.
		_, err = kv.Create(ctx, "b", []byte("b2"))
		require.NoError(t, err)
		e, err = kv.GetRevision(ctx, "a", 1)
		require.NoError(t, err)
		require.Equal(t, string(e.Value()), "1")

		hist, err := kv.History(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, len(hist), 2)

		w, err := kv.Watch(ctx, "a")
		require.NoError(t, err)
		defer w.Stop()
		select {
		case e := <-w.Updates():
			require.Equal(t, string(e.Value()), "2")
		case <-ctx.Done():
			t.Fatal("watch: no initial value")
		}
		select {
		case e := <-w.Updates():
			if e != nil {
				t.Fatalf("watch: want initial marker, got %v", e)
			}
		case <-ctx.Done():
			t.Fatal("watch: no initial marker")
		}
		_, err = kv.Put(ctx, "a", []byte("live"))
		require.NoError(t, err)
		select {
		case e := <-w.Updates():
			require.Equal(t, string(e.Value()), "live")
		case <-ctx.Done():
			t.Fatal("watch: no live update")
		}
		require.NoError(t, kv.Purge(ctx, "a"))
		if _, err := kv.Get(ctx, "a"); !errors.Is(err, njs.ErrKeyNotFound) {
			t.Fatalf("get purged: %v", err)
		}
		hist, err = kv.History(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, len(hist), 1)

		status, err := kv.Status(ctx)
		require.NoError(t, err)
		require.Equal(t, status.Bucket(), "cfg")

		// Listing with two literal filters uses filter_subjects, so the
		// create subject carries no wildcard: headers-only,
		// last-per-subject and the initial-values marker all take part.
		lister, err := kv.ListKeysFiltered(ctx, "a", "b")
		require.NoError(t, err)
		var listed []string
		for k := range lister.Keys() {
			listed = append(listed, k)
		}
		require.Equal(t, fmt.Sprint(listed), "[b]")

		t.Run("keys", func(t *testing.T) {
			keys, err := kv.Keys(ctx)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(keys), "[b]")
			w, err := kv.WatchAll(ctx)
			require.NoError(t, err)
			defer w.Stop()
			n := 0
			for e := range w.Updates() {
				if e == nil {
					break
				}
				n++
			}
			require.Equal(t, n, 2)
		})

		names := env.js.KeyValueStoreNames(ctx)
		var buckets []string
		for n := range names.Name() {
			buckets = append(buckets, n)
		}
		require.Equal(t, fmt.Sprint(buckets), "[cfg]")
		require.NoError(t, env.js.DeleteKeyValue(ctx, "cfg"))
		if _, err := env.js.KeyValue(ctx, "cfg"); !errors.Is(err, njs.ErrBucketNotFound) {
			t.Fatalf("deleted bucket: %v", err)
		}
	})
}

func TestObjectStore(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		obs, err := env.js.CreateObjectStore(ctx, njs.ObjectStoreConfig{Bucket: "files", Storage: st})
		require.NoError(t, err)
		data := make([]byte, 5<<20+123)
		_, _ = rand.Read(data)
		info, err := obs.Put(ctx, njs.ObjectMeta{Name: "blob"}, bytes.NewReader(data))
		require.NoError(t, err)
		require.Equal(t, info.Size, uint64(len(data)))
		r, err := obs.Get(ctx, "blob")
		require.NoError(t, err)
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		if !bytes.Equal(got, data) {
			t.Fatalf("object differs: %d vs %d bytes", len(got), len(data))
		}
		// Overwrite, then delete.
		_, err = obs.PutBytes(ctx, "blob", []byte("small"))
		require.NoError(t, err)
		small, err := obs.GetBytes(ctx, "blob")
		require.NoError(t, err)
		require.Equal(t, string(small), "small")
		require.NoError(t, obs.Delete(ctx, "blob"))
		if _, err := obs.GetBytes(ctx, "blob"); !errors.Is(err, njs.ErrObjectNotFound) {
			t.Fatalf("deleted object: %v", err)
		}
		t.Run("list", func(t *testing.T) {
			_, err := obs.PutString(ctx, "x", "1")
			require.NoError(t, err)
			list, err := obs.List(ctx)
			require.NoError(t, err)
			require.Equal(t, len(list), 1)
		})
	})
}
