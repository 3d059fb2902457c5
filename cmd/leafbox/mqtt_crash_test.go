//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"
)

// startMQTTLeafbox runs leafbox with JetStream on storeDir and an MQTT
// listener on a free port, and returns it with the MQTT host:port.
func startMQTTLeafbox(t *testing.T, dir, storeDir string) (*proc, string) {
	t.Helper()
	cfg := filepath.Join(dir, "leafbox-mqtt.yaml")
	body := fmt.Sprintf("listen: 127.0.0.1\nport: -1\nhttp_port: 0\njetstream:\n  store_dir: %q\n  sync_interval: always\nmqtt:\n  listen: 127.0.0.1:-1\n", storeDir)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	portsDir := t.TempDir()
	p := start(t, "run", "--config", cfg, "--ports-file-dir", portsDir)
	_, path := p.waitPorts(portsDir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		MQTT []string `json:"mqtt"`
	}
	if err := json.Unmarshal(data, &pf); err != nil || len(pf.MQTT) == 0 {
		t.Fatalf("no mqtt URL in the ports file: %s (%v)", data, err)
	}
	u, err := url.Parse(pf.MQTT[0])
	if err != nil {
		t.Fatal(err)
	}
	return p, u.Host
}

func mqttKeeper(t *testing.T, addr string, got chan pahov3.Message) pahov3.Client {
	t.Helper()
	o := pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("keeper").SetCleanSession(false).
		SetAutoReconnect(false).SetProtocolVersion(4).
		SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) { got <- m })
	c := pahov3.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(waitTimeout) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	return c
}

// A persistent MQTT session, its QoS 1 and 2 messages queued while the
// client was away, and a retained message survive kill -9 of leafbox.
func TestMQTTSessionSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	p, addr := startMQTTLeafbox(t, dir, storeDir)

	got := make(chan pahov3.Message, 100)
	c := mqttKeeper(t, addr, got)
	if tok := c.Subscribe("jobs/#", 2, nil); !tok.WaitTimeout(waitTimeout) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	c.Disconnect(100)

	host, port, _ := cutHostPort(addr)
	pub := func(args ...string) {
		t.Helper()
		out, err := exec.Command("mosquitto_pub", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mosquitto_pub %v: %v\n%s", args, err, out)
		}
	}
	want := []string{"1", "2", "3", "4", "5", "6"}
	for i, m := range want {
		pub("-q", fmt.Sprint(1+i%2), "-t", "jobs/"+m, "-m", m)
	}
	pub("-q", "1", "-r", "-t", "status/pump", "-m", "on")

	p.signal(syscall.SIGKILL)
	p.wait()

	p2, addr2 := startMQTTLeafbox(t, dir, storeDir)
	defer func() { p2.signal(syscall.SIGTERM); p2.wait() }()
	c2 := mqttKeeper(t, addr2, got)
	defer c2.Disconnect(100)
	seen := map[string]int{}
	for range want {
		select {
		case m := <-got:
			seen[string(m.Payload())]++
		case <-time.After(waitTimeout):
			t.Fatalf("after the restart got only %v of %v; log:\n%s", seen, want, p2.log())
		}
	}
	for _, m := range want {
		if seen[m] != 1 {
			t.Fatalf("message %s delivered %d times: %v", m, seen[m], seen)
		}
	}
	retained := make(chan pahov3.Message, 1)
	if tok := c2.Subscribe("status/#", 1, func(_ pahov3.Client, m pahov3.Message) { retained <- m }); !tok.WaitTimeout(waitTimeout) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	select {
	case m := <-retained:
		if string(m.Payload()) != "on" || !m.Retained() {
			t.Fatalf("retained: %q retain=%v", m.Payload(), m.Retained())
		}
	case <-time.After(waitTimeout):
		t.Fatal("retained message lost in the restart")
	}
}

func cutHostPort(addr string) (host, port string, ok bool) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], true
		}
	}
	return addr, "", false
}
