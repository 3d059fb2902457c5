//go:build unix

package main

import (
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
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// publishPhase has each of pubs publishers connect to the gateway at u and
// publish its messages [from, to) on telemetry.p<k>, flushing every batch:
// when it returns, every message is accepted (durable in the outbox).
func publishPhase(t *testing.T, u string, pubs, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, pubs)
	for k := range pubs {
		wg.Go(func() {
			nc, err := nats.Connect(u, nats.Timeout(waitTimeout), nats.NoReconnect())
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			subj := "telemetry.p" + strconv.Itoa(k)
			for i := from; i < to; i++ {
				if err := nc.Publish(subj, []byte(strconv.Itoa(i))); err != nil {
					errs <- fmt.Errorf("publisher %d message %d: %w", k, i, err)
					return
				}
				if (i+1-from)%50 == 0 || i == to-1 {
					if err := nc.FlushTimeout(waitTimeout); err != nil {
						errs <- fmt.Errorf("publisher %d flush at %d: %w", k, i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestUplinkKill9WithLinkCuts runs the real binary with an uplink whose
// leaf link passes through a fault proxy. Publishers publish in phases;
// between and during them the proxy cuts the link and the gateway is
// killed with SIGKILL in the middle of forwarding, once while the link is
// up and once while it is cut, and restarted on the same outbox. The hub
// stream ends with every accepted message exactly once, in per-publisher
// order.
func TestUplinkKill9WithLinkCuts(t *testing.T) {
	const (
		pubs     = 3
		perPhase = 400 // per publisher
		phases   = 3
	)
	// no_advertise: a hub tells leaf nodes its leafnode URLs, which the
	// link would fail over to, around the proxy.
	ctx := testContext(t)
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-faults", Leaf: "no_advertise: true"}, jetstream.StreamConfig{
		Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	})
	hubMsgs := func() uint64 { return streamMsgs(t, ctx, stream) }
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))

	dir := t.TempDir()
	cfg := writeUplinkConfig(t, dir, proxy.LeafURL())

	start := time.Now()
	var (
		p   *proc
		gw  string
		mon string
	)
	boot := func() {
		t.Helper()
		var u fmt.Stringer
		p, _ = startJS(t, cfg, dir)
		pf, _ := p.waitPorts(dir)
		u = loopbackURL(t, pf.Nats)
		gw, mon = u.String(), loopbackURL(t, pf.Monitoring).String()
	}
	kill := func(why string) {
		t.Helper()
		u := getUplinkz(t, mon)
		require.NoError(t, p.cmd.Process.Kill())
		p.wait()
		t.Logf("%v: killed the gateway %s: hub held %d, outbox backlog %d, link %s", time.Since(start).Round(time.Millisecond), why, hubMsgs(), u.BacklogMsgs, u.LinkState)
	}
	connected := func(u uplinkzEntry) bool { return u.LinkState == "connected" }
	// forwarding holds once the hub has more than since messages, or the
	// outbox has nothing left to forward.
	forwarding := func(since uint64) func(uplinkzEntry) bool {
		return func(u uplinkzEntry) bool { return hubMsgs() > since || u.BacklogMsgs == 0 }
	}
	cut := func() {
		t.Helper()
		proxy.Cut()
		waitUplinkz(t, mon, func(u uplinkzEntry) bool { return !connected(u) })
	}

	boot()
	waitUplinkz(t, mon, connected)

	// Phase 1: cut while forwarding, publish the second half into the
	// outbox, restore, and kill -9 as the forwarder resumes on that
	// backlog.
	publishPhase(t, gw, pubs, 0, perPhase/2)
	waitUplinkz(t, mon, forwarding(0))
	cut()
	publishPhase(t, gw, pubs, perPhase/2, perPhase)
	proxy.Restore()
	waitUplinkz(t, mon, connected)
	kill("with the link up")

	// Phase 2: restart while the link is cut, publish into the outbox,
	// restore, then kill -9 again while the link is cut mid-stream.
	proxy.Cut()
	boot()
	publishPhase(t, gw, pubs, perPhase, 2*perPhase)
	proxy.Restore()
	waitUplinkz(t, mon, connected)
	waitUplinkz(t, mon, forwarding(hubMsgs()))
	cut()
	kill("with the link cut")

	// Phase 3: restart with the link up and publish the rest.
	proxy.Restore()
	boot()
	publishPhase(t, gw, pubs, 2*perPhase, phases*perPhase)
	waitUplinkz(t, mon, connected)

	t.Logf("%v: phase 3 published", time.Since(start).Round(time.Millisecond))
	total := uint64(pubs * phases * perPhase)
	awaitHubMsgs(t, ctx, stream, total, p, mon)

	t.Logf("%v: hub complete", time.Since(start).Round(time.Millisecond))
	// Exactly once, in per-publisher order.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	next := make([]int, pubs)
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(500, total-got)), jetstream.FetchMaxWait(waitTimeout))
		require.NoError(t, err)
		for m := range batch.Messages() {
			got++
			k, err := strconv.Atoi(strings.TrimPrefix(m.Subject(), "site1.telemetry.p"))
			if err != nil || k < 0 || k >= pubs {
				t.Fatalf("hub message %d on unexpected subject %q", got, m.Subject())
			}
			if i, err := strconv.Atoi(string(m.Data())); err != nil || i != next[k] {
				t.Fatalf("hub message %d: publisher %d sent %q, want %d (duplicate, gap or reorder)", got, k, m.Data(), next[k])
			}
			next[k]++
		}
		// A consumer just created may not answer at once.
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) &&
			(!errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil) {
			t.Fatalf("fetch: %v", err)
		}
	}
	u := waitUplinkz(t, mon, func(u uplinkzEntry) bool { return u.BacklogMsgs == 0 && u.InFlight == 0 })
	if len(u.Dropped) != 0 || u.WrongStream != 0 {
		t.Fatalf("/uplinkz at the end: %+v", u)
	}
	t.Logf("%d messages through 2 kill -9 and 3 cuts in %v; %s", total, time.Since(start), proxy)
	stopJS(t, p)
}
