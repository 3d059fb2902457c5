package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/require"
)

// TestLegacyAPI drives the engine with nats.go's original JetStream
// context, which still uses the legacy durable-create subjects.
func TestLegacyAPI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	nc, _ := env.newClient()
	js, err := nc.JetStream()
	require.NoError(t, err)
	_, err = js.AddStream(&nats.StreamConfig{Name: "L", Subjects: []string{"l.>"}, Storage: nats.FileStorage})
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		_, err := js.Publish("l.x", []byte("m"))
		require.NoError(t, err)
	}
	sub, err := js.PullSubscribe("l.x", "worker")
	require.NoError(t, err)
	msgs, err := sub.Fetch(10, nats.MaxWait(2*time.Second))
	require.NoError(t, err)
	require.Equal(t, len(msgs), 10)
	for _, m := range msgs {
		require.NoError(t, m.AckSync())
	}
	info, err := sub.ConsumerInfo()
	require.NoError(t, err)
	require.Equal(t, info.NumAckPending, 0)
	require.Equal(t, info.Delivered.Stream, uint64(10))

	// Legacy KV: put, get, watch one key.
	kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: "legacy"})
	require.NoError(t, err)
	_, err = kv.PutString("k", "v1")
	require.NoError(t, err)
	e, err := kv.Get("k")
	require.NoError(t, err)
	require.Equal(t, string(e.Value()), "v1")
	w, err := kv.Watch("k")
	require.NoError(t, err)
	defer w.Stop()
	e = <-w.Updates()
	require.Equal(t, string(e.Value()), "v1")
	if e := <-w.Updates(); e != nil {
		t.Fatalf("want initial marker, got %v", e)
	}
	_, err = kv.PutString("k", "v2")
	require.NoError(t, err)
	select {
	case e := <-w.Updates():
		require.Equal(t, string(e.Value()), "v2")
	case <-time.After(5 * time.Second):
		t.Fatal("no live update")
	}
}
