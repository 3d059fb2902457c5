package mqtt

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/bridge"
)

// testConfig is a bridge toward m with the given routes.
func testConfig(m *mosquitto, v Version, name string) Config {
	return Config{
		Name:           name,
		Server:         m.url(),
		Version:        v,
		ClientID:       "leafbox-test-" + name,
		SessionExpiry:  time.Hour,
		ReconnectDelay: 50 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
	}
}

// mustSubscribe subscribes nc to subj with a channel.
func mustSubscribe(t *testing.T, nc *nats.Conn, subj string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 1024)
	sub, err := nc.ChanSubscribe(subj, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

func nextMsg(t *testing.T, ch chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
		return nil
	}
}

// mosquittoPub runs mosquitto_pub against m.
func mosquittoPub(t *testing.T, m *mosquitto, args ...string) {
	t.Helper()
	args = append([]string{"-h", "127.0.0.1", "-p", fmt.Sprint(m.port)}, args...)
	out, err := exec.Command("mosquitto_pub", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mosquitto_pub %v: %v\n%s", args, err, out)
	}
}

// newPahoClient connects an MQTT 5 test client to m.
func newPahoClient(t testing.TB, m *mosquitto, id string, onMsg func(paho.PublishReceived)) *autopaho.ConnectionManager {
	t.Helper()
	u, err := ServerURL(m.url())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := autopaho.ClientConfig{
		ServerUrls:            []*url.URL{u},
		KeepAlive:             30,
		SessionExpiryInterval: 3600,
		ReconnectBackoff:      autopaho.NewConstantBackoff(50 * time.Millisecond),
		ClientConfig:          paho.ClientConfig{ClientID: id},
	}
	if onMsg != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) { onMsg(pr); return true, nil }}
	}
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = cm.Disconnect(dctx)
		dcancel()
		cancel()
	})
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	if err := cm.AwaitConnection(actx); err != nil {
		t.Fatal(err)
	}
	return cm
}

func TestInboundMapping(t *testing.T) {
	for _, v := range []Version{V5, V311} {
		t.Run("v"+v.String(), func(t *testing.T) {
			m := startMosquitto(t)
			b := newTestBroker(t)
			ch := mustSubscribe(t, b.nc, "site.>")
			cfg := testConfig(m, v, "in")
			cfg.Inbound = []InboundRoute{{From: "sensors/#", To: "site.", QoS: 1}}
			st, _ := runBridge(t, cfg, b.bus)

			mosquittoPub(t, m, "-V", "mqttv5", "-q", "1", "-t", "sensors/hall/spBv1.0/temp", "-m", "21.5",
				"-D", "publish", "user-property", "unit", "C", "-D", "publish", "content-type", "text/plain",
				"-D", "publish", "message-expiry-interval", "60")
			msg := nextMsg(t, ch)
			if got, want := msg.Subject, "site.sensors.hall.spBv1//0.temp"; got != want {
				t.Fatalf("subject %q, want %q", got, want)
			}
			if string(msg.Data) != "21.5" {
				t.Fatalf("data %q", msg.Data)
			}
			if v == V5 {
				for k, want := range map[string]string{"unit": "C", "Mqtt-Content-Type": "text/plain", "Mqtt-Message-Expiry": "60"} {
					if got := msg.Header.Get(k); got != want {
						t.Errorf("header %s = %q, want %q (headers %v)", k, got, want, msg.Header)
					}
				}
			} else if len(msg.Header) != 0 {
				t.Errorf("MQTT 3.1.1 message has headers %v", msg.Header)
			}

			// The parent topic of "sensors/#", an empty level, a retained
			// message published before... and a QoS 0 message from paho.
			mosquittoPub(t, m, "-q", "0", "-t", "sensors", "-m", "parent")
			if msg := nextMsg(t, ch); msg.Subject != "site.sensors" || string(msg.Data) != "parent" {
				t.Fatalf("got %q %q", msg.Subject, msg.Data)
			}
			mosquittoPub(t, m, "-q", "1", "-r", "-t", "sensors//a b", "-m", "x")
			msg = nextMsg(t, ch)
			if msg.Subject != "site.sensors./.a/20b" {
				t.Fatalf("subject %q", msg.Subject)
			}
			if got := msg.Header.Get("Mqtt-Retain"); got != "" {
				t.Fatalf("a live retained publish arrives with retain %q (brokers clear it for live subscribers)", got)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer wcancel()
			if err := st.Wait(wctx, func(s bridge.Snapshot) bool { return s.In == 3 }); err != nil {
				t.Fatalf("In = %d, want 3", st.Snapshot().In)
			}
			// A second bridge subscribing later receives the retained
			// message with the retain flag.
			cfg2 := testConfig(m, v, "late")
			cfg2.Inbound = []InboundRoute{{From: "sensors/+/a b", To: "late.", QoS: 1}}
			late := mustSubscribe(t, b.nc, "late.>")
			runBridge(t, cfg2, b.bus)
			msg = nextMsg(t, late)
			if msg.Subject != "late.sensors./.a/20b" || msg.Header.Get("Mqtt-Retain") != "true" {
				t.Fatalf("retained: %q %v", msg.Subject, msg.Header)
			}
		})
	}
}

func TestOutboundToMosquittoSub(t *testing.T) {
	for _, v := range []Version{V5, V311} {
		t.Run("v"+v.String(), func(t *testing.T) {
			m := startMosquitto(t)
			b := newTestBroker(t)
			cfg := testConfig(m, v, "out")
			cfg.Outbound = []OutboundRoute{{From: "cmd.>", StripPrefix: "cmd.", To: "devices/", QoS: 1}}
			st, _ := runBridge(t, cfg, b.bus)

			sub := exec.Command("mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(m.port), "-V", "mqttv5", "-q", "1",
				"-t", "devices/#", "-C", "3", "-F", "%t %p %P", "-W", "20")
			stdout, err := sub.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			sub.Stderr = &testWriter{t: t, prefix: "mosquitto_sub: "}
			if err := sub.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// mosquitto_sub is subscribed once it prints the retained
			// probe published by the test itself.
			mosquittoPub(t, m, "-q", "1", "-r", "-t", "devices/probe", "-m", "probe")
			want := []string{"devices/probe probe ", "devices/pump/1 on ", "devices/valve//x on "}
			if v == V5 {
				want[1] += "unit:C"
				want[2] += "unit:C"
			}
			var got []string
			for line := range lines {
				got = append(got, line)
				if len(got) == 1 {
					hdr := nats.Header{}
					hdr.Set("unit", "C")
					for _, s := range []string{"cmd.pump.1", "cmd.valve./.x"} {
						if err := b.nc.PublishMsg(&nats.Msg{Subject: s, Header: hdr, Data: []byte("on")}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if err := sub.Wait(); err != nil {
				t.Fatalf("mosquitto_sub: %v (printed %q)", err, got)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("mosquitto_sub printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := st.Wait(ctx, func(s bridge.Snapshot) bool { return s.Out == 2 }); err != nil {
				t.Fatalf("Out = %d, want 2", st.Snapshot().Out)
			}
		})
	}
}
