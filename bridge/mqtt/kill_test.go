package mqtt

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/store/jetstream"
)

// The kill -9 test runs a gateway in a child process: the test binary
// itself, with gatewayEnv set, runs a server, a file JetStream engine and
// an MQTT bridge storing "data/#" on "site.>" until it is killed. (Once
// the composition root runs bridges, cmd/leafbox with a bridges.mqtt
// config is the same gateway.)
const gatewayEnv = "LEAFBOX_MQTT_TEST_GATEWAY"

func TestMain(m *testing.M) {
	if spec := os.Getenv(gatewayEnv); spec != "" {
		os.Exit(runGateway(spec))
	}
	os.Exit(m.Run())
}

// runGateway runs the child gateway: spec is "<store dir> <mqtt url>
// <version>". It prints "READY <client url>" and the bridge's log on
// stdout.
func runGateway(spec string) int {
	f := strings.Fields(spec)
	logger := slog.New(slog.NewTextHandler(os.Stdout, nil))
	srv, err := server.New(server.Options{Host: "127.0.0.1", Port: server.RandomPort})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	jsConn := srv.InProcess("")
	eng, err := jetstream.New(jetstream.Config{StoreDir: f[0]}, engineBus{jsConn})
	if err == nil {
		err = eng.Start()
	}
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	version, _ := ParseVersion(f[2])
	b, err := New(Config{Name: "gw", Server: f[1], Version: version, ClientID: "leafbox-kill-gw", SessionExpiry: time.Hour,
		ReconnectDelay: 50 * time.Millisecond, Inbound: []InboundRoute{{From: "data/#", To: "site.", QoS: 1, Store: true}}})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("READY", srv.ClientURL())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	bus := &testBus{c: srv.InProcess("")}
	if err := b.Run(ctx, bridge.Env{Bus: bus, Status: &bridge.Status{}, Logger: logger}); err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	return 0
}

// gateway is a running child gateway.
type gateway struct {
	cmd       *exec.Cmd
	url       string
	connected chan struct{}
	done      chan struct{}
}

// startGateway starts a child gateway on dir and waits until its bridge
// is connected.
func startGateway(t *testing.T, dir string, m *mosquitto, v Version) *gateway {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gatewayEnv+"="+dir+" "+m.url()+" "+v.String())
	cmd.Stderr = &testWriter{t: t, prefix: "gateway stderr: "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gateway{cmd: cmd, connected: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(out)
		connected := false
		for sc.Scan() {
			line := sc.Text()
			if url, ok := strings.CutPrefix(line, "READY "); ok {
				ready <- url
			}
			if !connected && strings.Contains(line, "mqtt bridge connected") {
				connected = true
				close(g.connected)
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-g.done
	})
	select {
	case g.url = <-ready:
	case <-g.done:
		t.Fatal("gateway exited before it was ready")
	case <-time.After(20 * time.Second):
		t.Fatal("gateway not ready")
	}
	select {
	case <-g.connected:
	case <-g.done:
		t.Fatal("gateway exited before its bridge connected")
	case <-time.After(20 * time.Second):
		t.Fatal("gateway's bridge not connected")
	}
	return g
}

// kill kills the gateway with SIGKILL.
func (g *gateway) kill(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-g.done
}

// TestKill9LosesNoAcknowledgedQoS1Message kills the gateway with -9 while a
// client publishes QoS 1 messages to Mosquitto, and starts it again on
// the same store: every message Mosquitto acknowledged to the publisher is
// in the stream, once, in order.
func TestKill9LosesNoAcknowledgedQoS1Message(t *testing.T) {
	for _, v := range []Version{V5, V311} {
		t.Run("v"+v.String(), func(t *testing.T) {
			const n = 600
			m := startMosquitto(t)
			dir := t.TempDir()
			g := startGateway(t, dir, m, v)
			nc, err := nats.Connect(g.url, nats.NoReconnect())
			if err != nil {
				t.Fatal(err)
			}
			js, err := njs.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := js.CreateStream(ctx, njs.StreamConfig{Name: "MQTT", Subjects: []string{"site.>"}, Storage: njs.FileStorage}); err != nil {
				t.Fatal(err)
			}
			nc.Close()

			pub := newPahoClient(t, m, "kill-publisher", nil)
			for i := range n {
				publishQoS1(t, pub, "data/line1", fmt.Sprintf("p-%d", i), fmt.Appendf(nil, "msg-%d", i))
				switch i {
				case n / 3:
					g.kill(t) // mid-stream: the bridge has messages in flight
				case n / 2:
					g = startGateway(t, dir, m, v) // Mosquitto kept the rest for its session
				}
			}
			nc, err = nats.Connect(g.url, nats.NoReconnect())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err = njs.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			s, err := js.Stream(ctx, "MQTT")
			if err != nil {
				t.Fatal(err)
			}
			requireStreamSequence(t, s, n)
		})
	}
}
