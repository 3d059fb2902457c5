package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// startMQTTGateway runs a leafbox from conf and returns its monitoring
// URL.
func startMQTTGateway(t *testing.T, conf string) (*app.App, string) {
	t.Helper()
	cfg, err := loadConfig(writeFile(t, "gw.yaml", conf), config.Overrides{})
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return a, "http://" + a.MonitorAddr().String()
}

// `leafbox mqtt status` lists the MQTT listener's address and its
// connected clients (paho.mqtt.golang clients against a running leafbox);
// --json prints the same; a leafbox without the listener says so.
func TestMQTTStatus(t *testing.T) {
	a, mon := startMQTTGateway(t, "server_name: gw1\nlisten: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\njetstream: {enabled: false}\nmqtt: {listen: 127.0.0.1:-1}\n")
	addr := a.MQTTAddr().String()
	for _, id := range []string{"sensor-1", "sensor-2"} {
		c := pahov3.NewClient(pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetProtocolVersion(4).SetAutoReconnect(false))
		tok := c.Connect()
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("connect %s: %v", id, tok.Error())
		}
		t.Cleanup(func() { c.Disconnect(0) })
		if id == "sensor-2" {
			tok := c.Subscribe("a/#", 0, func(pahov3.Client, pahov3.Message) {})
			if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("subscribe: %v", tok.Error())
			}
		}
	}
	stdout, stderr, code := runCLI(t, "mqtt", "status", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "MQTT listener "+addr+": 2 clients",
		"CLIENT ID", "VERSION", "USER", "ACCOUNT", "ADDRESS", "SUBS", "IN", "OUT", "PENDING", "UPTIME", "IDLE",
		"sensor-1", "sensor-2", "3.1.1", "127.0.0.1:")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 {
		t.Fatalf("want the listener, a header and one line per client, got:\n%s", stdout)
	}
	for _, l := range lines[2:] {
		subs := strings.Fields(l)[5]
		if want := map[bool]string{true: "1", false: "0"}[strings.HasPrefix(l, "sensor-2")]; subs != want {
			t.Fatalf("SUBS %s, want %s in %q", subs, want, l)
		}
	}

	stdout, stderr, code = runCLI(t, "mqtt", "status", "--json", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	var got mqttStatus
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json printed no JSON: %v\n%s", err, stdout)
	}
	if got.Listen != addr || len(got.Clients) != 2 || got.Clients[0].Type != "mqtt" {
		t.Fatalf("--json printed %+v", got)
	}

	_, plain := startMQTTGateway(t, "server_name: gw2\nlisten: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\njetstream: {enabled: false}\n")
	stdout, stderr, code = runCLI(t, "mqtt", "status", "--monitor", plain)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "no MQTT listener")
}
