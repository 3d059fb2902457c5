//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMQTTBridgeKill9 runs the leafbox binary with an MQTT bridge storing
// "data/#" in a local stream, kills it with -9 while a device publishes
// QoS 1 messages to Mosquitto, and starts it again on the same store:
// every message Mosquitto acknowledged to the device is in the stream,
// once, in order (the bridge acknowledges to Mosquitto only what the
// stream stored; Mosquitto redelivers the rest to the bridge's session).
func TestMQTTBridgeKill9(t *testing.T) {
	for _, version := range []string{"5", "3.1.1"} {
		t.Run("v"+version, func(t *testing.T) {
			const n = 600
			ctx, cancel := context.WithTimeout(context.Background(), 4*waitTimeout)
			defer cancel()
			broker := startCrashMosquitto(t)
			dir := t.TempDir()
			storeDir := filepath.Join(dir, "store")
			cfg := jsTestConfig(t, dir, storeDir)
			f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "server_name: gw1\nbridges:\n  mqtt:\n    - name: site\n      server: %s\n      version: %q\n"+
				"      reconnect_delay: 50ms\n      inbound: [{from: 'data/#', to: 'site.', qos: 1, store: true}]\n", broker, version)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			p, u := startJS(t, cfg, t.TempDir())
			_, js := jsConnect(t, u)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MQTT", Subjects: []string{"site.>"}, Storage: jetstream.FileStorage}); err != nil {
				t.Fatal(err)
			}
			p.waitLog("mqtt bridge connected")

			device := newCrashDevice(t, ctx, broker)
			for i := range n {
				for {
					pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
					_, err := device.Publish(pctx, &paho.Publish{QoS: 1, Topic: "data/meter", Payload: fmt.Appendf(nil, "msg-%d", i)})
					pcancel()
					if err == nil {
						break // Mosquitto acknowledged it
					}
					if ctx.Err() != nil {
						t.Fatal(err)
					}
				}
				switch i {
				case n / 3:
					p.signal(syscall.SIGKILL) // the bridge has messages in flight
					p.wait()
				case n / 2:
					p, u = startJS(t, cfg, t.TempDir())
					p.waitLog("mqtt bridge connected")
				}
			}
			_, js = jsConnect(t, u)
			stream, err := js.Stream(ctx, "MQTT")
			if err != nil {
				t.Fatal(err)
			}
			var info *jetstream.StreamInfo
			for deadline := time.Now().Add(waitTimeout); ; {
				if info, err = stream.Info(ctx); err == nil && info.State.Msgs >= n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the stream holds %+v (%v), want %d messages", info, err, n)
				}
				select {
				case <-time.After(20 * time.Millisecond): // the stream signals nothing to a client
				case <-ctx.Done():
				}
			}
			if info.State.Msgs != n {
				t.Fatalf("the stream holds %d messages, want %d", info.State.Msgs, n)
			}
			for i := range n {
				m, err := stream.GetMsg(ctx, info.State.FirstSeq+uint64(i))
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("msg-%d", i); string(m.Data) != want || m.Subject != "site.data.meter" {
					t.Fatalf("message %d: %s %q, want %q", i, m.Subject, m.Data, want)
				}
			}
		})
	}
}

// startCrashMosquitto runs Mosquitto on 127.0.0.1 and a free port until
// the test ends and returns its URL.
func startCrashMosquitto(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mosquitto")
	if err != nil {
		path = "/usr/sbin/mosquitto"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	conf := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\nlog_dest stderr\nlog_type error\n",
		ln.Addr().(*net.TCPAddr).Port)
	if os.Getuid() == 0 {
		conf += "user root\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "m.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-c", filepath.Join(dir, "m.conf"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	for deadline := time.Now().Add(waitTimeout); ; {
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

// newCrashDevice connects an MQTT 5 device to the broker at rawURL.
func newCrashDevice(t *testing.T, ctx context.Context, rawURL string) *autopaho.ConnectionManager {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30,
		ReconnectBackoff: autopaho.NewConstantBackoff(50 * time.Millisecond), ClientConfig: paho.ClientConfig{ClientID: "crash-device"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer dcancel()
		_ = cm.Disconnect(dctx)
	})
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	return cm
}
