package mqtt

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/bridge"
)

// TestOutboundStreamWaitsForTheBroker: messages of an outbound route with a
// stream published while Mosquitto is down stay in the stream and reach
// the MQTT subscriber, every one, in order, once it is back.
func TestOutboundStreamWaitsForTheBroker(t *testing.T) {
	const n = 100
	m := startMosquitto(t)
	b := newTestBroker(t)
	b.addStream(t, "CMD", "cmd.>")
	cfg := testConfig(m, V5, "outstream")
	cfg.Outbound = []OutboundRoute{{From: "cmd.>", StripPrefix: "cmd.", To: "devices/", QoS: 1, Stream: "CMD"}}
	st, lw := runBridge(t, cfg, b.bus)

	var mu sync.Mutex
	var got []int
	gotOne := make(chan struct{}, n*2)
	newPahoDevice(t, m, "subscriber", "devices/#", func(pr paho.PublishReceived) {
		i, err := strconv.Atoi(strings.TrimPrefix(string(pr.Packet.Payload), "msg-"))
		if err != nil || pr.Packet.Topic != "devices/pump" {
			t.Errorf("received %q on %q", pr.Packet.Payload, pr.Packet.Topic)
		}
		mu.Lock()
		got = append(got, i)
		mu.Unlock()
		gotOne <- struct{}{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(i int) {
		if _, err := b.js.Publish(ctx, "cmd.pump", fmt.Appendf(nil, "msg-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n / 2 {
		publish(i)
	}
	m.stop()
	lw.wait("mqtt bridge disconnected", 1)
	for i := n / 2; i < n; i++ {
		publish(i) // kept in the stream
	}
	m.start()
	// Every message arrives, never out of order. QoS 1 is at least once:
	// Mosquitto keeps the messages it had in flight to the subscriber
	// (up to its default max_inflight_messages, 20) in its persistence
	// file and sends them again after the restart, so the sequence may
	// step back by up to that many and then runs on without a gap.
	for {
		mu.Lock()
		last := -1
		if len(got) > 0 {
			last = got[len(got)-1]
		}
		mu.Unlock()
		if last == n-1 {
			break
		}
		select {
		case <-gotOne:
		case <-ctx.Done():
			t.Fatalf("subscriber got %v", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	const brokerInflight = 20
	next, prev := 0, -1
	for _, i := range got {
		if i != prev+1 && (i > prev || i < next-brokerInflight) {
			t.Fatalf("out of order at %d (after %d): %v", i, prev, got)
		}
		prev = i
		if i == next {
			next++
		}
	}
	if next != n {
		t.Fatalf("got up to %d of %d: %v", next, n, got)
	}
	if err := st.Wait(ctx, func(s bridge.Snapshot) bool { return s.Out >= n }); err != nil {
		t.Fatalf("Out = %d: %v", st.Snapshot().Out, err)
	}
	if snap := st.Snapshot(); snap.Drops[bridge.DropNotConnected] != 0 {
		t.Fatalf("drops %v", snap.Drops)
	}
}

// TestOutboundRetain: a route with retain publishes retained messages, so
// a subscriber that comes later gets the last one, with its properties.
func TestOutboundRetain(t *testing.T) {
	for _, v := range []Version{V5, V311} {
		t.Run("v"+v.String(), func(t *testing.T) {
			m := startMosquitto(t)
			b := newTestBroker(t)
			cfg := testConfig(m, v, "retain")
			cfg.Outbound = []OutboundRoute{{From: "display.>", StripPrefix: "display.", To: "panel/", QoS: 1, Retain: true}}
			st, _ := runBridge(t, cfg, b.bus)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i, text := range []string{"old", "new"} {
				msg := nats.NewMsg("display.line1")
				msg.Data = []byte(text)
				msg.Header.Set("Mqtt-Content-Type", "text/plain")
				msg.Header.Set("Mqtt-Message-Expiry", "3600")
				if err := b.nc.PublishMsg(msg); err != nil {
					t.Fatal(err)
				}
				if err := st.Wait(ctx, func(s bridge.Snapshot) bool { return s.Out == uint64(i+1) }); err != nil {
					t.Fatalf("Out = %d", st.Snapshot().Out)
				}
			}
			out, err := exec.CommandContext(ctx, "mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(m.port), "-V", "mqttv5",
				"-t", "panel/#", "-C", "1", "-W", "10", "-F", "%t %p %r %C").CombinedOutput()
			if err != nil {
				t.Fatalf("mosquitto_sub: %v\n%s", err, out)
			}
			want := "panel/line1 new 1"
			if v == V5 {
				want += " text/plain"
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Fatalf("late subscriber got %q, want %q", got, want)
			}
		})
	}
}
