package app

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/leafbox/leafbox/leaf/outbox"
)

// The fault tests below run a gateway App with one uplink toward a real
// 3-node nats-server cluster holding an R3 stream, break the path in the
// middle of the traffic, and then count: the hub stream must hold every
// message exactly once, each publisher's messages in publish order.

// faultTimeout bounds each wait of the fault tests: hub failover and
// JetStream leader elections take seconds on a loaded machine.
const faultTimeout = 60 * time.Second

// createHubStream creates the R3 stream SITE on the cluster for the
// subjects site1.>, retrying while the cluster is still placing peers.
func createHubStream(t *testing.T, ctx context.Context, cluster *leaftest.Cluster) {
	t.Helper()
	hc := natsConnect(t, cluster.ClientURLs())
	defer hc.Close()
	js, err := jetstream.New(hc)
	require.NoError(t, err)
	createClusterStream(t, ctx, js, jetstream.StreamConfig{
		Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage,
		Replicas: 3, Duplicates: 10 * time.Minute,
	})
}

// createClusterStream creates the stream cfg through js, retrying while
// the cluster is still placing peers.
func createClusterStream(t *testing.T, ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	awaitCond(t, ctx, "the hub stream "+cfg.Name+" is created", func() (bool, string) {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.CreateStream(actx, batchedHub(cfg))
		return err == nil, fmt.Sprint(err)
	})
}

// hubStream connects to the cluster and returns the SITE stream.
func hubStream(t *testing.T, ctx context.Context, cluster *leaftest.Cluster) jetstream.Stream {
	t.Helper()
	hc := natsConnect(t, cluster.ClientURLs())
	js, err := jetstream.New(hc)
	require.NoError(t, err)
	var s jetstream.Stream
	awaitCond(t, ctx, "the hub stream answers", func() (bool, string) {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err = js.Stream(actx, "SITE")
		return err == nil, fmt.Sprint(err)
	})
	return s
}

// startFaultGateway starts a gateway App whose one leafnode remote lists
// urls and whose uplink "tel" forwards telemetry.> to the hub stream SITE
// as site1.telemetry.>.
func startFaultGateway(t *testing.T, urls []string) (*App, *leaf.Link) {
	t.Helper()
	a := startGateway(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{urls: ['"+strings.Join(urls, "', '")+"']}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n", Flags{})
	return a, a.node.Link(0)
}

// publishers are nats.go clients of the gateway, each publishing its own
// numbered messages on telemetry.p<k> in batches, one batch per token.
// A batch is accepted (durable in the outbox) when its Flush returns.
type publishers struct {
	n, perPublisher, batch int
	tokens                 chan struct{}
	released               int
	wg                     sync.WaitGroup
	mu                     sync.Mutex
	err                    error
}

// startPublishers connects n publishers to the gateway a; each will
// publish perPublisher messages in batches of batch, each batch once a
// token is released.
func startPublishers(t *testing.T, a *App, n, perPublisher, batch int) *publishers {
	t.Helper()
	p := &publishers{n: n, perPublisher: perPublisher, batch: batch, tokens: make(chan struct{}, n*perPublisher/batch)}
	for k := range n {
		nc, err := nats.Connect("nats://"+a.Addr().String(), nats.Timeout(testTimeout))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			subj := "telemetry.p" + strconv.Itoa(k)
			for i := 0; i < perPublisher; {
				if _, ok := <-p.tokens; !ok {
					return
				}
				for end := min(i+batch, perPublisher); i < end; i++ {
					if err := nc.Publish(subj, []byte(strconv.Itoa(i))); err != nil {
						p.fail(fmt.Errorf("publisher %d message %d: %w", k, i, err))
						return
					}
				}
				if err := nc.FlushTimeout(testTimeout); err != nil {
					p.fail(fmt.Errorf("publisher %d flush at %d: %w", k, i, err))
					return
				}
			}
		}()
	}
	return p
}

func (p *publishers) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// release lets the publishers publish batches more batches between them.
func (p *publishers) release(batches int) {
	p.released += batches
	for range batches {
		p.tokens <- struct{}{}
	}
}

// total is the number of messages all publishers publish.
func (p *publishers) total() int { return p.n * p.perPublisher }

// batches is the number of batches all publishers publish.
func (p *publishers) batches() int { return p.total() / p.batch }

// finish releases what is left, waits for every publisher and fails the
// test if one failed.
func (p *publishers) finish(t *testing.T) {
	t.Helper()
	p.release(p.batches() - p.released)
	close(p.tokens)
	p.wg.Wait()
	if p.err != nil {
		t.Fatal(p.err)
	}
}

// checkHubStream waits until the hub stream holds p.total() messages
// (failing if it ever holds more), then reads them all and requires each
// publisher's messages exactly once and in publish order; it also waits
// for the outbox to drain with nothing dropped.
func checkHubStream(t *testing.T, ctx context.Context, stream jetstream.Stream, a *App, p *publishers) {
	t.Helper()
	checkHubStreamOrder(t, ctx, stream, a, p, true)
}

// checkHubStreamOrder is checkHubStream, with the order required only
// when strict. Otherwise a message stored after a later one of its
// publisher must have been seen by the uplink (Status.Reordered), and the
// test logs how many there were.
func checkHubStreamOrder(t *testing.T, ctx context.Context, stream jetstream.Stream, a *App, p *publishers, strict bool) {
	t.Helper()
	want := uint64(p.total())
	awaitStreamMsgs(t, ctx, stream, want, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	seen := make([]map[int]bool, p.n)
	high := make([]int, p.n) // the highest message of each publisher so far, plus one
	for k := range seen {
		seen[k] = map[int]bool{}
	}
	var ids []string // the Nats-Msg-Id of each hub message, for the report of a failure
	var fault string
	displaced := 0
	for got := uint64(0); got < want; {
		batch, err := cons.Fetch(int(min(500, want-got)), jetstream.FetchMaxWait(testTimeout))
		require.NoError(t, err)
		for m := range batch.Messages() {
			got++
			ids = append(ids, m.Headers().Get(nats.MsgIdHdr))
			if fault != "" {
				continue
			}
			k, err := strconv.Atoi(strings.TrimPrefix(m.Subject(), "site1.telemetry.p"))
			if err != nil || k < 0 || k >= p.n {
				fault = fmt.Sprintf("hub message %d on unexpected subject %q", got, m.Subject())
				continue
			}
			i, err := strconv.Atoi(string(m.Data()))
			switch {
			case err != nil || i < 0 || i >= p.perPublisher || seen[k][i]:
				fault = fmt.Sprintf("hub message %d: publisher %d sent %q, a duplicate or never published", got, k, m.Data())
			case i < high[k]:
				displaced++
				if strict {
					fault = fmt.Sprintf("hub message %d: publisher %d sent %q after its message %d (reorder)", got, k, m.Data(), high[k]-1)
				}
			case i > high[k] && strict:
				fault = fmt.Sprintf("hub message %d: publisher %d sent %q, want message %d (gap or reorder)", got, k, m.Data(), high[k])
			}
			seen[k][i] = true
			high[k] = max(high[k], i+1)
		}
		// A consumer just created on an R3 stream may not answer at once.
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) &&
			(!errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil) {
			t.Fatalf("fetch: %v", err)
		}
	}
	if fault != "" {
		t.Fatalf("%s; the hub stream in runs of consecutive message ids (numbered at capture, so concurrent publishers swap a few): %s", fault, captureRuns(ids))
	}
	for k := range seen {
		if n := len(seen[k]); n != p.perPublisher {
			t.Fatalf("publisher %d: hub holds %d messages, want %d", k, n, p.perPublisher)
		}
	}
	awaitUplink(t, ctx, a, "the outbox drains", func(st outbox.Status) bool { return st.BacklogMsgs == 0 && st.InFlight == 0 })
	st := a.UplinkStatus()[0]
	if len(st.Dropped) != 0 || st.WrongStream != 0 || st.Stored != want {
		t.Fatalf("uplink status %+v", st)
	}
	if strict && st.Reordered != 0 {
		t.Fatalf("the uplink counted %d reordered messages, the hub stream holds none", st.Reordered)
	}
	if displaced > 0 && st.Reordered == 0 {
		t.Fatalf("%d messages stored after a later one of their publisher, and the uplink counted none; %s", displaced, captureRuns(ids))
	}
	t.Logf("%d messages stored after a later one of their publisher; the uplink counted %d", displaced, st.Reordered)
}

// captureRuns describes the hub stream as runs of consecutive capture
// numbers (the last token of each Nats-Msg-Id), in hub order: "1-75@1
// 320-410@76 ..." is captures 1 to 75 at hub sequences 1 to 75, then
// 320 to 410 from hub sequence 76.
func captureRuns(ids []string) string {
	var b strings.Builder
	start, prev := -1, -1
	flush := func(end int) {
		if start >= 0 {
			fmt.Fprintf(&b, " %d-%d@%d", start, prev, end)
		}
	}
	at := 1
	for i, id := range ids {
		n, err := strconv.Atoi(id[strings.LastIndexByte(id, '.')+1:])
		if err != nil {
			n = -2
		}
		if n != prev+1 || start < 0 {
			flush(at)
			start, at = n, i+1
		}
		prev = n
	}
	flush(at)
	return b.String()
}

// awaitLink waits until the link's state is (or, with not, is not) state.
func awaitLink(t *testing.T, ctx context.Context, link *leaf.Link, state leaf.State, not bool) leaf.Status {
	t.Helper()
	var st leaf.Status
	if err := link.Wait(ctx, func(s leaf.Status) bool {
		st = s
		return (st.State == state) != not
	}); err != nil {
		t.Fatalf("timed out waiting until the link state is (not=%v) %s: %v; %+v", not, state, err, link.Status())
	}
	return st
}

// TestUplinkFaultFlapping cuts the TCP path between gateway and hub many
// times while several publishers publish and the uplink forwards: the R3
// hub stream ends with every message exactly once, in per-publisher order.
func TestUplinkFaultFlapping(t *testing.T) {
	const (
		pubs, perPub, batch = 4, 1000, 25
		cuts                = 6
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*faultTimeout)
	defer cancel()
	// no_advertise: the hub must not tell the link the nodes' own leafnode
	// URLs, which it would fail over to, around the proxy.
	cluster := leaftest.StartCluster(t, leaftest.ClusterOptions{Leaf: "no_advertise: true"})
	createHubStream(t, ctx, cluster)
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", cluster.Nodes[0].LeafPort))
	a, link := startFaultGateway(t, []string{proxy.LeafURL()})
	awaitLink(t, ctx, link, leaf.StateConnected, false)

	p := startPublishers(t, a, pubs, perPub, batch)
	per := p.batches() / (cuts + 1)
	start := time.Now()
	for range cuts {
		acked := a.UplinkStatus()[0].Acked
		p.release(per)
		// Cut once the uplink forwards this step's traffic: mid-stream.
		awaitUplink(t, ctx, a, "the uplink makes progress", func(st outbox.Status) bool { return st.Acked > acked })
		proxy.Cut()
		awaitLink(t, ctx, link, leaf.StateConnected, true)
		proxy.Restore()
		awaitLink(t, ctx, link, leaf.StateConnected, false)
	}
	p.finish(t)
	stream := hubStream(t, ctx, cluster)
	checkHubStream(t, ctx, stream, a, p)
	st := a.UplinkStatus()[0]
	t.Logf("%d messages through %d cuts in %v: %d forwarded (%d resent), %d failed rounds, link connects %d; %s",
		p.total(), cuts, time.Since(start), st.Forwarded, st.Forwarded-st.Stored, st.Retries, link.Status().Connects, proxy)
	if c := link.Status().Connects; c < cuts+1 {
		t.Fatalf("the link connected %d times, want at least %d", c, cuts+1)
	}
}

// TestUplinkFaultHubNodeLoss kills the hub node the gateway is connected
// to while the uplink forwards (the link fails over to another of the
// three URLs) and restarts it, then kills the stream's leader mid-stream
// and restarts it, and then takes the whole hub down while the publishers
// go on and brings it back: the R3 hub stream ends with every message
// exactly once. Forwarding in fast batches (a hub stream with
// allow_batched) keeps per-publisher order through all of it; with a
// PubAck per message the leader's loss can store a resent message behind
// later ones, and the uplink must count each time it does.
func TestUplinkFaultHubNodeLoss(t *testing.T) {
	t.Run("batched", func(t *testing.T) {
		t.Setenv("LEAFBOX_TEST_HUB_BATCHED", "1")
		testUplinkFaultHubNodeLoss(t, true)
	})
	t.Run("per_message", func(t *testing.T) {
		t.Setenv("LEAFBOX_TEST_HUB_BATCHED", "")
		testUplinkFaultHubNodeLoss(t, false)
	})
}

func testUplinkFaultHubNodeLoss(t *testing.T, batched bool) {
	const pubs, perPub, batch = 4, 800, 25
	ctx, cancel := context.WithTimeout(context.Background(), 3*faultTimeout)
	defer cancel()
	cluster := leaftest.StartCluster(t, leaftest.ClusterOptions{})
	createHubStream(t, ctx, cluster)
	a, link := startFaultGateway(t, cluster.LeafURLs())
	first := awaitLink(t, ctx, link, leaf.StateConnected, false)
	p := startPublishers(t, a, pubs, perPub, batch)
	quarter := p.batches() / 4 // one for each fault, the rest during the outage
	start := time.Now()

	progress := func(what string) {
		t.Helper()
		acked := a.UplinkStatus()[0].Acked
		awaitUplink(t, ctx, a, what, func(st outbox.Status) bool { return st.Acked > acked })
	}

	// One node lost mid-stream: the link fails over.
	p.release(quarter)
	progress("the uplink forwards to " + first.ServerName)
	victim := cluster.Node(first.ServerName)
	if victim == nil {
		t.Fatalf("the link is connected to %q, not a cluster node", first.ServerName)
	}
	victim.Kill()
	if err := link.Wait(ctx, func(st leaf.Status) bool {
		return st.State == leaf.StateConnected && st.ServerName != first.ServerName
	}); err != nil {
		t.Fatalf("timed out waiting until the link fails over to another node: %v; %+v", err, link.Status())
	}
	progress("the uplink forwards after the failover")
	failover := time.Since(start)
	cluster.RestartAll()

	// The stream's leader lost mid-stream: the R3 stream elects another.
	stream := hubStream(t, ctx, cluster)
	var leader string
	awaitCond(t, ctx, "the hub stream has a leader", func() (bool, string) {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := stream.Info(actx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			return false, fmt.Sprint(err)
		}
		leader = info.Cluster.Leader
		return true, ""
	})
	p.release(quarter)
	progress("the uplink forwards to the stream leader " + leader)
	cluster.Node(leader).Kill()
	progress("the uplink forwards after the stream leader's loss")
	cluster.RestartAll()

	// The whole hub lost: publishers go on into the outbox.
	p.release(quarter)
	progress("the uplink forwards with every node up")
	progress("the uplink forwards with every node up")
	cluster.KillAll()
	awaitLink(t, ctx, link, leaf.StateConnected, true)
	p.finish(t) // the rest: all accepted while the hub is down
	backlog := a.UplinkStatus()[0].BacklogMsgs
	outage := time.Now()
	cluster.RestartAll()
	stream = hubStream(t, ctx, cluster)
	checkHubStreamOrder(t, ctx, stream, a, p, batched)
	st := a.UplinkStatus()[0]
	if want := map[bool]string{true: outbox.ModeBatch, false: outbox.ModePerMessage}[batched]; st.Mode != want {
		t.Fatalf("uplink mode %q, want %q", st.Mode, want)
	}
	t.Logf("%d messages: failover after %v; stream leader %s lost; backlog %d during the outage, drained %v after it began; %d forwarded (%d resent), %d failed rounds, link connects %d",
		p.total(), failover, leader, backlog, time.Since(outage), st.Forwarded, st.Forwarded-st.Stored, st.Retries, link.Status().Connects)
}
