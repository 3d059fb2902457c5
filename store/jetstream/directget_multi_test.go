package jetstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// directGetCases are the batch and multi_last direct gets compared with
// nats-server, on the stream directGetScenario builds.
var directGetCases = []string{
	`{"seq":1,"batch":3}`,
	`{"seq":2,"batch":100}`,
	`{"next_by_subj":"k.a","batch":10}`,
	`{"seq":1,"batch":10,"max_bytes":5}`,
	`{"multi_last":["k.*"]}`,
	`{"multi_last":["k.a","k.b"],"up_to_seq":3}`,
	`{"multi_last":["k.a","k.*"]}`,
	`{"multi_last":["k.*"],"batch":2}`,
	`{"multi_last":["k.*"],"seq":5}`,
	`{"multi_last":["k.*"],"max_bytes":1}`,
	`{"multi_last":["z.*"]}`,
	`{"multi_last":["k.a"],"last_by_subj":"k.a"}`,
	`{"multi_last":["k.a"],"next_by_subj":"k.a"}`,
	`{"multi_last":["k.*"],"up_to_seq":2,"up_to_time":"2020-01-01T00:00:00Z"}`,
	`{"multi_last":["k.*"],"up_to_time":"2020-01-01T00:00:00Z"}`,
	`{"multi_last":["m.>"]}`,
	`{"multi_last":["m.1","m.2","k.c"]}`,
	`{"seq":1,"batch":10,"up_to_seq":3}`,
	`{"start_time":"2020-01-01T00:00:00Z","batch":2}`,
	`{"seq":1,"batch":2,"no_hdr":true}`,
	`{"seq":99999,"batch":2}`,
	`{"next_by_subj":"k.*","batch":3,"seq":3}`,
	`{"multi_last":["k.*"],"up_to_time":"2999-01-01T00:00:00Z"}`,
	`{"seq":2,"batch":-1}`,
	`{"multi_last":["k.>"],"batch":-1,"seq":4}`,
	`{"multi_last":[">"],"up_to_seq":3}`,
}

// directGetScenario fills stream K on url and records every direct get
// of directGetCases: each reply as its status, its headers (time stamps
// reduced to whether they parse) and its body, in the order they came.
func directGetScenario(t *testing.T, url string) [][]string {
	t.Helper()
	nc, err := nats.Connect(url, nats.NoReconnect())
	require.NoError(t, err)
	defer nc.Close()
	js, err := njs.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "K", Subjects: []string{"k.>", "m.>"}, AllowDirect: true, Storage: njs.FileStorage})
	require.NoError(t, err)
	pub := func(subj, body string, hdr nats.Header) {
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte(body), Header: hdr})
		require.NoError(t, err)
	}
	pub("k.a", "a1", nil)
	pub("k.b", "b1", nil)
	pub("k.a", "a2", nil)
	pub("k.c", "c1", nats.Header{"X-Mine": []string{"yes"}})
	pub("k.b", "b2", nil)
	pub("k.d", "d1", nil)
	// m.> holds one subject more than a multi_last may match.
	for i := range directMultiMax + 1 {
		_, err := js.PublishAsync(fmt.Sprintf("m.%d", i), []byte("m"))
		require.NoError(t, err)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("async publishes not acked")
	}

	var out [][]string
	for _, req := range directGetCases {
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		require.NoError(t, err)
		require.NoError(t, nc.PublishRequest("$JS.API.DIRECT.GET.K", inbox, []byte(req)))
		var replies []string
		for {
			m, err := sub.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatalf("%s on %s: after %q: %v", req, url, replies, err)
			}
			replies = append(replies, describeDirect(m))
			if m.Header.Get("Status") != "" {
				break
			}
		}
		require.NoError(t, sub.Unsubscribe())
		out = append(out, replies)
	}
	return out
}

// describeDirect renders a direct get reply for comparison.
func describeDirect(m *nats.Msg) string {
	var fields []string
	for k, vs := range m.Header {
		for _, v := range vs {
			if k == "Nats-Time-Stamp" {
				_, err := time.Parse(time.RFC3339Nano, v)
				v = fmt.Sprint("parses:", err == nil)
			}
			fields = append(fields, k+"="+v)
		}
	}
	slices.Sort(fields)
	return strings.Join(fields, " ") + " | " + string(m.Data)
}

// TestDirectGetBatchAndMultiLastVsNatsServer sends the same batch and
// multi_last direct gets to leafbox and to nats-server and requires the
// same replies, in the same order, with the same headers and bodies.
func TestDirectGetBatchAndMultiLastVsNatsServer(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Config: fmt.Sprintf("jetstream {\n  store_dir: %q\n}", t.TempDir()),
	})
	ours := directGetScenario(t, env.srv.ClientURL())
	theirs := directGetScenario(t, hub.ClientURL())
	for i, req := range directGetCases {
		if !slices.Equal(ours[i], theirs[i]) {
			t.Errorf("%s:\nleafbox:\n  %s\nnats-server:\n  %s", req,
				strings.Join(ours[i], "\n  "), strings.Join(theirs[i], "\n  "))
		}
	}
	// Spot checks that the comparison compared something.
	want := []string{
		"Nats-Last-Sequence=0 Nats-Num-Pending=3 Nats-Sequence=3 Nats-Stream=K Nats-Subject=k.a Nats-Time-Stamp=parses:true | a2",
	}
	if got := ours[4]; len(got) != 5 || got[0] != want[0] ||
		!strings.HasPrefix(got[4], "Description=EOB Nats-Last-Sequence=6 Nats-Num-Pending=0 Nats-UpTo-Sequence=") {
		t.Errorf("multi_last k.*: %q", got)
	}
	if got := ours[15]; len(got) != 1 || !strings.Contains(got[0], "Status=413") {
		t.Errorf("multi_last over the limit: %q", got)
	}
}
