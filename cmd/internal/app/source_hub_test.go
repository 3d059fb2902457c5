package app

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// TestSourceMirrorFromHubAcrossHubRestart: a gateway stream sources, and
// another mirrors, a stream of the real nats-server hub by domain ("hub",
// sent as external api $JS.hub.API) over the leaf link. The hub is killed
// and restarted mid-copy; both copies end with every hub message exactly
// once and in order, the mirror at the hub's sequences.
func TestSourceMirrorFromHubAcrossHubRestart(t *testing.T) {
	const before, after = 1000, 200
	p := startJSDomainPair(t, false)
	ctx := jsCtx(t)
	hc := natsConnect(t, p.clientURL)
	hjs, err := jetstream.New(hc)
	require.NoError(t, err)
	_, err = hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "HUBS", Subjects: []string{"hubs.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for i := 1; i <= before; i++ {
		_, err := hjs.PublishAsync("hubs."+strconv.Itoa(i%5), []byte(strconv.Itoa(i)))
		require.NoError(t, err)
	}
	select {
	case <-hjs.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}

	gw := natsConnect(t, "nats://"+p.app.Addr().String())
	gjs, err := jetstream.New(gw)
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "AGG", Storage: jetstream.FileStorage,
		Sources: []*jetstream.StreamSource{{Name: "HUBS", Domain: "hub"}}})
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "MIR", Storage: jetstream.FileStorage,
		Mirror: &jetstream.StreamSource{Name: "HUBS", Domain: "hub"}})
	require.NoError(t, err)

	// Cut the hub once the copies are under way.
	for {
		a, _ := gjs.Stream(ctx, "AGG")
		if a != nil && a.CachedInfo().State.Msgs > 0 {
			t.Logf("hub killed with AGG at %d of %d", a.CachedInfo().State.Msgs, before)
			break
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
	p.hub.Restart()
	hc2 := natsConnect(t, p.clientURL)
	hjs2, err := jetstream.New(hc2)
	require.NoError(t, err)
	for i := before + 1; i <= before+after; i++ {
		for {
			_, err := hjs2.Publish(ctx, "hubs."+strconv.Itoa(i%5), []byte(strconv.Itoa(i)))
			if err == nil {
				break
			}
			// The hub's JetStream may still be recovering.
			select {
			case <-ctx.Done():
				t.Fatalf("publish %d: %v", i, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	const total = before + after
	waitCopy(t, ctx, gjs, "AGG", total)
	waitCopy(t, ctx, gjs, "MIR", total)

	c, err := gjs.OrderedConsumer(ctx, "AGG", jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	for want := 1; want <= total; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			h := strings.Fields(m.Headers().Get("Nats-Stream-Source"))
			if len(h) != 6 || !strings.HasPrefix(h[0], "HUBS:") || h[1] != strconv.Itoa(want) || string(m.Data()) != strconv.Itoa(want) {
				t.Fatalf("AGG message %d: header %q data %q subject %s", want, h, m.Data(), m.Subject())
			}
			if m.Subject() != "hubs."+strconv.Itoa(want%5) {
				t.Fatalf("AGG message %d subject %s", want, m.Subject())
			}
			want++
		}
	}
	mir, err := gjs.Stream(ctx, "MIR")
	require.NoError(t, err)
	for _, seq := range []uint64{1, before, total} {
		got, err := mir.GetMsg(ctx, seq)
		require.NoError(t, err)
		require.Equal(t, string(got.Data), strconv.FormatUint(seq, 10))
	}
	info, err := mir.Info(ctx)
	require.NoError(t, err)
	if info.Mirror == nil || info.Mirror.External == nil || info.Mirror.External.APIPrefix != "$JS.hub.API" || info.Mirror.Lag != 0 {
		t.Fatalf("mirror info %+v", info.Mirror)
	}
}

// waitCopy waits until the stream holds exactly want messages.
func waitCopy(t *testing.T, ctx context.Context, js jetstream.JetStream, name string, want uint64) {
	t.Helper()
	for {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		n := s.CachedInfo().State.Msgs
		if n > want {
			t.Fatalf("%s holds %d messages, want %d", name, n, want)
		}
		if n == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %d messages, want %d: %v", name, n, want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
