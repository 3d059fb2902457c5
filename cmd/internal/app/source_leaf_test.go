package app

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// sourceLeafGateway is a leafbox gateway with JetStream (domain "gw") and
// a leaf listener on a pinned port, so that it can be restarted in place.
type sourceLeafGateway struct {
	t    *testing.T
	cfg  *Config
	app  *App
	port int
}

// startSourceLeafGateway starts the gateway; it is shut down in
// t.Cleanup.
func startSourceLeafGateway(t *testing.T) *sourceLeafGateway {
	t.Helper()
	g := &sourceLeafGateway{t: t, port: leaftest.FreePort(t)}
	g.cfg = gatewayConfig(t, fmt.Sprintf("http_port: -1\nserver_name: gw-src\n"+
		"jetstream: {store_dir: %q, domain: gw}\nleafnodes: {listen: '127.0.0.1:%d'}\n", t.TempDir(), g.port))
	g.app = startConfig(t, g.cfg, Flags{})
	return g
}

// restart shuts the gateway down and starts it again on the same store
// and leaf port.
func (g *sourceLeafGateway) restart() {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(g.t, g.app.Shutdown(ctx))
	g.app = startConfig(g.t, g.cfg, Flags{})
}

// js connects a JetStream client to the gateway.
func (g *sourceLeafGateway) js(t *testing.T) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(natsConnect(t, "nats://"+g.app.Addr().String()))
	require.NoError(t, err)
	return js
}

// waitLeafDomain waits until an attached leaf named name announced the
// JetStream API of its domain.
func waitLeafDomain(t *testing.T, a *App, name, domain string) {
	t.Helper()
	waitLeafs(t, a, "leaf "+name+" announcing $JS."+domain+".API.CONSUMER.>", func(ls []leaf.AcceptedStatus) bool {
		return slices.ContainsFunc(ls, func(s leaf.AcceptedStatus) bool {
			return s.Name == name && slices.Contains(s.Subjects, "$JS."+domain+".API.CONSUMER.>")
		})
	})
}

// publishRetry publishes data on subj through js with the message id id,
// retrying while the server's JetStream is not ready (just restarted)
// until ctx ends; the id keeps a retry of a publish whose ack was lost
// from storing it twice.
func publishRetry(t *testing.T, ctx context.Context, js jetstream.JetStream, subj, data, id string) {
	t.Helper()
	for {
		_, err := js.Publish(ctx, subj, []byte(data), jetstream.WithMsgID(id))
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("publish %s (%s): %v", subj, id, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestSourceMirrorFromAttachedLeaf: gateway streams source, and mirror,
// streams of leafs attached to the gateway's leaf listener, named by the
// leaf's JetStream domain (external api $JS.<domain>.API): ORDERS of a
// real nats-server with domain "dev1" and SENSORS of a leafbox with
// domain "dev2". AGG sources both (ORDERS through a subject transform),
// ONE sources ORDERS filtered, MIR mirrors ORDERS and MIR2 mirrors
// SENSORS (created with raw JSON, "deliver": "" as the nats CLI sends
// it). The copies are set up before any leaf attaches, and run into the
// origin consumers' flow control. In mid-copy the dev1 link is cut while
// both leafs go on publishing, the nats-server leaf is killed and
// restarted on its store, and the gateway is restarted; every copy ends
// with each origin message exactly once, in order, with nats-server's
// Nats-Stream-Source headers, and the mirrors at the origins' sequences.
func TestSourceMirrorFromAttachedLeaf(t *testing.T) {
	const n = 300 // messages per phase and origin
	ctx, cancel := context.WithTimeout(context.Background(), 9*testTimeout)
	defer cancel()
	g := startSourceLeafGateway(t)
	gjs := g.js(t)
	_, err := gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "AGG", Storage: jetstream.FileStorage,
		Sources: []*jetstream.StreamSource{
			{Name: "ORDERS", Domain: "dev1", SubjectTransforms: []jetstream.SubjectTransformConfig{
				{Source: "orders.*", Destination: "dev1.orders.{{wildcard(1)}}"}}},
			{Name: "SENSORS", Domain: "dev2"},
		}})
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "MIR", Storage: jetstream.FileStorage,
		Mirror: &jetstream.StreamSource{Name: "ORDERS", Domain: "dev1"}})
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "ONE", Storage: jetstream.FileStorage,
		Sources: []*jetstream.StreamSource{{Name: "ORDERS", Domain: "dev1", FilterSubject: "orders.1"}}})
	require.NoError(t, err)
	resp, err := natsConnect(t, "nats://"+g.app.Addr().String()).Request("$JS.API.STREAM.CREATE.MIR2",
		[]byte(`{"name":"MIR2","storage":"file","mirror":{"name":"SENSORS","external":{"api":"$JS.dev2.API","deliver":""}}}`), testTimeout)
	require.NoError(t, err)
	if strings.Contains(string(resp.Data), `"error"`) {
		t.Fatalf("create MIR2: %s", resp.Data)
	}

	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", g.port))
	dev1 := leaftest.StartHub(t, leaftest.HubOptions{Name: "dev1-leaf",
		Config: fmt.Sprintf("jetstream { store_dir: %q, domain: dev1 }\n", t.TempDir()),
		Leaf:   fmt.Sprintf("remotes: [{url: %q}]", proxy.LeafURL())})
	dev2 := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: dev2-box\njetstream: {store_dir: %q, domain: dev2}\n"+
		"leafnodes: {remotes: [{url: 'nats-leaf://127.0.0.1:%d'}]}\n", t.TempDir(), g.port), Flags{})
	waitLeafDomain(t, g.app, "dev1-leaf", "dev1")
	waitLeafDomain(t, g.app, "dev2-box", "dev2")

	ljs, err := jetstream.New(natsConnect(t, dev1.ClientURL()))
	require.NoError(t, err)
	_, err = ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	bjs, err := jetstream.New(natsConnect(t, "nats://"+dev2.Addr().String()))
	require.NoError(t, err)
	_, err = bjs.CreateStream(ctx, jetstream.StreamConfig{Name: "SENSORS", Subjects: []string{"sensors.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)

	// orders and sensors count what each origin holds.
	var orders, sensors int
	publish := func(ljs jetstream.JetStream) {
		t.Helper()
		// The first publish waits for a just restarted JetStream; the
		// rest go out at once, so that the copies lag behind.
		orders++
		publishRetry(t, ctx, ljs, "orders."+strconv.Itoa(orders%3), leafOriginPayload(orders), "o"+strconv.Itoa(orders))
		sensors++
		publishRetry(t, ctx, bjs, "sensors."+strconv.Itoa(sensors%2), leafOriginPayload(sensors), "s"+strconv.Itoa(sensors))
		var acks []jetstream.PubAckFuture
		for range n - 1 {
			orders++
			f, err := ljs.PublishAsync("orders."+strconv.Itoa(orders%3), []byte(leafOriginPayload(orders)))
			require.NoError(t, err)
			sensors++
			g, err := bjs.PublishAsync("sensors."+strconv.Itoa(sensors%2), []byte(leafOriginPayload(sensors)))
			require.NoError(t, err)
			acks = append(acks, f, g)
		}
		for _, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatalf("publish %s: %v", f.Msg().Subject, err)
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
	counts := func() string {
		var b strings.Builder
		for _, name := range []string{"AGG", "MIR", "ONE", "MIR2"} {
			s, err := gjs.Stream(ctx, name)
			require.NoError(t, err)
			fmt.Fprintf(&b, " %s=%d", name, s.CachedInfo().State.Msgs)
		}
		return fmt.Sprintf("orders=%d sensors=%d:%s", orders, sensors, b.String())
	}

	// Cut the dev1 link in mid-copy; both leafs go on publishing.
	publish(ljs)
	awaitMsgs(t, ctx, gjs, "MIR", n/3)
	proxy.Cut()
	t.Logf("dev1 link cut at %s", counts())
	waitLeafs(t, g.app, "dev1-leaf to drop", func(ls []leaf.AcceptedStatus) bool {
		return !slices.ContainsFunc(ls, func(s leaf.AcceptedStatus) bool { return s.Name == "dev1-leaf" })
	})
	publish(ljs)
	proxy.Restore()

	// Kill the nats-server leaf in mid-copy and restart it on its store.
	awaitMsgs(t, ctx, gjs, "MIR", uint64(orders-n+1))
	dev1.Restart()
	t.Logf("dev1 restarted at %s", counts())
	ljs, err = jetstream.New(natsConnect(t, dev1.ClientURL()))
	require.NoError(t, err)
	publish(ljs)

	// Restart the gateway in mid-copy.
	awaitMsgs(t, ctx, gjs, "MIR", uint64(orders-n+1))
	g.restart()
	gjs = g.js(t)
	t.Logf("gateway restarted at %s", counts())
	publish(ljs)

	waitCopy(t, ctx, gjs, "AGG", uint64(orders+sensors))
	waitCopy(t, ctx, gjs, "MIR", uint64(orders))
	waitCopy(t, ctx, gjs, "MIR2", uint64(sensors))
	waitCopy(t, ctx, gjs, "ONE", uint64((orders+2)/3))

	for _, o := range []struct {
		js     jetstream.JetStream
		stream string
		want   int
	}{{ljs, "ORDERS", orders}, {bjs, "SENSORS", sensors}} {
		s, err := o.js.Stream(ctx, o.stream)
		require.NoError(t, err)
		if st := s.CachedInfo().State; st.Msgs != uint64(o.want) || st.LastSeq != uint64(o.want) {
			t.Fatalf("origin %s state %+v, want %d messages", o.stream, st, o.want)
		}
	}

	// The copies run on steadily: one more phase, past the origin
	// consumers' flow-control window, is copied by the same consumers (a
	// lost flow-control reply stalls the consumer, and the sourcer
	// creates a new one), and idle heartbeats reach every sourcer.
	creates := watchCreates(t, natsConnect(t, "nats://"+g.app.Addr().String()))
	publish(ljs)
	waitCopy(t, ctx, gjs, "AGG", uint64(orders+sensors))
	waitCopy(t, ctx, gjs, "MIR", uint64(orders))
	waitCopy(t, ctx, gjs, "MIR2", uint64(sensors))
	waitCopy(t, ctx, gjs, "ONE", uint64((orders+2)/3))
	awaitHeartbeats(t, ctx, gjs, time.Now(), "AGG", "ONE", "MIR", "MIR2")
	if c := creates(); len(c) > 0 {
		t.Fatalf("origin consumers recreated: %q", c)
	}
	for _, name := range []string{"AGG", "ONE"} {
		s, err := gjs.Stream(ctx, name)
		require.NoError(t, err)
		for _, si := range s.CachedInfo().Sources {
			if si.Error != nil || si.Lag != 0 || si.External == nil || si.Active > 2*time.Second {
				t.Fatalf("%s source %+v (error %+v)", name, si, si.Error)
			}
		}
	}

	checkSourced(t, ctx, gjs, "AGG", map[string]sourcedWant{
		"ORDERS": {count: orders, filter: "orders.*", dest: "dev1.orders.{{wildcard(1)}}",
			subject: func(i int) string { return "orders." + strconv.Itoa(i%3) },
			stored:  func(i int) string { return "dev1.orders." + strconv.Itoa(i%3) }},
		"SENSORS": {count: sensors, filter: ">", dest: ">", subject: func(i int) string { return "sensors." + strconv.Itoa(i%2) }},
	})
	checkSourced(t, ctx, gjs, "ONE", map[string]sourcedWant{
		"ORDERS": {count: orders, filter: "orders.1", dest: ">", every: 3, subject: func(i int) string { return "orders." + strconv.Itoa(i%3) }},
	})
	checkMirrored(t, ctx, gjs, "MIR", "$JS.dev1.API", orders, func(i int) string { return "orders." + strconv.Itoa(i%3) })
	checkMirrored(t, ctx, gjs, "MIR2", "$JS.dev2.API", sensors, func(i int) string { return "sensors." + strconv.Itoa(i%2) })
}

// watchCreates records, on the gateway, the origin consumer creates its
// sourcers send toward a domain.
func watchCreates(t *testing.T, nc *nats.Conn) func() []string {
	t.Helper()
	var mu sync.Mutex
	var creates []string
	sub, err := nc.Subscribe("$JS.*.API.CONSUMER.CREATE.>", func(m *nats.Msg) {
		mu.Lock()
		creates = append(creates, m.Subject)
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, sub.SetPendingLimits(-1, -1))
	require.NoError(t, nc.Flush())
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(creates)
	}
}

// awaitHeartbeats waits until every source and mirror of the streams
// has heard from its origin consumer after since, which only an idle
// heartbeat does once the copies are complete.
func awaitHeartbeats(t *testing.T, ctx context.Context, js jetstream.JetStream, since time.Time, streams ...string) {
	t.Helper()
	awaitCond(t, ctx, "idle heartbeats on every copy", func() (bool, string) {
		var state strings.Builder
		ok := true
		for _, name := range streams {
			s, err := js.Stream(ctx, name)
			require.NoError(t, err)
			info := s.CachedInfo()
			srcs := info.Sources
			if info.Mirror != nil {
				srcs = append(srcs, info.Mirror)
			}
			for _, si := range srcs {
				fmt.Fprintf(&state, "%s<-%s active %v; ", name, si.Name, si.Active)
				if si.Active < 0 || si.Active > time.Since(since)-100*time.Millisecond {
					ok = false
				}
			}
		}
		return ok, state.String()
	})
}

// awaitMsgs waits until the stream holds at least want messages.
func awaitMsgs(t *testing.T, ctx context.Context, js jetstream.JetStream, name string, want uint64) {
	t.Helper()
	for {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		if s.CachedInfo().State.Msgs >= want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %d messages, want at least %d: %v", name, s.CachedInfo().State.Msgs, want, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// checkMirrored requires the mirror to hold the origin's messages 1..count
// at their origin sequences, on their subjects, and its info to name the
// origin's API prefix with no lag.
func checkMirrored(t *testing.T, ctx context.Context, js jetstream.JetStream, name, api string, count int, subject func(int) string) {
	t.Helper()
	mir, err := js.Stream(ctx, name)
	require.NoError(t, err)
	info, err := mir.Info(ctx)
	require.NoError(t, err)
	if info.State.FirstSeq != 1 || info.State.LastSeq != uint64(count) || info.State.Msgs != uint64(count) {
		t.Fatalf("%s state %+v, want 1..%d", name, info.State, count)
	}
	if info.Mirror == nil || info.Mirror.External == nil || info.Mirror.External.APIPrefix != api || info.Mirror.Lag != 0 {
		t.Fatalf("%s mirror info %+v", name, info.Mirror)
	}
	c, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	for i := 1; i <= count; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			md, err := m.Metadata()
			require.NoError(t, err)
			if md.Sequence.Stream != uint64(i) || string(m.Data()) != leafOriginPayload(i) || m.Subject() != subject(i) {
				d, _, _ := strings.Cut(string(m.Data()), ":")
				t.Fatalf("%s message %d: seq %d data %q… subject %s", name, i, md.Sequence.Stream, d, m.Subject())
			}
			if h := m.Headers().Get("Nats-Stream-Source"); h != "" {
				t.Fatalf("%s message %d has Nats-Stream-Source %q", name, i, h)
			}
			i++
		}
	}
}

// leafOriginPayload is the i-th message of an origin: its number, padded so
// that a phase's copy is several MiB and runs into the origin consumer's
// flow control (nats-server asks for a reply past 1 MiB in flight and
// stalls at 2 MiB).
func leafOriginPayload(i int) string {
	return strconv.Itoa(i) + ":" + strings.Repeat("p", 8<<10)
}

// sourcedWant is what a sourcing stream must hold of one origin: the
// messages 1..count (every every-th one when every > 1, starting with
// the first that matches), with the subject the origin stored and, when
// stored is set, the transformed subject.
type sourcedWant struct {
	count, every    int
	filter, dest    string
	subject, stored func(i int) string
}

// checkSourced reads the stream through and requires, for each origin,
// its messages exactly once and in order, each with nats-server's
// Nats-Stream-Source header "<name>:<api hash> <seq> <filter> <dest>
// <subject> <identity>".
func checkSourced(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string, want map[string]sourcedWant) {
	t.Helper()
	next := map[string]int{}
	for name, w := range want {
		i := 1
		for w.every > 1 && i%w.every != 1 {
			i++
		}
		next[name] = i
	}
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	total := s.CachedInfo().State.Msgs
	for got := uint64(0); got < total; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			got++
			h := strings.Fields(m.Headers().Get("Nats-Stream-Source"))
			if len(h) != 6 {
				t.Fatalf("%s message %d: header %q", stream, got, h)
			}
			name, _, _ := strings.Cut(h[0], ":")
			w, ok := want[name]
			if !ok || !strings.Contains(h[0], ":") {
				t.Fatalf("%s message %d from %q", stream, got, h[0])
			}
			i := next[name]
			stored := w.subject(i)
			if w.stored != nil {
				stored = w.stored(i)
			}
			if h[1] != strconv.Itoa(i) || h[2] != w.filter || h[3] != w.dest || h[4] != w.subject(i) ||
				string(m.Data()) != leafOriginPayload(i) || m.Subject() != stored {
				d, _, _ := strings.Cut(string(m.Data()), ":")
				t.Fatalf("%s message %d: want %s #%d, got header %q data %q… subject %s", stream, got, name, i, h, d, m.Subject())
			}
			step := max(w.every, 1)
			next[name] = i + step
		}
	}
	for name, w := range want {
		if next[name] <= w.count {
			t.Fatalf("%s: %s stopped before #%d of %d", stream, name, next[name], w.count)
		}
	}
}

// TestSourceFromAttachedLeafMatchesNatsServer runs the same copies with a
// nats-server v2.15.2 and with leafbox as the gateway, each with a
// nats-server leaf (domain dev1) and a leafbox leaf (domain dev2)
// attached: AGG sources both origins (one through a subject transform),
// ONE sources one filtered, MIR mirrors one. leafbox stores what
// nats-server stores: the same subjects, payloads and Nats-Stream-Source
// headers (the origin's identity, a hash of its creation time, aside),
// and the mirror at the same sequences.
func TestSourceFromAttachedLeafMatchesNatsServer(t *testing.T) {
	const n = 20
	ctx, cancel := context.WithTimeout(context.Background(), 6*testTimeout)
	defer cancel()
	run := func(t *testing.T, gatewayURL string, leafPort int) map[string][]string {
		dev1 := leaftest.StartHub(t, leaftest.HubOptions{Name: "dev1-leaf",
			Config: fmt.Sprintf("jetstream { store_dir: %q, domain: dev1 }\n", t.TempDir()),
			Leaf:   fmt.Sprintf("remotes: [{url: 'nats-leaf://127.0.0.1:%d'}]", leafPort)})
		dev2 := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: dev2-box\njetstream: {store_dir: %q, domain: dev2}\n"+
			"leafnodes: {remotes: [{url: 'nats-leaf://127.0.0.1:%d'}]}\n", t.TempDir(), leafPort), Flags{})
		for _, o := range []struct{ url, stream, subj string }{
			{dev1.ClientURL(), "ORDERS", "orders"}, {"nats://" + dev2.Addr().String(), "SENSORS", "sensors"},
		} {
			js, err := jetstream.New(natsConnect(t, o.url))
			require.NoError(t, err)
			_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: o.stream, Subjects: []string{o.subj + ".>"}})
			require.NoError(t, err)
			for i := 1; i <= n; i++ {
				m := nats.NewMsg(o.subj + "." + strconv.Itoa(i%3))
				m.Data = []byte(strconv.Itoa(i))
				m.Header.Set("Seq", strconv.Itoa(i))
				_, err := js.PublishMsg(ctx, m)
				require.NoError(t, err)
			}
		}
		gjs, err := jetstream.New(natsConnect(t, gatewayURL))
		require.NoError(t, err)
		for _, cfg := range []jetstream.StreamConfig{
			{Name: "AGG", Sources: []*jetstream.StreamSource{
				{Name: "ORDERS", Domain: "dev1", SubjectTransforms: []jetstream.SubjectTransformConfig{
					{Source: "orders.*", Destination: "dev1.orders.{{wildcard(1)}}"}}},
				{Name: "SENSORS", Domain: "dev2"}}},
			{Name: "ONE", Sources: []*jetstream.StreamSource{{Name: "SENSORS", Domain: "dev2", FilterSubject: "sensors.1"}}},
			{Name: "MIR", Mirror: &jetstream.StreamSource{Name: "ORDERS", Domain: "dev1"}},
		} {
			_, err := gjs.CreateStream(ctx, cfg)
			require.NoError(t, err)
		}
		waitCopy(t, ctx, gjs, "AGG", 2*n)
		waitCopy(t, ctx, gjs, "ONE", (n+2)/3)
		waitCopy(t, ctx, gjs, "MIR", n)
		out := map[string][]string{}
		for _, name := range []string{"AGG", "ONE", "MIR"} {
			s, err := gjs.Stream(ctx, name)
			require.NoError(t, err)
			for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
				m, err := s.GetMsg(ctx, seq)
				require.NoError(t, err)
				h := strings.Fields(m.Header.Get("Nats-Stream-Source"))
				if len(h) == 6 && len(h[5]) == 8 {
					h[5] = "<identity>" // the origin's creation time
				}
				// Sources are copied concurrently, so only each origin's
				// messages keep their order: AGG is compared per origin,
				// and a mirror by sequence.
				key, line := name, fmt.Sprintf("%s %q Seq=%s source=%q", m.Subject, m.Data, m.Header.Get("Seq"), h)
				if len(h) > 0 {
					key += " from " + h[0]
				} else {
					line = fmt.Sprintf("%d %s", m.Sequence, line)
				}
				out[key] = append(out[key], line)
			}
		}
		return out
	}

	var want, got map[string][]string
	t.Run("nats-server", func(t *testing.T) {
		hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "ns-gw",
			Config: fmt.Sprintf("jetstream { store_dir: %q, domain: gw }\n", t.TempDir())})
		want = run(t, hub.ClientURL(), hub.LeafPort)
	})
	t.Run("leafbox", func(t *testing.T) {
		a := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: gw-src\njetstream: {store_dir: %q, domain: gw}\n"+
			"leafnodes: {listen: '127.0.0.1:-1'}\n", t.TempDir()), Flags{})
		got = run(t, "nats://"+a.Addr().String(), a.LeafListener().Addr().(*net.TCPAddr).Port)
	})
	if want == nil || got == nil {
		t.Fatal("a gateway run failed")
	}
	if len(want) != 4 { // AGG from each origin, ONE, MIR
		t.Fatalf("nats-server's copies: %v", slices.Sorted(maps.Keys(want)))
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[name], want[name]) {
			t.Errorf("%s differs from nats-server's:\nleafbox:\n%s\nnats-server:\n%s", name,
				strings.Join(got[name], "\n"), strings.Join(want[name], "\n"))
		}
	}
}
