//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestSourceFromAttachedLeafKill9 kills the gateway with SIGKILL while a
// sourcing stream and a mirror copy the stream ORDERS of a nats-server
// attached to its leaf listener with JetStream domain "dev1" (named by
// the domain); the leaf publishes on while the gateway is down, and
// after the restart on the same store both copies end with every origin
// message exactly once and in order, the mirror at the origin's
// sequences.
func TestSourceFromAttachedLeafKill9(t *testing.T) {
	const (
		origin    = 2000 // messages in the origin before the copies start
		killAt    = 200  // copied messages seen before the kill
		whileDown = 100  // published while the gateway is down
		afterKill = 100  // published after the restart
	)
	dir := t.TempDir()
	leafPort := leaftest.FreePort(t)
	cfg := filepath.Join(dir, "gateway.yaml")
	body := fmt.Sprintf("listen: 127.0.0.1\nport: -1\nhttp_port: 0\nserver_name: gw-k9\n"+
		"jetstream:\n  store_dir: %q\n  domain: gw\n  sync_interval: always\nleafnodes:\n  listen: 127.0.0.1:%d\n",
		filepath.Join(dir, "store"), leafPort)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	p, u := startJS(t, cfg, dir)

	dev1 := leaftest.StartHub(t, leaftest.HubOptions{Name: "dev1-leaf",
		Config: fmt.Sprintf("jetstream { store_dir: %q, domain: dev1 }\n", t.TempDir()),
		Leaf:   fmt.Sprintf("remotes: [{url: 'nats-leaf://127.0.0.1:%d'}]", leafPort)})
	nc, err := nats.Connect(dev1.ClientURL(), nats.Timeout(waitTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ljs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i <= to; i++ {
			if _, err := ljs.PublishAsync("orders."+strconv.Itoa(i%7), []byte(strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-ljs.PublishAsyncComplete():
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	publish(1, origin)

	_, js := jsConnect(t, u)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AGG", Storage: jetstream.FileStorage,
		Sources: []*jetstream.StreamSource{{Name: "ORDERS", Domain: "dev1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Storage: jetstream.FileStorage,
		Mirror: &jetstream.StreamSource{Name: "ORDERS", Domain: "dev1"}}); err != nil {
		t.Fatal(err)
	}
	for {
		a, errA := js.Stream(ctx, "AGG")
		m, errM := js.Stream(ctx, "M")
		if errA == nil && errM == nil && a.CachedInfo().State.Msgs >= killAt && m.CachedInfo().State.Msgs >= killAt {
			t.Logf("kill -9 with AGG at %d, M at %d of %d", a.CachedInfo().State.Msgs, m.CachedInfo().State.Msgs, origin)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("copies did not start: %v %v; log:\n%s", errA, errM, p.log())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait()
	publish(origin+1, origin+whileDown)

	p2, u2 := startJS(t, cfg, dir)
	_, js2 := jsConnect(t, u2)
	const total = origin + whileDown + afterKill
	publish(origin+whileDown+1, total)
	waitStream(t, ctx, js2, "AGG", total)
	waitStream(t, ctx, js2, "M", total)

	c, err := js2.OrderedConsumer(ctx, "AGG", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= total; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			h := strings.Fields(msg.Headers().Get("Nats-Stream-Source"))
			if len(h) != 6 || !strings.HasPrefix(h[0], "ORDERS:") || h[1] != strconv.Itoa(want) || string(msg.Data()) != strconv.Itoa(want) {
				t.Fatalf("AGG message %d: header %q data %q", want, h, msg.Data())
			}
			want++
		}
	}
	m, err := js2.Stream(ctx, "M")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, killAt, origin, origin + whileDown, total} {
		got, err := m.GetMsg(ctx, seq)
		if err != nil || string(got.Data) != strconv.FormatUint(seq, 10) {
			t.Fatalf("mirror seq %d: %v %v", seq, got, err)
		}
	}
	stopJS(t, p2)
}
