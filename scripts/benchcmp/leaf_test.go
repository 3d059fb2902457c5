package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

func TestTelemetryPayloadIsJSONOfExactSize(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var buf []byte
	for _, i := range []int{0, 7, 99, 100, 12_345, 999_999_999} {
		for _, size := range []int{telemetryMinSize, 200} {
			buf = telemetryPayload(buf[:0], i, size, ts, rnd)
			if len(buf) != size {
				t.Fatalf("message %d, size %d: payload is %d B: %s", i, size, len(buf), buf)
			}
			var v struct {
				Dev  string  `json:"dev"`
				Seq  int     `json:"seq"`
				TS   int64   `json:"ts"`
				Temp float64 `json:"temp"`
			}
			if err := json.Unmarshal(buf, &v); err != nil {
				t.Fatalf("message %d: %v in %s", i, err, buf)
			}
			if v.Seq != i || v.TS != ts.UnixMilli() || v.Temp < 15 || v.Temp > 25 || !strings.HasPrefix(v.Dev, "dev") {
				t.Errorf("message %d decoded as %+v", i, v)
			}
		}
	}
	if got := telemetrySubject(123); got != "telemetry.site1.dev023" {
		t.Errorf("telemetrySubject(123) = %q", got)
	}
}

// TestPublishTelemetry publishes to a scripted server and checks every
// PUB and the PING after each window.
func TestPublishTelemetry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = telemetryWindow + 5
	got := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		io.WriteString(c, "INFO {}\r\n")
		r := bufio.NewReader(c)
		var subjects []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				got <- subjects
				return
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "PUB":
				subjects = append(subjects, f[1])
				if _, err := r.Discard(telemetryMinSize + 2); err != nil {
					got <- subjects
					return
				}
			case len(f) == 1 && f[0] == "PING":
				io.WriteString(c, "PING\r\nPONG\r\n") // a server PING first, which the client answers
			}
		}
	}()
	if err := publishTelemetry(context.Background(), ln.Addr().String(), n, telemetryMinSize, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	subjects := <-got
	if len(subjects) != n || subjects[0] != "telemetry.site1.dev000" || subjects[n-1] != telemetrySubject(n-1) {
		t.Errorf("server saw %d PUBs (first %v), want %d", len(subjects), subjects[:min(1, len(subjects))], n)
	}
	if err := publishTelemetry(context.Background(), ln.Addr().String(), 1, 64, time.Second); err == nil {
		t.Error("64 B payload: no error")
	}
}

// TestLinkProxyGatesAndCounts checks that a down proxy refuses
// connections, and that once up it relays both ways, counts the bytes and
// records when the link came up.
func TestLinkProxyGatesAndCounts(t *testing.T) {
	hub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	go func() {
		for {
			c, err := hub.Accept()
			if err != nil {
				return
			}
			go func() { // echo, doubled
				defer c.Close()
				b := make([]byte, 64)
				for {
					n, err := c.Read(b)
					if err != nil {
						return
					}
					c.Write(append(b[:n:n], b[:n]...))
				}
			}()
		}
	}()

	p, err := newLinkProxy(hub.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	linked, linkedAt := p.linkedSince()

	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("down proxy: read succeeded, want the connection closed")
	}
	c.Close()
	select {
	case <-linked:
		t.Fatal("linked while down")
	default:
	}

	before := time.Now()
	p.setUp(true)
	c, err = net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 10)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hellohello" {
		t.Fatalf("read %q, %v", b, err)
	}
	<-linked
	if at := linkedAt(); at.Before(before) {
		t.Errorf("linked at %v, before the proxy came up at %v", at, before)
	}
	// The proxy counts a write once it returns, which can be after the
	// reader has the bytes: await the count.
	deadline := time.Now().Add(10 * time.Second)
	for {
		to, from := p.bytes()
		if to == 5 && from == 10 {
			break
		}
		if time.Now().After(deadline) || to > 5 || from > 10 {
			t.Fatalf("bytes = %d to the hub, %d from it; want 5 and 10", to, from)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLeafMonitoringParsers(t *testing.T) {
	port, err := leafPort([]byte(`{"server_id":"X","leaf":{"host":"127.0.0.1","port":33281,"auth_timeout":2}}`))
	if err != nil || port != 33281 {
		t.Errorf("leafPort = %d, %v", port, err)
	}
	if _, err := leafPort([]byte(`{"server_id":"X"}`)); err == nil {
		t.Error("leafPort without a leaf block: no error")
	}

	n, comp, err := leafzLinks([]byte(`{"leafnodes":1,"leafs":[{"name":"edge","in_bytes":1281200,"compression":"s2_fast"}]}`))
	if err != nil || n != 1 || comp != "s2_fast" {
		t.Errorf("leafzLinks = %d, %q, %v", n, comp, err)
	}
	if n, _, err := leafzLinks([]byte(`{"leafnodes":0}`)); err != nil || n != 0 {
		t.Errorf("leafzLinks of none = %d, %v", n, err)
	}

	jsz := []byte(`{"streams":2,"account_details":[{"name":"$G","stream_detail":[
		{"name":"OTHER","state":{"messages":5}},
		{"name":"SITE1","state":{"messages":10000,"bytes":2868894}}]}]}`)
	if msgs, ok, err := jszStreamMsgs(jsz, "SITE1"); err != nil || !ok || msgs != 10000 {
		t.Errorf("jszStreamMsgs = %d, %v, %v", msgs, ok, err)
	}
	if _, ok, err := jszStreamMsgs(jsz, "NONE"); err != nil || ok {
		t.Errorf("absent stream: ok %v, err %v", ok, err)
	}
	if _, _, err := jszStreamMsgs([]byte(`{"account_details":`), "SITE1"); err == nil {
		t.Error("truncated /jsz: no error")
	}
}

func TestLeafSetupsBindLoopbackAndChosenPorts(t *testing.T) {
	hub := hubSetup("/tmp/x/hub")
	if !strings.Contains(hub.config, `listen: "127.0.0.1:-1"`) || !strings.Contains(hub.config, "domain: hub") ||
		!strings.Contains(hub.config, "compression: accept") {
		t.Errorf("hub config:\n%s", hub.config)
	}
	for _, style := range []serverStyle{styleLeafbox, styleNATS} {
		setup, err := gatewaySetup(style, "/tmp/x/gw", "127.0.0.1:40000", compressFast)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(setup.args, " ") + "\n" + setup.config
		for _, want := range []string{"127.0.0.1", "nats-leaf://127.0.0.1:40000", "compression: s2_fast", "/tmp/x/gw"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s gateway: %q missing from\n%s", style, want, all)
			}
		}
		if strings.Contains(all, "4222") || strings.Contains(all, "8222") {
			t.Errorf("%s gateway binds a fixed port:\n%s", style, all)
		}
	}
	if _, err := gatewaySetup("mosquitto", "/tmp/x", "127.0.0.1:1", compressOff); err == nil {
		t.Error("unknown style: no error")
	}
	src := hubStreamConfig(true)
	if len(src.Sources) != 1 || src.Sources[0].External.API != "$JS.edge.API" || hubStreamConfig(false).Sources != nil {
		t.Errorf("hub stream configs: %+v", src)
	}
}

func TestOnlySelectsGroups(t *testing.T) {
	only, err := parseOnly("leaf, js")
	if err != nil || !only[groupLeaf] || !only[groupJS] || only[groupCore] {
		t.Fatalf("parseOnly = %v, %v", only, err)
	}
	if _, err := parseOnly("leaf,canbus"); err == nil || !strings.Contains(err.Error(), "canbus") {
		t.Errorf("unknown group: %v", err)
	}
	w := defaultWorkload(true)
	scs := selectGroups(scenarios(w), map[string]bool{groupLeaf: true})
	if len(scs) == 0 {
		t.Fatal("no leaf scenarios")
	}
	for _, sc := range scs {
		if sc.group() != groupLeaf {
			t.Errorf("%s selected for leaf", sc.slug)
		}
	}
	if lines := w.describe(map[string]bool{groupLeaf: true}); len(lines) != 4 || !strings.Contains(lines[0], "5,000 JSON telemetry") || !strings.HasPrefix(lines[3], "Uplink shaped") {
		t.Errorf("leaf workload lines: %q", lines)
	}
	if all := w.describe(map[string]bool{groupCore: true, groupJS: true, groupLeaf: true}); !strings.HasPrefix(all[len(all)-1], "RSS:") {
		t.Errorf("full workload does not end with the RSS line: %q", all[len(all)-1])
	}
}

// TestLeafForwardWithNATSGateway runs the forward row once with
// nats-server on both ends (the stand-in set-up), proving the hub config,
// the sourcing stream, the proxy and the stream count together.
func TestLeafForwardWithNATSGateway(t *testing.T) {
	natsServer := leaftest.Binary(t)
	natsBin := filepath.Join(filepath.Dir(natsServer), "nats")
	if _, err := os.Stat(natsBin); err != nil {
		t.Fatalf("natscli not next to %s: %v (scripts/test installs both)", natsServer, err)
	}
	dir := t.TempDir()
	cli, err := newNatsCLI(natsBin, dir, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := &measurer{nats: cli, workDir: dir, logf: t.Logf}
	f := newFleet([2]string{"gw", "nats-server"}, [2]string{natsServer, natsServer},
		[2]serverStyle{styleNATS, styleNATS}, dir, false, t.Logf)
	sc := leafForward(workload{LeafMsgs: 3000, LeafSize: telemetryMinSize}, compressFast)
	values, err := m.measureLeaf(context.Background(), f, sc, sideSubject)
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != 4 || values[0] <= 0 {
		t.Fatalf("values = %v", values)
	}
	// Both servers store every message: neither costs nothing (a CPU
	// reading of a process other than the servers', or none, would).
	if values[2] <= 0 || values[3] <= 0 {
		t.Errorf("CPU per message: gateway %.1f µs, hub %.1f µs; want both above 0", values[2], values[3])
	}
	// 128 B of JSON whose fields repeat compress well below their size,
	// headers and protocol included.
	if values[1] <= 0 || values[1] > telemetryMinSize {
		t.Errorf("wire bytes per message with s2_fast = %.1f, want in (0, %d]", values[1], telemetryMinSize)
	}
}

func TestLeafTimeout(t *testing.T) {
	for _, tc := range []struct {
		msgs int
		want time.Duration
	}{{0, time.Minute}, {25_000, time.Minute}, {25_001, 2 * time.Minute}, {50_000, 2 * time.Minute}} {
		if got := leafTimeout(time.Minute, tc.msgs); got != tc.want {
			t.Errorf("leafTimeout(1m, %d) = %v, want %v", tc.msgs, got, tc.want)
		}
	}
}

func TestOnlyUplinkIsLeaf(t *testing.T) {
	only, err := parseOnly("uplink")
	require.NoError(t, err)
	require.DeepEqual(t, map[string]bool{groupLeaf: true}, only)
}

func TestShapedCopyPacesAndDelays(t *testing.T) {
	// 80 KB at 1 Mbit/s (125 KB/s) and 100 ms RTT: about 0.64 s to
	// serialize, 50 ms to arrive.
	src := bytes.NewReader(bytes.Repeat([]byte("t"), 80_000))
	var dst bytes.Buffer
	var n atomic.Int64
	start := time.Now()
	shapedCopy(&dst, src, linkShape{rtt: 100 * time.Millisecond, mbit: 1}, &n)
	took := time.Since(start)
	require.Equal(t, int64(80_000), n.Load())
	require.Equal(t, 80_000, dst.Len())
	if took < 600*time.Millisecond || took > 3*time.Second {
		t.Fatalf("80 KB through 1 Mbit/s and +100 ms took %v, want about 0.7 s", took)
	}
}
