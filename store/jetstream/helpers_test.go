package jetstream

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/store/vfs"
)

// testBus adapts the server's in-process connection to Bus.
type testBus struct{ c *server.Conn }

func (b testBus) Subscribe(subj, queue string, h func(subject, reply, hdr, data []byte)) (func(), error) {
	sub, err := b.c.Subscribe(subj, queue, func(m server.Msg) { h(m.Subject, m.Reply, m.Header, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

func (b testBus) Publish(subj, reply string, hdr, data []byte) int {
	return b.c.Publish(subj, reply, hdr, data)
}

func (b testBus) PublishAs(route, shown, reply string, hdr, data []byte) int {
	return b.c.PublishAs(route, shown, reply, hdr, data)
}

func (b testBus) HasInterest(subj string) bool { return b.c.HasInterest(subj) }

func (b testBus) HasExactInterest(subj string) bool { return b.c.HasExactInterest(subj) }

func (b testBus) HasQueueInterest(subj, queue string) bool { return b.c.HasQueueInterest(subj, queue) }

func (b testBus) WatchInterest(fn func(subject, queue string)) func() {
	return b.c.WatchInterest(func(ev server.InterestEvent) { fn(ev.Subject, ev.Queue) })
}

// testEnv is a server with a JetStream engine and a client.
type testEnv struct {
	t   testing.TB
	srv *server.Server
	eng *Engine
	cfg Config
	fs  vfs.FS // nil: the OS
	nc  *nats.Conn
	js  njs.JetStream
	// stop closes the current engine's in-process connection.
	stop func()
}

// newTestEnv starts a server and an engine with cfg (StoreDir defaults to
// a temporary directory) and connects a nats.go client.
func newTestEnv(t testing.TB, cfg Config) *testEnv {
	t.Helper()
	return newTestEnvWith(t, &testEnv{t: t, cfg: cfg})
}

// newTestEnvWith starts the server, engine and client of a prepared env.
func newTestEnvWith(t testing.TB, env *testEnv) *testEnv {
	t.Helper()
	if env.cfg.StoreDir == "" {
		env.cfg.StoreDir = t.TempDir()
	}
	env.srv = servertest.Start(t, server.Options{})
	srv := env.srv
	env.startEngine()
	nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	env.nc, env.js = nc, js
	return env
}

// startEngine (re)starts the engine on the same server and store.
func (env *testEnv) startEngine() {
	t := env.t
	t.Helper()
	conn := env.srv.InProcess("")
	eng, err := New(env.cfg, testBus{conn})
	if err != nil {
		t.Fatalf("new engine: %v", err)
	}
	if env.fs != nil {
		eng.fs = env.fs
	}
	env.stop = conn.Close
	if err := eng.Start(); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	env.eng = eng
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
		conn.Close()
	})
}

// restart closes the engine and starts a new one on the same directory.
func (env *testEnv) restart() {
	env.t.Helper()
	if err := env.eng.Close(); err != nil {
		env.t.Fatalf("close engine: %v", err)
	}
	env.startEngine()
}

// newClient connects another nats.go client.
func (env *testEnv) newClient(opts ...nats.Option) (*nats.Conn, njs.JetStream) {
	env.t.Helper()
	nc, err := nats.Connect(env.srv.ClientURL(), append([]nats.Option{nats.NoReconnect()}, opts...)...)
	if err != nil {
		env.t.Fatalf("connect: %v", err)
	}
	env.t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		env.t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// testCtx bounds a whole test: long enough for a loaded machine under the
// race detector (a hang still fails), never a timing assertion.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// forEachStorage runs f once per storage type.
func forEachStorage(t *testing.T, f func(t *testing.T, st njs.StorageType)) {
	t.Helper()
	for _, st := range []njs.StorageType{njs.FileStorage, njs.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) { f(t, st) })
	}
}

// startNATSServerJS starts a real nats-server with JetStream (stopped in
// t.Cleanup) and returns it, a nats.go connection to it (closed in
// t.Cleanup) and its JetStream context: the reference side of the tests
// that compare with nats-server.
func startNATSServerJS(t *testing.T) (*leaftest.Hub, *nats.Conn, njs.JetStream) {
	t.Helper()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Config: fmt.Sprintf("jetstream { store_dir: %q }", filepath.Join(t.TempDir(), "js"))})
	nc, err := nats.Connect(hub.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return hub, nc, js
}
