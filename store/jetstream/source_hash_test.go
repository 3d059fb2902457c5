package jetstream

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// TestSourceHashesMatchNatsServer: the origin's identity in a
// Nats-Stream-Source header is the one a real nats-server writes, and
// the API hash of an external origin is the one nats-server wrote for
// leafs' domains (cmd/internal/app compares whole copies from leafs).
func TestSourceHashesMatchNatsServer(t *testing.T) {
	t.Parallel()
	_, _, js := startNATSServerJS(t)
	ctx := testCtx(t)
	a, err := js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "a", 1, 1)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "AGG", Storage: njs.MemoryStorage, Sources: []*njs.StreamSource{{Name: "A"}}})
	require.NoError(t, err)
	srcWaitMsgs(t, ctx, js, "AGG", 1)
	s, err := js.Stream(ctx, "AGG")
	require.NoError(t, err)
	m, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	if f := strings.Fields(m.Header.Get("Nats-Stream-Source")); len(f) != 6 || f[5] != streamIdentity(a.CachedInfo().Created) {
		t.Fatalf("nats-server's Nats-Stream-Source %q; leafbox computes identity %s", f, streamIdentity(a.CachedInfo().Created))
	}
	// Values nats-server v2.15.2 wrote for the domains of leafs.
	require.Equal(t, apiHash("$JS.dev1.API"), "EA9Bttxa")
	require.Equal(t, apiHash("$JS.dev2.API"), "Vma7DI98")
	require.Equal(t, legacyHash("EA9Bttxa"), "ea9bTTXA")
}

// TestSourceResumesLegacyHashHeaders: a stream holding copies whose
// Nats-Stream-Source headers carry the API hash and origin identity as
// leafbox spelled them before it matched nats-server (letters of the
// other case) resumes after them, copying nothing again, and goes on
// with nats-server's spelling.
func TestSourceResumesLegacyHashHeaders(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{Domain: "hub"})
	ctx := testCtx(t)
	js := env.js
	_, err := js.CreateStream(ctx, njs.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "o", 1, 10)
	origin := env.eng.lookup("O")
	ident := streamIdentity(origin.created)
	const api = "$JS.hub.API" // the engine's own domain

	// AGG as an older leafbox left it: the first ten copied.
	cfg := njs.StreamConfig{Name: "AGG", Subjects: []string{"agg"}, Storage: njs.FileStorage}
	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	for i := 1; i <= 10; i++ {
		m := nats.NewMsg("agg")
		m.Data = []byte(strconv.Itoa(i))
		m.Header.Set("Nats-Stream-Source", fmt.Sprintf("O:%s %d > > o.%d %s", legacyHash(apiHash(api)), i, i, legacyHash(ident)))
		_, err := js.PublishMsg(ctx, m)
		require.NoError(t, err)
	}
	cfg.Sources = []*njs.StreamSource{{Name: "O", External: &njs.ExternalStream{APIPrefix: api}}}
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	srcPublish(t, ctx, js, "o", 11, 5)
	srcWaitMsgs(t, ctx, js, "AGG", 15)
	env.restart()
	srcPublish(t, ctx, js, "o", 16, 5)
	srcWaitMsgs(t, ctx, js, "AGG", 20)

	msgs := srcReadAll(t, ctx, js, "AGG", 20)
	for i, m := range msgs[10:] {
		want := fmt.Sprintf("O:%s %d > > o.%d %s", apiHash(api), i+11, i+11, ident)
		if h := m.Headers().Get("Nats-Stream-Source"); h != want || m.Subject() != "o."+strconv.Itoa(i+11) {
			t.Fatalf("AGG message %d: %s with %q, want %q", i+11, m.Subject(), h, want)
		}
	}
}

// TestConsumerCreateNamesStreamIdentity: the response to a direct
// (sourcing) consumer create carries the stream's identity in a
// Nats-Stream-Identity header, as nats-server's does, so that a sourcer
// on another server (over a leaf link) can store it and see a recreated
// origin; other creates carry no header.
func TestConsumerCreateNamesStreamIdentity(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	for _, side := range []struct {
		name string
		nc   *nats.Conn
	}{{"nats-server", hnc}, {"leafbox", env.nc}} {
		t.Run(side.name, func(t *testing.T) {
			ctx := testCtx(t)
			js, err := njs.New(side.nc)
			require.NoError(t, err)
			s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Storage: njs.MemoryStorage})
			require.NoError(t, err)
			for _, direct := range []bool{true, false} {
				name := "C" + strconv.FormatBool(direct)
				body := fmt.Sprintf(`{"stream_name":"O","config":{"name":%q,"deliver_subject":"d.%s","ack_policy":"none","direct":%v}}`, name, name, direct)
				resp, err := side.nc.RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE.O."+name, []byte(body))
				require.NoError(t, err)
				if strings.Contains(string(resp.Data), `"error"`) {
					t.Fatalf("create %s: %s", name, resp.Data)
				}
				want := ""
				if direct {
					want = streamIdentity(s.CachedInfo().Created)
				}
				if got := resp.Header.Get("Nats-Stream-Identity"); got != want {
					t.Fatalf("direct %v: Nats-Stream-Identity %q, want %q", direct, got, want)
				}
			}
		})
	}
}
