package jetstream

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// pullRaw sends a MSG.NEXT request and returns the inbox subscription.
func pullRaw(t *testing.T, nc *nats.Conn, stream, consumer string, req any) *nats.Subscription {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	var body []byte
	switch r := req.(type) {
	case nil:
	case string:
		body = []byte(r)
	default:
		body, err = json.Marshal(r)
		require.NoError(t, err)
	}
	require.NoError(t, nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+consumer, inbox, body))
	return sub
}

// expectStatus reads the next message and checks its status and
// description.
func expectStatus(t *testing.T, sub *nats.Subscription, status, desc string) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(3 * time.Second)
	require.NoError(t, err)
	require.Equal(t, m.Header.Get("Status"), status)
	require.Equal(t, m.Header.Get("Description"), desc)
	return m
}

func TestPullStatuses(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, MaxWaiting: 1})
	require.NoError(t, err)
	nc := env.nc

	t.Run("no wait, nothing pending", func(t *testing.T) {
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "no_wait": true})
		expectStatus(t, sub, "404", "No Messages")
	})
	t.Run("expires with heartbeats", func(t *testing.T) {
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 5, "expires": 500 * time.Millisecond, "idle_heartbeat": 100 * time.Millisecond})
		hb := expectStatus(t, sub, "100", "Idle Heartbeat")
		require.Equal(t, hb.Header.Get("Nats-Last-Consumer"), "0")
		var m *nats.Msg
		for {
			var err error
			m, err = sub.NextMsg(3 * time.Second)
			require.NoError(t, err)
			if m.Header.Get("Status") != "100" {
				break
			}
		}
		require.Equal(t, m.Header.Get("Status"), "408")
		require.Equal(t, m.Header.Get("Description"), "Request Timeout")
		require.Equal(t, m.Header.Get("Nats-Pending-Messages"), "5")
		require.Equal(t, m.Header.Get("Nats-Pending-Bytes"), "0")
	})
	t.Run("bad heartbeat", func(t *testing.T) {
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "expires": 100 * time.Millisecond, "idle_heartbeat": 100 * time.Millisecond})
		expectStatus(t, sub, "400", "Bad Request - heartbeat value too large")
	})
	t.Run("max waiting", func(t *testing.T) {
		first := pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "expires": 2 * time.Second})
		require.
			// The engine queues a request on the publisher's goroutine, so
			// once the server answered a PING it holds the first request.
			NoError(t, nc.Flush())
		require.Equal(t, env.eng.lookup("S").lookupConsumer("D").info().NumWaiting, 1)
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "expires": time.Second})
		expectStatus(t, sub, "409", "Exceeded MaxWaiting")
		_, err := env.js.Publish(ctx, "s", []byte("x"))
		require.NoError(t, err)
		m, err := first.NextMsg(3 * time.Second)
		require.NoError(t, err)
		require.Equal(t, string(m.Data), "x")
		require.NoError(t, m.Ack())
	})
	t.Run("max bytes", func(t *testing.T) {
		_, err := env.js.Publish(ctx, "s", make([]byte, 100))
		require.NoError(t, err)
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 5, "max_bytes": 50, "expires": time.Second})
		m := expectStatus(t, sub, "409", "Message Size Exceeds MaxBytes")
		require.Equal(t, m.Header.Get("Nats-Pending-Bytes"), "50")
		sub = pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "max_bytes": 4096, "expires": time.Second})
		m, err = sub.NextMsg(3 * time.Second)
		require.NoError(t, err)
		require.Equal(t, len(m.Data), 100)
		require.NoError(t, m.Ack())
		m = expectStatus(t, sub, "409", "Batch Completed")
		require.Equal(t, m.Header.Get("Nats-Pending-Messages"), "0")
	})
	t.Run("consumer deleted", func(t *testing.T) {
		sub := pullRaw(t, nc, "S", "D", map[string]any{"batch": 1, "expires": 5 * time.Second})
		require.NoError(t, nc.Flush())
		require.Equal(t, env.eng.lookup("S").lookupConsumer("D").info().NumWaiting, 1)
		require.NoError(t, s.DeleteConsumer(ctx, "D"))
		expectStatus(t, sub, "409", "Consumer Deleted")
		sub = pullRaw(t, nc, "S", "D", nil)
		if _, err := sub.NextMsg(3 * time.Second); err != nats.ErrNoResponders {
			t.Fatalf("pull from a missing consumer: %v", err)
		}
	})
	t.Run("push consumer", func(t *testing.T) {
		js, _ := nc.JetStream()
		_, err := js.AddConsumer("S", &nats.ConsumerConfig{Durable: "P", DeliverSubject: "deliver.p", AckPolicy: nats.AckExplicitPolicy})
		require.NoError(t, err)
		sub := pullRaw(t, nc, "S", "P", nil)
		expectStatus(t, sub, "409", "Consumer is push based")
	})
}

func TestHeadersOnlyAndDirectGet(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.*"}, AllowDirect: true, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	m := nats.NewMsg("s.a")
	m.Header.Set("K", "v")
	m.Data = []byte("hello")
	_, err = env.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.b", []byte("bee"))
	require.NoError(t, err)

	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{HeadersOnly: true, AckPolicy: njs.AckNonePolicy})
	require.NoError(t, err)
	got, err := c.Next()
	require.NoError(t, err)
	require.Equal(t, len(got.Data()), 0)
	require.Equal(t, got.Headers().Get("Nats-Msg-Size"), "5")
	require.Equal(t, got.Headers().Get("K"), "v")

	// Raw direct get: last by subject in the subject, headers added.
	resp, err := env.nc.Request("$JS.API.DIRECT.GET.S.s.a", nil, time.Second)
	require.NoError(t, err)
	require.Equal(t, string(resp.Data), "hello")
	require.Equal(t, resp.Header.Get("Nats-Stream"), "S")
	require.Equal(t, resp.Header.Get("Nats-Subject"), "s.a")
	require.Equal(t, resp.Header.Get("Nats-Sequence"), "1")
	require.Equal(t, resp.Header.Get("K"), "v")
	if _, err := time.Parse(time.RFC3339Nano, resp.Header.Get("Nats-Time-Stamp")); err != nil {
		t.Fatalf("time stamp: %v", err)
	}
	resp, err = env.nc.Request("$JS.API.DIRECT.GET.S.s.zzz", nil, time.Second)
	require.NoError(t, err)
	require.Equal(t, resp.Header.Get("Status"), "404")
	resp, err = env.nc.Request("$JS.API.DIRECT.GET.S", nil, time.Second)
	require.NoError(t, err)
	require.Equal(t, resp.Header.Get("Status"), "408")

	// Batch direct get ends with EOB.
	sub, err := env.nc.SubscribeSync(nats.NewInbox())
	require.NoError(t, err)
	require.NoError(t, env.nc.PublishRequest("$JS.API.DIRECT.GET.S", sub.Subject, []byte(`{"seq":1,"batch":5}`)))
	for i := 1; i <= 2; i++ {
		m, err := sub.NextMsg(time.Second)
		require.NoError(t, err)
		require.Equal(t, m.Header.Get("Nats-Sequence"), string(rune('0'+i)))
	}
	eob, err := sub.NextMsg(time.Second)
	require.NoError(t, err)
	require.Equal(t, eob.Header.Get("Status"), "204")
	require.Equal(t, eob.Header.Get("Nats-Last-Sequence"), "2")
}

func TestDomain(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{Domain: "gw"})
	ctx := testCtx(t)
	js, err := njs.NewWithDomain(env.nc, "gw")
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage})
	require.NoError(t, err)
	ack, err := js.Publish(ctx, "S", nil)
	require.NoError(t, err)
	require.Equal(t, ack.Domain, "gw")
	_, err = env.js.Stream(ctx, "S")
	require.NoError(t, err)
}

// TestCreateWithWildcardFilterSubject checks the engine's side of
// CONSUMER.CREATE.<stream>.<name>.<filter> with wildcards in the filter,
// injected directly because the broker does not yet route publishes to
// such subjects.
func TestCreateWithWildcardFilterSubject(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	publishN(t, env.js, "s.a.1", 1)
	publishN(t, env.js, "s.b.1", 1)
	publishN(t, env.js, "s.a.2", 1)

	inbox := nats.NewInbox()
	sub, err := env.nc.SubscribeSync(inbox)
	require.NoError(t, err)
	require.NoError(t, env.nc.Flush())
	body := `{"stream_name":"S","config":{"name":"w","filter_subject":"s.a.*","ack_policy":"none"},"action":"create"}`
	env.eng.dispatch("$JS.API.CONSUMER.CREATE.S.w.s.a.*", inbox, nil, []byte(body))
	resp, err := sub.NextMsg(time.Second)
	require.NoError(t, err)
	var info struct {
		Error *struct {
			ErrCode int `json:"err_code"`
		} `json:"error"`
		NumPending uint64 `json:"num_pending"`
	}
	require.NoError(t, json.Unmarshal(resp.Data, &info))
	if info.Error != nil {
		t.Fatalf("create: %s", resp.Data)
	}
	require.Equal(t, info.NumPending, uint64(2))

	// A mismatching filter in the subject is 10131.
	env.eng.dispatch("$JS.API.CONSUMER.CREATE.S.w2.s.b.*", inbox, nil, []byte(body))
	resp, err = sub.NextMsg(time.Second)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(resp.Data, &info))
	if info.Error == nil || info.Error.ErrCode != 10131 {
		t.Fatalf("mismatching filter: %s", resp.Data)
	}
}
