package app

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestMQTTBridgeThroughUplinkToHub: MQTT device → Mosquitto → MQTT bridge →
// gateway → uplink → nats-server hub stream, with the link to the hub cut
// for a third of the run: every QoS 1 message the device had acknowledged
// is in the hub stream exactly once, in order.
func TestMQTTBridgeThroughUplinkToHub(t *testing.T) {
	const n = 300
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-mqtt"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: 10 * time.Minute})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	mosquittoURL := startTestMosquitto(t)

	c := gatewayConfig(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+proxy.LeafURL()+"'}]}\n"+
		"uplinks: [{name: mq, subjects: [mqtt.>], hub_subject_prefix: site1., stream: SITE}]\n"+
		"bridges:\n  mqtt:\n    - name: site\n      server: "+mosquittoURL+"\n      reconnect_delay: 50ms\n"+
		"      inbound: [{from: 'dev/#', to: 'mqtt.', qos: 1}]\n")
	a := startConfig(t, c, Flags{})
	st := a.bridges.Status("mqtt", "site")
	if st == nil {
		t.Fatal("the app runs no mqtt bridge named site")
	}
	require.NoError(t, st.Wait(ctx, func(s bridge.Snapshot) bool { return s.State == bridge.StateConnected }))

	pub := newE2EPublisher(t, ctx, mosquittoURL)
	for i := range n {
		switch i {
		case n / 3:
			proxy.Cut()
		case 2 * n / 3:
			proxy.Restore()
		}
		for {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := pub.Publish(pctx, &paho.Publish{QoS: 1, Topic: "dev/meter", Payload: fmt.Appendf(nil, "msg-%d", i)})
			pcancel()
			if err == nil {
				break
			}
			require.NoError(t, ctx.Err())
		}
	}
	awaitStreamMsgs(t, ctx, stream, n, func() string { return fmt.Sprintf("bridge %+v, uplink %+v", st.Snapshot(), a.UplinkStatus()[0]) })
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	for i := range n {
		m, err := stream.GetMsg(ctx, info.State.FirstSeq+uint64(i))
		require.NoError(t, err)
		if want := fmt.Sprintf("msg-%d", i); string(m.Data) != want || m.Subject != "site1.mqtt.dev.meter" {
			t.Fatalf("hub message %d: %s %q, want %q", i, m.Subject, m.Data, want)
		}
	}
	t.Logf("bridge %+v; uplink %+v; proxy %v", st.Snapshot(), a.UplinkStatus()[0], proxy)
}

// startTestMosquitto runs Mosquitto on 127.0.0.1 and a free port until the
// test ends and returns its URL.
func startTestMosquitto(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mosquitto")
	if err != nil {
		path = "/usr/sbin/mosquitto"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	conf := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\nlog_dest stderr\nlog_type error\n", ln.Addr().(*net.TCPAddr).Port)
	if os.Getuid() == 0 {
		conf += "user root\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.conf"), []byte(conf), 0o600))
	cmd := exec.Command(path, "-c", filepath.Join(dir, "m.conf"))
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	for deadline := time.Now().Add(testTimeout); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "mqtt://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s: %v", addr, err)
		}
		select {
		case <-done:
			t.Fatal("mosquitto exited")
		case <-time.After(10 * time.Millisecond): // a listener gives no other signal
		}
	}
}

// newE2EPublisher connects an MQTT 5 device to the broker at rawURL.
func newE2EPublisher(t *testing.T, ctx context.Context, rawURL string) *autopaho.ConnectionManager {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30,
		ReconnectBackoff: autopaho.NewConstantBackoff(50 * time.Millisecond), ClientConfig: paho.ClientConfig{ClientID: "e2e-device"}})
	require.NoError(t, err)
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer dcancel()
		_ = cm.Disconnect(dctx)
	})
	require.NoError(t, cm.AwaitConnection(ctx))
	return cm
}
