package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/node"
)

// The downlink fault tests run a gateway App with downlinks from a real
// nats-server hub stream CMDS (subjects cmd.>), break the path while the
// hub's commands flow, and then count what arrived locally against what
// the downlink documents: with max_ack_pending 1 every command exactly
// once and in stream order; with more outstanding, every command exactly
// once, and only the commands in transit at a drop (at most
// max_ack_pending per drop) behind later ones.

// dlCommand is the payload of hub command i; its hub subject is
// cmd.site1.c<i%4>.
func dlCommand(i int) (subject string, data []byte) {
	return "cmd.site1.c" + strconv.Itoa(i%4), []byte(strconv.Itoa(i))
}

// hubPublisher publishes the numbered commands into the hub stream CMDS
// from a nats.go client of the hub, in the background.
type hubPublisher struct {
	js   jetstream.JetStream
	next int
	prev chan struct{} // closed when the previous publish call is done
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

// publish publishes commands p.next..to-1 in the background, after those
// of the previous call, so that the stream holds them in number order;
// wait waits for every publish so far and fails the test on an error.
func (p *hubPublisher) publish(ctx context.Context, to int) {
	from := p.next
	p.next = to
	prev, done := p.prev, make(chan struct{})
	p.prev = done
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		for i := from; i < to; i++ {
			subj, data := dlCommand(i)
			var err error
			// A cluster that just lost a node may not answer at once.
			for try := 0; try < 20; try++ {
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err = p.js.Publish(actx, subj, data, jetstream.WithMsgID("c"+strconv.Itoa(i)))
				cancel()
				if err == nil || ctx.Err() != nil {
					break
				}
			}
			if err != nil {
				p.mu.Lock()
				p.err = fmt.Errorf("hub publish of command %d: %w", i, err)
				p.mu.Unlock()
				return
			}
		}
	}()
}

func (p *hubPublisher) wait(t *testing.T) {
	t.Helper()
	p.wg.Wait()
	if p.err != nil {
		t.Fatal(p.err)
	}
}

// dlFaultHub starts a single nats-server hub with JetStream in domain
// "hub" and the stream CMDS on cmd.>. no_advertise keeps the hub from
// telling the link its own leafnode URL, which the link would otherwise
// fail over to around a proxy.
func dlFaultHub(t *testing.T, ctx context.Context) (*leaftest.Hub, *hubPublisher) {
	t.Helper()
	hub, js, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-dl", Leaf: "no_advertise: true"}, "hub",
		jetstream.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"}, Duplicates: time.Minute})
	return hub, &hubPublisher{js: js}
}

// startDownlinkGateway starts a gateway App with JetStream whose one
// leafnode remote lists urls and with the downlinks given as YAML flow
// entries, and returns it with the link they consume over.
func startDownlinkGateway(t *testing.T, urls []string, downlinks ...string) (*App, *leaf.Link) {
	t.Helper()
	a := startGateway(t, fmt.Sprintf("http_port: -1\nserver_name: gw\njetstream: {store_dir: %q, domain: edge}\n", t.TempDir())+
		"leafnodes: {remotes: [{urls: ['"+strings.Join(urls, "', '")+"']}]}\n"+
		"downlinks: ["+strings.Join(downlinks, ", ")+"]\n",
		Flags{Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	return a, a.node.Link(0)
}

// subDownlink is the downlink "sub" of the fault tests: the hub's
// cmd.site1.> commands to local subscribers on sub.>.
const subDownlink = "{name: sub, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1.," +
	" local_subject_prefix: sub., ack_wait: 2s, expires: 2s}"

// gatewaySubscriber connects a client to the gateway a (closed in
// t.Cleanup) and subscribes it to subject with no pending limits; the
// subscription is known to the gateway on return.
func gatewaySubscriber(t *testing.T, a *App, subject string) (*nats.Conn, *nats.Subscription) {
	t.Helper()
	gw := natsConnect(t, "nats://"+a.Addr().String())
	sub, err := gw.SubscribeSync(subject)
	require.NoError(t, err)
	require.NoError(t, sub.SetPendingLimits(-1, -1))
	require.NoError(t, gw.Flush())
	return gw, sub
}

// dlStatus returns the status of the downlink named name.
func dlStatus(t *testing.T, a *App, name string) node.DownlinkStatus {
	t.Helper()
	for _, st := range a.DownlinkStatus() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no downlink %q", name)
	return node.DownlinkStatus{}
}

// awaitDelivered waits until the downlink name delivered n commands (and
// fails if it delivered more) and its hub consumer has nothing left
// outstanding.
func awaitDelivered(t *testing.T, ctx context.Context, a *App, hjs jetstream.JetStream, name string, n int) {
	t.Helper()
	var cons jetstream.Consumer
	awaitCond(t, ctx, fmt.Sprintf("downlink %s delivers %d commands", name, n), func() (bool, string) {
		st := dlStatus(t, a, name)
		if st.Delivered > uint64(n) {
			t.Fatalf("downlink %s delivered %d commands, want %d: %+v", name, st.Delivered, n, st)
		}
		if st.Delivered < uint64(n) {
			return false, fmt.Sprintf("%+v", st)
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if cons == nil {
			if cons, err = hjs.Consumer(actx, "CMDS", "gw_"+name); err != nil {
				return false, err.Error()
			}
		}
		info, err := cons.Info(actx)
		if err != nil {
			return false, err.Error()
		}
		return info.NumPending == 0 && info.NumAckPending == 0,
			fmt.Sprintf("hub consumer pending %d, ack pending %d; %+v", info.NumPending, info.NumAckPending, st)
	})
}

// checkCommands checks the commands a receiver got, in arrival order:
// each of 0..n-1 exactly once, and at most late of them after a higher
// one. It returns how many arrived late.
func checkCommands(t *testing.T, what string, got []int, n, late int) int {
	t.Helper()
	seen := make([]bool, n)
	highest, behind := -1, 0
	for k, i := range got {
		switch {
		case i < 0 || i >= n:
			t.Fatalf("%s: arrival %d is command %d, not one sent", what, k, i)
		case seen[i]:
			t.Fatalf("%s: command %d arrived twice (arrival %d)", what, i, k)
		}
		seen[i] = true
		if i < highest {
			behind++
		}
		highest = max(highest, i)
	}
	if len(got) != n {
		t.Fatalf("%s: %d commands arrived, want %d", what, len(got), n)
	}
	if behind > late {
		t.Fatalf("%s: %d commands arrived behind later ones, at most %d allowed", what, behind, late)
	}
	return behind
}

// subscriberCommands reads n commands from a gateway subscriber on
// prefix+">", checking each one's subject.
func subscriberCommands(t *testing.T, sub *nats.Subscription, prefix string, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		m := nextMsg(t, sub)
		i, err := strconv.Atoi(string(m.Data))
		if err != nil || m.Subject != prefix+"c"+strconv.Itoa(i%4) {
			t.Fatalf("subscriber got %q on %s", m.Data, m.Subject)
		}
		out = append(out, i)
	}
	if k, _, err := sub.Pending(); err != nil || k != 0 {
		t.Fatalf("subscriber has %d more messages (%v)", k, err)
	}
	return out
}

// streamCommands reads the commands the local stream holds, in stream
// order, checking each one's subject and that it kept the hub
// publisher's Nats-Msg-Id.
func streamCommands(t *testing.T, ctx context.Context, stream jetstream.Stream, prefix string) []int {
	t.Helper()
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	out := make([]int, 0, info.State.Msgs)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		i, err := strconv.Atoi(string(m.Data))
		if err != nil || m.Subject != prefix+"c"+strconv.Itoa(i%4) ||
			m.Header.Get(nats.MsgIdHdr) != "c"+strconv.Itoa(i) {
			t.Fatalf("local stream seq %d: %q on %s, id %q", seq, m.Data, m.Subject, m.Header.Get(nats.MsgIdHdr))
		}
		out = append(out, i)
	}
	return out
}

// TestDownlinkFaultFlapping cuts the TCP path between gateway and hub
// several times while the hub publishes 1000 commands and two downlinks
// consume them: "sub" into a plain nats.go subscriber of the gateway,
// "st" into a local JetStream stream. With max_ack_pending 1 both get
// every command exactly once and in stream order; with 8, every command
// exactly once, at most 8 per cut behind later ones.
func TestDownlinkFaultFlapping(t *testing.T) {
	for _, map_ := range []int{1, 8} {
		t.Run(fmt.Sprintf("max_ack_pending=%d", map_), func(t *testing.T) { testDownlinkFlapping(t, map_) })
	}
}

func testDownlinkFlapping(t *testing.T, maxAckPending int) {
	const n, cuts = 1000, 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*faultTimeout)
	defer cancel()
	hub, pub := dlFaultHub(t, ctx)
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	opts := fmt.Sprintf("filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1., max_ack_pending: %d, ack_wait: 1s, expires: 2s", maxAckPending)
	a, link := startDownlinkGateway(t, []string{proxy.LeafURL()},
		"{name: sub, stream: CMDS, local_subject_prefix: sub., "+opts+"}",
		"{name: st, stream: CMDS, local_subject_prefix: st., "+opts+"}")
	gw, sub := gatewaySubscriber(t, a, "sub.>")
	ljs, err := jetstream.New(gw)
	require.NoError(t, err)
	local, err := ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "LOCAL", Subjects: []string{"st.>"}})
	require.NoError(t, err)
	awaitLink(t, ctx, link, leaf.StateConnected, false)

	start := time.Now()
	var recovery, relink []time.Duration
	per := n / (cuts + 1)
	for k := range cuts {
		pub.publish(ctx, (k+1)*per)
		// Cut once both downlinks deliver this step's commands: mid-stream.
		base := [2]uint64{dlStatus(t, a, "sub").Delivered, dlStatus(t, a, "st").Delivered}
		awaitCond(t, ctx, "both downlinks make progress", func() (bool, string) {
			s, st := dlStatus(t, a, "sub"), dlStatus(t, a, "st")
			return s.Delivered > base[0]+uint64(per)/4 && st.Delivered > base[1]+uint64(per)/4, fmt.Sprintf("%+v\n%+v", s, st)
		})
		proxy.Cut()
		awaitLink(t, ctx, link, leaf.StateConnected, true)
		proxy.Restore()
		cut := time.Now()
		awaitLink(t, ctx, link, leaf.StateConnected, false)
		relink = append(relink, time.Since(cut).Round(time.Millisecond))
		base = [2]uint64{dlStatus(t, a, "sub").Delivered, dlStatus(t, a, "st").Delivered}
		awaitCond(t, ctx, "both downlinks deliver again after the cut", func() (bool, string) {
			s, st := dlStatus(t, a, "sub"), dlStatus(t, a, "st")
			done := s.Delivered == uint64(pub.next) && st.Delivered == uint64(pub.next)
			return done || (s.Delivered > base[0] && st.Delivered > base[1]), fmt.Sprintf("%+v\n%+v", s, st)
		})
		recovery = append(recovery, time.Since(cut).Round(time.Millisecond))
	}
	pub.publish(ctx, n)
	pub.wait(t)
	awaitDelivered(t, ctx, a, pub.js, "sub", n)
	awaitDelivered(t, ctx, a, pub.js, "st", n)
	elapsed := time.Since(start)

	late := 0
	if maxAckPending > 1 {
		late = cuts * maxAckPending
	}
	lateSub := checkCommands(t, "subscriber", subscriberCommands(t, sub, "sub.", n), n, late)
	lateSt := checkCommands(t, "local stream", streamCommands(t, ctx, local, "st."), n, late)
	s, st := dlStatus(t, a, "sub"), dlStatus(t, a, "st")
	t.Logf("%d commands through %d cuts in %v (%.0f/s per downlink); after each restore: link up %v, delivering %v; late: subscriber %d, stream %d",
		n, cuts, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), relink, recovery, lateSub, lateSt)
	t.Logf("sub: %+v", s)
	t.Logf("st: %+v", st)
	if c := link.Status().Connects; c < cuts+1 {
		t.Fatalf("the link connected %d times, want at least %d", c, cuts+1)
	}
}

// TestDownlinkFaultHubNodeLoss consumes an R3 hub stream on a 3-node
// cluster, the gateway's remote listing all three leafnode URLs, and
// kills the node the link is connected to while the commands flow: the
// link fails over, the downlink binds its consumer again on the cluster,
// and after the node's restart every command has arrived at the local
// subscriber exactly once and in stream order (max_ack_pending 1).
func TestDownlinkFaultHubNodeLoss(t *testing.T) {
	const n = 600
	ctx, cancel := context.WithTimeout(context.Background(), 3*faultTimeout)
	defer cancel()
	cluster := leaftest.StartCluster(t, leaftest.ClusterOptions{})
	hc := natsConnect(t, cluster.ClientURLs())
	hjs, err := jetstream.New(hc)
	require.NoError(t, err)
	createClusterStream(t, ctx, hjs, jetstream.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"},
		Replicas: 3, Duplicates: time.Minute})
	pub := &hubPublisher{js: hjs}
	pub.publish(ctx, n/2)
	a, link := startDownlinkGateway(t, cluster.LeafURLs(), subDownlink)
	_, sub := gatewaySubscriber(t, a, "sub.>")
	first := awaitLink(t, ctx, link, leaf.StateConnected, false)
	start := time.Now()
	awaitDownlink(t, ctx, a, "sub", "the downlink delivers", func(st downlink.Status) bool { return st.Delivered >= n/8 })

	victim := cluster.Node(first.ServerName)
	if victim == nil {
		t.Fatalf("the link is connected to %q, not a cluster node", first.ServerName)
	}
	before := dlStatus(t, a, "sub").Delivered
	victim.Kill()
	killed := time.Now()
	pub.publish(ctx, n) // the rest while the node is down
	awaitCond(t, ctx, "the link fails over and the downlink delivers again", func() (bool, string) {
		st, ls := dlStatus(t, a, "sub"), link.Status()
		return ls.State == leaf.StateConnected && ls.ServerName != first.ServerName && st.Delivered > before+10,
			fmt.Sprintf("%+v; link %+v", st, ls)
	})
	failover := time.Since(killed)
	cluster.RestartAll()
	pub.wait(t)
	awaitDelivered(t, ctx, a, hjs, "sub", n)
	checkCommands(t, "subscriber", subscriberCommands(t, sub, "sub.", n), n, 0)
	st := dlStatus(t, a, "sub")
	t.Logf("%d commands in %v; %s killed, delivering again through %s after %v; %+v",
		n, time.Since(start).Round(time.Millisecond), first.ServerName, link.Status().ServerName, failover.Round(time.Millisecond), st)
}

// TestDownlinkFaultBlackhole blackholes the path between gateway and hub
// (the TCP connection stays open, every byte is dropped) while commands
// wait in the hub stream: the downlink notices within two heartbeat
// intervals, long before the link's own PINGs would, and once the path
// is restored it delivers every command exactly once and in stream
// order. It first measures the downlink's rate on an intact link.
func TestDownlinkFaultBlackhole(t *testing.T) {
	const n1, n2 = 500, 100
	ctx, cancel := context.WithTimeout(context.Background(), 2*faultTimeout)
	defer cancel()
	hub, pub := dlFaultHub(t, ctx)
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	a, link := startDownlinkGateway(t, []string{proxy.LeafURL()}, subDownlink)
	_, sub := gatewaySubscriber(t, a, "sub.>")
	awaitLink(t, ctx, link, leaf.StateConnected, false)
	awaitDownlink(t, ctx, a, "sub", "the downlink pulls", func(st downlink.Status) bool { return st.State == "pulling" })

	// The rate on an intact link: one command outstanding at a time.
	start := time.Now()
	pub.publish(ctx, n1)
	pub.wait(t)
	awaitCond(t, ctx, "the first commands arrive", func() (bool, string) {
		st := dlStatus(t, a, "sub")
		return st.Delivered == n1, fmt.Sprintf("%+v", st)
	})
	rate := float64(n1) / time.Since(start).Seconds()

	// Blackholed: nothing arrives, and the downlink notices.
	proxy.Blackhole()
	holed := time.Now()
	pub.publish(ctx, n1+n2)
	pub.wait(t)
	awaitDownlink(t, ctx, a, "sub", "the downlink notices the missing heartbeat", func(st downlink.Status) bool {
		return strings.Contains(st.LastError, "no heartbeat") && st.State != "pulling"
	})
	noticed := time.Since(holed)
	if st := dlStatus(t, a, "sub"); st.Delivered != n1 || st.LinkState != "connected" {
		// The link itself still believes in the connection: its PINGs
		// are far apart.
		t.Fatalf("blackholed: %+v", st)
	}

	proxy.Restore()
	restored := time.Now()
	awaitDelivered(t, ctx, a, pub.js, "sub", n1+n2)
	recovered := time.Since(restored)
	checkCommands(t, "subscriber", subscriberCommands(t, sub, "sub.", n1+n2), n1+n2, 0)
	t.Logf("%.0f commands/s on an intact link; blackhole noticed after %v; all delivered %v after the restore; %+v",
		rate, noticed.Round(time.Millisecond), recovered.Round(time.Millisecond), dlStatus(t, a, "sub"))
}
