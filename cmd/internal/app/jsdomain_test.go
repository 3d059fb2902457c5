package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/tooltest"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// jsDomainPair is a real nats-server hub with JetStream in domain "hub" and
// a gateway App with JetStream in domain "edge", linked as a leaf through
// a leaftest.Proxy that can cut the link.
type jsDomainPair struct {
	hub       *leaftest.Hub
	app       *App
	proxy     *leaftest.Proxy
	clientURL string // the hub's client URL, with credentials when bound
}

// startJSDomainPair starts the hub and the gateway and waits until the
// link is up and the hub has seen the gateway's interest. With bound, the
// hub binds the link to its account TEAM (JetStream enabled) by the
// leaf's user, instead of its global account.
func startJSDomainPair(t *testing.T, bound bool) *jsDomainPair {
	t.Helper()
	conf := fmt.Sprintf("jetstream { store_dir: %q, domain: hub }\nhttp: \"127.0.0.1:-1\"\n", t.TempDir())
	if bound {
		conf += "accounts { TEAM: { jetstream: enabled, users: [{user: leaf, password: s3cret}, {user: app, password: app}] } }\n"
	}
	// no_advertise: the link knows only the proxy, so a cut holds.
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-jsd", Config: conf, Leaf: "no_advertise: true"})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	leafURL, clientURL := "nats-leaf://"+proxy.Addr(), hub.ClientURL()
	if bound {
		leafURL = "nats-leaf://leaf:s3cret@" + proxy.Addr()
		clientURL = fmt.Sprintf("nats://app:app@127.0.0.1:%d", hub.ClientPort)
	}
	a := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: gw-jsd\njetstream: {store_dir: %q, domain: edge}\n"+
		"leafnodes: {remotes: [{url: '%s'}]}\n", t.TempDir(), leafURL), Flags{})
	p := &jsDomainPair{hub: hub, app: a, proxy: proxy, clientURL: clientURL}
	p.sync(t)
	return p
}

// sync waits until the link is connected and everything queued on it
// both ways has been processed by the other side.
func (p *jsDomainPair) sync(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	link := p.app.node.Link(0)
	require.NoError(t, link.WaitConnected(ctx))
	require.NoError(t, link.Flush(ctx))
}

// forBothBindings runs f as subtests with the link in the hub's global
// account and bound to a hub account.
func forBothBindings(t *testing.T, f func(t *testing.T, p *jsDomainPair)) {
	for _, bound := range []bool{false, true} {
		name := "global"
		if bound {
			name = "account-bound"
		}
		t.Run(name, func(t *testing.T) { f(t, startJSDomainPair(t, bound)) })
	}
}

func jsCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestJSDomainHubUsesGatewayJetStream: a hub client reaches the gateway's
// JetStream through domain "edge": account info, a stream, publishes with
// PubAcks, a pull and a push consumer with acks, and a KV bucket.
func TestJSDomainHubUsesGatewayJetStream(t *testing.T) {
	forBothBindings(t, testHubUsesGatewayJetStream)
}

func testHubUsesGatewayJetStream(t *testing.T, p *jsDomainPair) {
	ctx := jsCtx(t)
	hc := natsConnect(t, p.clientURL)
	js, err := jetstream.NewWithDomain(hc, "edge")
	require.NoError(t, err)

	ai, err := js.AccountInfo(ctx)
	require.NoError(t, err)
	require.DeepEqual(t, ai.Domain, "edge")

	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "GW", Subjects: []string{"gw.>"}})
	require.NoError(t, err)
	p.sync(t) // the hub learns the stream's subjects
	for i := range 5 {
		ack, err := js.Publish(ctx, fmt.Sprintf("gw.%d", i), []byte(fmt.Sprint(i)))
		require.NoError(t, err)
		if ack.Stream != "GW" || ack.Domain != "edge" || ack.Sequence != uint64(i+1) {
			t.Fatalf("PubAck %+v", ack)
		}
	}

	// Pull consumer.
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "PULL", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	batch, err := c.Fetch(5, jetstream.FetchMaxWait(testTimeout))
	require.NoError(t, err)
	i := 0
	for m := range batch.Messages() {
		if m.Subject() != fmt.Sprintf("gw.%d", i) || string(m.Data()) != fmt.Sprint(i) {
			t.Fatalf("pull message %d: %q %q", i, m.Subject(), m.Data())
		}
		require.NoError(t, m.DoubleAck(ctx))
		i++
	}
	require.NoError(t, batch.Error())
	require.DeepEqual(t, i, 5)
	ci, err := c.Info(ctx)
	require.NoError(t, err)
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != 5 {
		t.Fatalf("pull consumer after acks: %+v", ci)
	}

	// Push consumer (legacy API), deliver subject on the hub.
	ljs, err := hc.JetStream(nats.Domain("edge"))
	require.NoError(t, err)
	sub, err := ljs.SubscribeSync("gw.>", nats.Durable("PUSH"), nats.AckExplicit(), nats.BindStream("GW"))
	require.NoError(t, err)
	for i := range 5 {
		m := nextMsg(t, sub)
		if m.Subject != fmt.Sprintf("gw.%d", i) || string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("push message %d: %q %q", i, m.Subject, m.Data)
		}
		require.NoError(t, m.AckSync())
	}
	pci, err := sub.ConsumerInfo()
	require.NoError(t, err)
	if pci.NumAckPending != 0 || pci.AckFloor.Stream != 5 {
		t.Fatalf("push consumer after acks: %+v", pci)
	}

	// KV.
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cfg", History: 3})
	require.NoError(t, err)
	p.sync(t)
	_, err = kv.Put(ctx, "mode", []byte("eco"))
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "mode", []byte("boost"))
	require.NoError(t, err)
	e, err := kv.Get(ctx, "mode")
	require.NoError(t, err)
	if string(e.Value()) != "boost" || e.Revision() != rev {
		t.Fatalf("kv get: %q rev %d, want boost rev %d", e.Value(), e.Revision(), rev)
	}
	w, err := kv.Watch(ctx, "mode")
	require.NoError(t, err)
	defer w.Stop()
	select {
	case e := <-w.Updates():
		if e == nil || string(e.Value()) != "boost" {
			t.Fatalf("kv watch: %+v", e)
		}
	case <-time.After(testTimeout):
		t.Fatal("kv watch: no update")
	}

	// The nats CLI with --js-domain reaches the same stream and bucket.
	out := runNatsCLI(t, p.clientURL, "--js-domain", "edge", "stream", "info", "GW", "--json")
	var si struct {
		Config struct{ Name string }     `json:"config"`
		State  struct{ Messages uint64 } `json:"state"`
	}
	if err := json.Unmarshal(out, &si); err != nil || si.Config.Name != "GW" || si.State.Messages != 5 {
		t.Fatalf("nats stream info: %v\n%s", err, out)
	}
	if out := runNatsCLI(t, p.clientURL, "--js-domain", "edge", "kv", "get", "cfg", "mode", "--raw"); strings.TrimSpace(string(out)) != "boost" {
		t.Fatalf("nats kv get printed %q", out)
	}
}

// runNatsCLI runs the pinned nats CLI against url and returns its
// standard output.
func runNatsCLI(t *testing.T, url string, args ...string) []byte {
	t.Helper()
	bin := tooltest.NatsCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--server", url, "--no-context"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nats %v: %v\n%s%s", args, err, out, stderr.Bytes())
	}
	return out
}

// TestJSDomainHubSourcesGatewayStream: a hub stream sources a gateway
// stream by domain (nats-server's own store-and-forward). The hub creates
// a flow-controlled push consumer with heartbeats on the gateway, whose
// deliveries cross the link to the hub's $JS.S inbox. Messages published
// on the gateway while the link is cut arrive after it returns, each
// exactly once, in order. They are big enough (3.2 MB after the cut) that
// the consumer stalls at its 2 MB flow-control window unless the hub's
// flow-control replies cross back.
func TestJSDomainHubSourcesGatewayStream(t *testing.T) {
	forBothBindings(t, testHubSourcesGatewayStream)
}

// sourcePayload is message i of the sourcing test: its number, padded to
// 16 KiB.
func sourcePayload(i int) []byte {
	b := make([]byte, 16<<10)
	copy(b, strconv.Itoa(i)+"|")
	return b
}

func testHubSourcesGatewayStream(t *testing.T, p *jsDomainPair) {
	const n = 300
	ctx := jsCtx(t)
	gw := natsConnect(t, "nats://"+p.app.Addr().String())
	gjs, err := jetstream.New(gw)
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "X", Subjects: []string{"x.>"}})
	require.NoError(t, err)
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			_, err := gjs.Publish(ctx, fmt.Sprintf("x.%d", i%3), sourcePayload(i))
			require.NoError(t, err)
		}
	}
	publish(0, n/3)

	hc := natsConnect(t, p.clientURL)
	hjs, err := jetstream.New(hc)
	require.NoError(t, err)
	_, err = hjs.CreateStream(ctx, jetstream.StreamConfig{
		Name:    "AGG",
		Sources: []*jetstream.StreamSource{{Name: "X", Domain: "edge"}},
	})
	require.NoError(t, err)
	_, err = hjs.CreateStream(ctx, jetstream.StreamConfig{
		Name:   "MIR",
		Mirror: &jetstream.StreamSource{Name: "X", Domain: "edge"},
	})
	require.NoError(t, err)
	waitHubMsgs := func(want uint64) {
		t.Helper()
		waitStreamMsgs(t, hjs, "AGG", want, p)
		waitStreamMsgs(t, hjs, "MIR", want, p)
	}
	waitHubMsgs(n / 3)

	// The link goes down; the gateway keeps accepting messages.
	link := p.app.node.Link(0)
	p.proxy.Cut()
	awaitLink(t, ctx, link, leaf.StateConnected, true)
	publish(n/3, n)
	if st := link.Status(); st.State == leaf.StateConnected {
		t.Fatalf("the link came back during the cut: %+v", st)
	}
	p.proxy.Restore()
	p.sync(t)
	waitHubMsgs(n)

	// Each exactly once, in order, with the gateway's subjects; the
	// mirror has the gateway's sequence numbers too.
	for _, name := range []string{"AGG", "MIR"} {
		s, err := hjs.Stream(ctx, name)
		require.NoError(t, err)
		c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		require.NoError(t, err)
		for i := range n {
			m, err := c.Next(jetstream.FetchMaxWait(testTimeout))
			require.NoError(t, err)
			meta, err := m.Metadata()
			require.NoError(t, err)
			if m.Subject() != fmt.Sprintf("x.%d", i%3) || !bytes.Equal(m.Data(), sourcePayload(i)) || meta.Sequence.Stream != uint64(i+1) {
				t.Fatalf("hub stream %s message %d: %q %.20q seq %d", name, i, m.Subject(), m.Data(), meta.Sequence.Stream)
			}
		}
	}
	s, err := hjs.Stream(ctx, "AGG")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	if info.State.Msgs != n || len(info.Sources) != 1 || info.Sources[0].Lag != 0 {
		t.Fatalf("hub stream after catching up: %+v sources %+v", info.State, info.Sources)
	}
}

// waitStreamMsgs waits until the hub stream name holds want messages, and
// fails if it holds more.
func waitStreamMsgs(t *testing.T, js jetstream.JetStream, name string, want uint64, p *jsDomainPair) {
	t.Helper()
	ctx := jsCtx(t)
	awaitCond(t, ctx, fmt.Sprintf("hub stream %s holds %d messages", name, want), func() (bool, string) {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false, fmt.Sprintf("%v\n%s", err, p.hub.Logs())
		}
		info, err := s.Info(ctx)
		if err != nil {
			return false, fmt.Sprintf("%v\n%s", err, p.hub.Logs())
		}
		if info.State.Msgs > want {
			t.Fatalf("hub stream %s holds %d messages, want %d", name, info.State.Msgs, want)
		}
		return info.State.Msgs == want, fmt.Sprintf("holds %d\n%s", info.State.Msgs, p.hub.Logs())
	})
}

// TestJSDomainGatewayReadsHubStream: a gateway client reaches the hub's
// JetStream through domain "hub": a pull consumer fetches a hub stream
// across the link (deliveries arrive with the '@' encoding and show the
// stream subjects) and so does a push consumer; their acks reach the hub.
func TestJSDomainGatewayReadsHubStream(t *testing.T) {
	const n = 20
	p := startJSDomainPair(t, false)
	ctx := jsCtx(t)
	hc := natsConnect(t, p.clientURL)
	hjs, err := jetstream.New(hc)
	require.NoError(t, err)
	_, err = hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "HUBS", Subjects: []string{"cmd.>"}})
	require.NoError(t, err)
	for i := range n {
		_, err := hjs.Publish(ctx, fmt.Sprintf("cmd.gw%d", i%2), []byte(fmt.Sprint(i)))
		require.NoError(t, err)
	}

	gw := natsConnect(t, "nats://"+p.app.Addr().String())
	gjs, err := jetstream.NewWithDomain(gw, "hub")
	require.NoError(t, err)
	ai, err := gjs.AccountInfo(ctx)
	require.NoError(t, err)
	require.DeepEqual(t, ai.Domain, "hub")
	c, err := gjs.CreateOrUpdateConsumer(ctx, "HUBS", jetstream.ConsumerConfig{Durable: "GW", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	got := 0
	for got < n {
		batch, err := c.Fetch(n-got, jetstream.FetchMaxWait(testTimeout))
		require.NoError(t, err)
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			require.NoError(t, err)
			if m.Subject() != fmt.Sprintf("cmd.gw%d", got%2) || string(m.Data()) != fmt.Sprint(got) ||
				meta.Sequence.Stream != uint64(got+1) || meta.Stream != "HUBS" {
				t.Fatalf("gateway got %q %q %+v, want message %d", m.Subject(), m.Data(), meta, got)
			}
			require.NoError(t, m.DoubleAck(ctx))
			got++
		}
		require.NoError(t, batch.Error())
	}
	// A push consumer on the hub delivering to a gateway subscriber: the
	// hub sends each message to the deliver subject with the stream
	// subject after '@'.
	ljs, err := gw.JetStream(nats.Domain("hub"))
	require.NoError(t, err)
	sub, err := ljs.SubscribeSync("cmd.>", nats.Durable("GWPUSH"), nats.AckExplicit(), nats.BindStream("HUBS"))
	require.NoError(t, err)
	for i := range n {
		m := nextMsg(t, sub)
		if m.Subject != fmt.Sprintf("cmd.gw%d", i%2) || string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("gateway push subscriber got %q %q, want message %d", m.Subject, m.Data, i)
		}
		require.NoError(t, m.AckSync())
	}

	// The acks reached the hub's consumers.
	hlegacy, err := hc.JetStream()
	require.NoError(t, err)
	for _, name := range []string{"GW", "GWPUSH"} {
		ci, err := hlegacy.ConsumerInfo("HUBS", name)
		require.NoError(t, err)
		if ci.NumAckPending != 0 || ci.AckFloor.Stream != n || ci.Delivered.Stream != n {
			t.Fatalf("hub consumer %s after the gateway's acks: %+v", name, ci)
		}
	}
}

var hubMonitorRE = regexp.MustCompile(`Starting http monitor on (?:http://)?(127\.0\.0\.1:\d+)`)

// hubMonitor returns the base URL of the hub's monitoring port.
func (p *jsDomainPair) hubMonitor(t *testing.T) string {
	t.Helper()
	m := hubMonitorRE.FindStringSubmatch(p.hub.Logs())
	if m == nil {
		t.Fatalf("the hub logged no monitoring port:\n%s", p.hub.Logs())
	}
	return "http://" + m[1]
}

// TestJSDomainLeafInterestOnHub checks, on the real hub's /leafz, what the
// gateway announces: its domain's nine API mapping sources (as nats-server
// maps them), its streams' subjects and its clients' interest (a literal
// $JS.edge.API subject too: nats-server denies that domain only for
// outgoing messages), and never the JetStream deny set ($JS.API.>, $KV.>,
// $OBJ.>). Traffic on the deny set and on
// $JS.edge.API.> never leaves the gateway, even toward matching hub
// subscribers, and the hub never closes the link for a violation.
func TestJSDomainLeafInterestOnHub(t *testing.T) {
	p := startJSDomainPair(t, false)
	ctx := jsCtx(t)
	gw := natsConnect(t, "nats://"+p.app.Addr().String())
	gjs, err := jetstream.New(gw)
	require.NoError(t, err)
	_, err = gjs.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	require.NoError(t, err)
	kv, err := gjs.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"})
	require.NoError(t, err)
	for _, subj := range []string{"$JS.API.INFO", "$KV.b.k", "$OBJ.o.x", "$JS.edge.API.STREAM.INFO.S"} {
		_, err := gw.SubscribeSync(subj)
		require.NoError(t, err)
	}
	require.NoError(t, gw.Flush())

	// Hub subscribers that would receive leaked traffic.
	hc := natsConnect(t, p.clientURL)
	leaks, err := hc.SubscribeSync(">")
	require.NoError(t, err)
	require.NoError(t, hc.Flush())
	p.sync(t)

	var lz struct {
		Leafs []struct {
			Subs []string `json:"subscriptions_list"`
		} `json:"leafs"`
	}
	getJSON(t, p.hubMonitor(t)+"/leafz?subs=1", &lz)
	if len(lz.Leafs) != 1 {
		t.Fatalf("hub /leafz: %+v", lz)
	}
	subs := lz.Leafs[0].Subs
	for _, want := range []string{
		"$JS.edge.API.INFO", "$JS.edge.API.STREAM.>", "$JS.edge.API.CONSUMER.>", "$JS.edge.API.DIRECT.>",
		"$JS.edge.API.META.>", "$JS.edge.API.SERVER.>", "$JS.edge.API.ACCOUNT.>", "$JS.edge.API.$KV.>",
		"$JS.edge.API.$OBJ.>", "s.>", "$JS.ACK.>", "$JS.FC.>", "$JS.edge.API.STREAM.INFO.S",
	} {
		if !contains(subs, want) {
			t.Errorf("the hub lacks the gateway's interest in %q: %v", want, subs)
		}
	}
	for _, s := range subs {
		for _, denied := range []string{"$JS.API.", "$KV.", "$OBJ."} {
			if strings.HasPrefix(s, denied) {
				t.Errorf("the gateway announced %q: %v", s, subs)
			}
		}
	}

	// Denied traffic stays on the gateway; a plain message goes through.
	_, err = kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)
	_, err = gjs.AccountInfo(ctx)
	require.NoError(t, err)
	ejs, err := jetstream.NewWithDomain(gw, "edge") // served locally
	require.NoError(t, err)
	_, err = ejs.Stream(ctx, "S")
	require.NoError(t, err)
	require.NoError(t, gw.Publish("$OBJ.o.x", []byte("x")))
	require.NoError(t, gw.Publish("plain.done", []byte("x")))
	require.NoError(t, gw.Flush())
	p.sync(t)
	for {
		m := nextMsg(t, leaks)
		if m.Subject == "plain.done" {
			break
		}
		for _, denied := range []string{"$JS.API.", "$KV.", "$OBJ.", "$JS.edge.API."} {
			if strings.HasPrefix(m.Subject, denied) {
				t.Fatalf("the hub received %q from the gateway", m.Subject)
			}
		}
	}
	if st := p.app.node.Link(0).Status(); st.Connects != 1 || st.State != leaf.StateConnected {
		t.Fatalf("link status %+v", st)
	}
	if strings.Contains(p.hub.Logs(), "Violation") {
		t.Fatalf("the hub reports a violation:\n%s", p.hub.Logs())
	}
}
