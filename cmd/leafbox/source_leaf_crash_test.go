//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	awaitCopiesThenKill(t, ctx, js, p, killAt, origin)
	publish(origin+1, origin+whileDown)

	p2, u2 := startJS(t, cfg, dir)
	_, js2 := jsConnect(t, u2)
	const total = origin + whileDown + afterKill
	publish(origin+whileDown+1, total)
	waitStream(t, ctx, js2, "AGG", total)
	waitStream(t, ctx, js2, "M", total)

	checkAggregate(t, ctx, js2, total, func(stream string) bool { return strings.HasPrefix(stream, "ORDERS:") })
	checkMirror(t, ctx, js2, 1, killAt, origin, origin+whileDown, total)
	stopJS(t, p2)
}
