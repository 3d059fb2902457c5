package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// storeFixture runs a leafbox on a fresh store, fills a file stream with
// 50 messages (3 deleted) and a durable that acked 10, and returns the
// running app and the store directory.
func storeFixture(t *testing.T) (*app.App, string) {
	t.Helper()
	a, dir, _ := storeFixtureWith(t, "")
	return a, dir
}

// storeFixtureWith is storeFixture with jsExtra, more keys of the jetstream block
// (", cipher: aes, key_file: ..."); it returns the configuration file too.
func storeFixtureWith(t *testing.T, jsExtra string) (*app.App, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "store")
	// The uplink's hub never answers, so what it captures stays in its
	// outbox.
	conf := writeFile(t, "gw.yaml", fmt.Sprintf("listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\njetstream: {store_dir: %q%s}\n", dir, jsExtra)+
		"leafnodes: {remotes: [{url: 'nats-leaf://127.0.0.1:1'}]}\nuplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: s.}]\n")
	cfg, err := loadConfig(conf, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopApp(t, a)
		}
	})
	nc, err := nats.Connect("nats://" + a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := js.Publish(ctx, fmt.Sprintf("orders.%d", i%4), make([]byte, 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{1, 20, 21} {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if err := nc.Publish("telemetry.t", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the uplink stores 5 messages in its outbox", func() bool { return a.UplinkStatus()[0].Stored == 5 })
	return a, dir, conf
}

func stopApp(t *testing.T, a *app.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// store verify and store inspect refuse a store a running leafbox holds,
// then describe the stopped one: the stream's counts and sequences and the
// consumer's ack floor.
func TestStoreVerifyInspect(t *testing.T) {
	a, dir := storeFixture(t)
	for _, sub := range []string{"verify", "inspect"} {
		_, stderr, code := runCLI(t, "store", sub, dir)
		requireCode(t, code, 1, stderr)
		requireContains(t, "stderr of "+sub+" on a live store", stderr, "in use by pid", "stop it first")
	}
	stopApp(t, a)
	// An internal stream, as the MQTT listener keeps, has no meta.json.
	internal, err := filestore.Open(vfs.OS, filepath.Join(dir, "streams", "mqtt.G.sess", "msgs"), filestore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := internal.Store("s", nil, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := internal.Close(); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runCLI(t, "store", "verify", dir)
	requireCode(t, code, 0, stderr)
	requireContains(t, "verify", stdout, "stream ORDERS: 47 messages", "seq 2..50", ": ok",
		"consumer billing: ", "ack floor 11", "stream mqtt.G.sess: 1 message", "checked 2 streams, 1 consumer", "store outbox/tel", "5 messages", "no damage")
	t.Logf("store verify:\n%s", stdout)

	stdout, stderr, code = runCLI(t, "store", "inspect", dir)
	requireCode(t, code, 0, stderr)
	requireContains(t, "inspect", stdout, "STREAM", "ORDERS", "file", "orders.>", "47", "CONSUMER", "billing", "explicit", "mqtt.G.sess  internal", "STORE", "outbox/tel")
	t.Logf("store inspect:\n%s", stdout)
}

// A flipped bit in a block and a truncated consumer log are damage: exit
// status 2 and a DAMAGE line naming the file.
func TestStoreVerifyDamage(t *testing.T) {
	a, dir := storeFixture(t)
	stopApp(t, a)
	blocks, err := filepath.Glob(filepath.Join(dir, "streams", "ORDERS", "msgs", "*.blk"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("blocks: %v %v", blocks, err)
	}
	sort.Strings(blocks)
	b, err := os.ReadFile(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(blocks[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "store", "verify", dir)
	requireCode(t, code, exitDamaged, stderr)
	requireContains(t, "verify of a flipped bit", stdout, "DAMAGE: "+blocks[0], "corrupt records", "DAMAGED")

	log := filepath.Join(dir, "streams", "ORDERS", "obs", "billing", "consumer.log")
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, "store", "verify", dir)
	requireCode(t, code, exitDamaged, stderr)
	requireContains(t, "verify of a truncated log", stdout, "DAMAGE: "+log, "3 files DAMAGED")
	t.Logf("store verify of a damaged store:\n%s", stdout)

	stdout, stderr, code = runCLI(t, "store", "inspect", dir)
	requireCode(t, code, 0, stderr)
	requireContains(t, "inspect of a damaged store", stdout, "3 files damaged", "leafbox store verify")

	_, stderr, code = runCLI(t, "store", "verify", filepath.Join(dir, "nope"))
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "no such file or directory")
}
