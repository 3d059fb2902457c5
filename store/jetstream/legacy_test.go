package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestLegacyAPI drives the engine with nats.go's original JetStream
// context, which still uses the legacy durable-create subjects.
func TestLegacyAPI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	nc, _ := env.newClient()
	js, err := nc.JetStream()
	mustNoErr(t, err)
	_, err = js.AddStream(&nats.StreamConfig{Name: "L", Subjects: []string{"l.>"}, Storage: nats.FileStorage})
	mustNoErr(t, err)
	for i := 0; i < 10; i++ {
		_, err := js.Publish("l.x", []byte("m"))
		mustNoErr(t, err)
	}
	sub, err := js.PullSubscribe("l.x", "worker")
	mustNoErr(t, err)
	msgs, err := sub.Fetch(10, nats.MaxWait(2*time.Second))
	mustNoErr(t, err)
	mustEqual(t, len(msgs), 10)
	for _, m := range msgs {
		mustNoErr(t, m.AckSync())
	}
	info, err := sub.ConsumerInfo()
	mustNoErr(t, err)
	mustEqual(t, info.NumAckPending, 0)
	mustEqual(t, info.Delivered.Stream, uint64(10))

	// Legacy KV: put, get, watch one key.
	kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: "legacy"})
	mustNoErr(t, err)
	_, err = kv.PutString("k", "v1")
	mustNoErr(t, err)
	e, err := kv.Get("k")
	mustNoErr(t, err)
	mustEqual(t, string(e.Value()), "v1")
	w, err := kv.Watch("k")
	mustNoErr(t, err)
	defer w.Stop()
	e = <-w.Updates()
	mustEqual(t, string(e.Value()), "v1")
	if e := <-w.Updates(); e != nil {
		t.Fatalf("want initial marker, got %v", e)
	}
	_, err = kv.PutString("k", "v2")
	mustNoErr(t, err)
	select {
	case e := <-w.Updates():
		mustEqual(t, string(e.Value()), "v2")
	case <-time.After(5 * time.Second):
		t.Fatal("no live update")
	}
}
