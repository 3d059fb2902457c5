package jetstream

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// TestDomainAPI: with a domain, the engine serves $JS.<domain>.API as
// nats-server's domain mappings do, KV included ($JS.<d>.API.$KV.> is
// republished on $KV.>), and nothing outside the nine mapped sources.
func TestDomainAPI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{Domain: "edge"})
	ctx := testCtx(t)
	djs, err := njs.NewWithDomain(env.nc, "edge")
	require.NoError(t, err)
	ai, err := djs.AccountInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, ai.Domain, "edge")
	kv, err := djs.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "cfg"})
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "mode", []byte("eco"))
	require. // on $JS.edge.API.$KV.cfg.mode
			NoError(t, err)
	e, err := kv.Get(ctx, "mode")
	require.NoError(t, err)
	if string(e.Value()) != "eco" || e.Revision() != rev {
		t.Fatalf("kv get: %q rev %d, want eco rev %d", e.Value(), e.Revision(), rev)
	}
	// A subject outside the mapped sources finds no responder.
	_, err = env.nc.Request("$JS.edge.API.NOPE", nil, 200*time.Millisecond)
	if err != nats.ErrNoResponders {
		t.Fatalf("request outside the mapping: %v, want no responders", err)
	}
}

// TestRequiredAPILevel: a request that requires a higher API level than
// the engine's gets 10185, as nats-server answers it, and a nats-server
// hub's source consumer (direct push, flow control, heartbeats), asked for
// without the level header, is served.
func TestRequiredAPILevel(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "X", Subjects: []string{"x.>"}})
	require.NoError(t, err)
	inbox := nats.NewInbox()
	deliveries, err := env.nc.SubscribeSync(inbox)
	require.NoError(t, err)
	body := `{"stream_name":"X","config":{"name":"JS_SRC_1","deliver_subject":"` + inbox +
		`","ack_policy":"none","max_deliver":1,"idle_heartbeat":1000000000,"flow_control":true,"direct":true}}`
	request := func(level string) map[string]any {
		t.Helper()
		m := nats.NewMsg("$JS.API.CONSUMER.CREATE.X")
		m.Data = []byte(body)
		if level != "" {
			m.Header.Set("Nats-Required-Api-Level", level)
		}
		resp, err := env.nc.RequestMsg(m, 5*time.Second)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(resp.Data, &out))
		return out
	}
	for _, level := range []string{"5", "4", "x"} {
		resp := request(level)
		apiErr, _ := resp["error"].(map[string]any)
		if apiErr == nil || apiErr["err_code"] != float64(10185) {
			t.Fatalf("level %s: %v", level, resp)
		}
	}
	if resp := request(""); resp["error"] != nil || resp["config"] == nil {
		t.Fatalf("direct consumer create: %v", resp)
	}
	// Up to level 3 the request is served by its fields (the nats CLI
	// asks for 3 to create a plain stream).
	m := nats.NewMsg("$JS.API.STREAM.CREATE.Y")
	m.Data = []byte(`{"name":"Y","subjects":["y.>"]}`)
	m.Header.Set("Nats-Required-Api-Level", "3")
	resp, err := env.nc.RequestMsg(m, 5*time.Second)
	require.NoError(t, err)
	if !strings.Contains(string(resp.Data), `"config"`) || strings.Contains(string(resp.Data), `"error"`) {
		t.Fatalf("stream create at level 3: %s", resp.Data)
	}
	_, err = env.js.Publish(ctx, "x.1", []byte("hello"))
	require.NoError(t, err)
	m, err = deliveries.NextMsg(5 * time.Second)
	require.NoError(t, err)
	if m.Subject != "x.1" || string(m.Data) != "hello" {
		t.Fatalf("delivery %q %q", m.Subject, m.Data)
	}
}
