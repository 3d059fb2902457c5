package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/leaf/leaftest"
)

func TestMQTTStampRoundTrip(t *testing.T) {
	sent := time.Unix(1_764_000_000, 123_456_789)
	p := mqttStamp([]byte("keep"), 4242, sent, mqttSize)
	if len(p) != 4+mqttSize || string(p[:4]) != "keep" {
		t.Fatalf("payload of %d B, prefix %q; want 4+%d B after the kept prefix", len(p), p[:4], mqttSize)
	}
	seq, ns, err := parseMQTTStamp(p[4:])
	if err != nil || seq != 4242 || ns != sent.UnixNano() {
		t.Errorf("parseMQTTStamp = %d, %d, %v; want 4242, %d", seq, ns, err, sent.UnixNano())
	}
	if _, _, err := parseMQTTStamp(p[4 : 4+mqttStampSize-1]); err == nil {
		t.Error("a payload shorter than the stamp parsed")
	}
}

func TestParseMsgLine(t *testing.T) {
	tests := []struct {
		line      string
		size, hdr int
		ok        bool
	}{
		{"MSG bench.data 1 128", 128, 0, true},
		{"MSG bench.data 1 _INBOX.x 7", 7, 0, true},
		{"HMSG bench.data 1 12 140", 140, 12, true},
		{"HMSG bench.data 1 _INBOX.x 12 140", 140, 12, true},
		{"MSG bench.data 1", 0, 0, false},
		{"MSG bench.data 1 a b c", 0, 0, false},
		{"MSG bench.data 1 -3", 0, 0, false},
		{"MSG bench.data 1 x", 0, 0, false},
		{"HMSG bench.data 1 141 140", 0, 0, false},
		{"PUB bench.data 5", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tc := range tests {
		size, hdr, err := parseMsgLine(tc.line)
		if (err == nil) != tc.ok || size != tc.size || hdr != tc.hdr {
			t.Errorf("parseMsgLine(%q) = %d, %d, %v; want %d, %d, ok %v", tc.line, size, hdr, err, tc.size, tc.hdr, tc.ok)
		}
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
		ok     bool
	}{
		{"empty", nil, 50, 0, false},
		{"p out of range", hundred, 0, 0, false},
		{"p above 100", hundred, 101, 0, false},
		{"one value", []float64{7}, 99, 7, true},
		{"p50 of 1..100", hundred, 50, 50, true},
		{"p99 of 1..100", hundred, 99, 99, true},
		{"p100 is the largest", hundred, 100, 100, true},
		{"p50 of four takes the second", []float64{1, 2, 3, 4}, 50, 2, true},
		{"p99 of four is the largest", []float64{1, 2, 3, 4}, 99, 4, true},
	}
	for _, tc := range tests {
		got, ok := percentile(tc.sorted, tc.p)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: percentile(p%g) = %g, %v; want %g, %v", tc.name, tc.p, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMQTTTally(t *testing.T) {
	tally := newMQTTTally(3)
	sent := time.Unix(100, 0)
	data := strings.ReplaceAll(mqttTopic, "/", ".")
	tally.add("bench.probe", mqttStamp(nil, 0, sent, mqttSize), sent)
	select {
	case <-tally.probed:
	default:
		t.Fatal("a probe did not mark the path ready")
	}
	tally.add("bench.probe", nil, sent) // a second probe is harmless
	tally.add(data, mqttStamp(nil, 0, sent, mqttSize), sent.Add(300*time.Microsecond))
	tally.add(data, mqttStamp(nil, 0, sent, mqttSize), sent.Add(time.Second)) // a redelivery counts once
	tally.add(data, mqttStamp(nil, 2, sent, mqttSize), sent.Add(100*time.Microsecond))
	if got, err := tally.snapshot(); got != 2 || err != nil {
		t.Fatalf("snapshot = %d, %v; want 2 distinct messages", got, err)
	}
	select {
	case <-tally.all:
		t.Fatal("all closed with 2 of 3")
	default:
	}
	tally.add(data, mqttStamp(nil, 1, sent, mqttSize), sent.Add(200*time.Microsecond))
	select {
	case <-tally.all:
	default:
		t.Fatal("all not closed with 3 of 3")
	}
	if want := []float64{300, 100, 200}; len(tally.latency) != 3 || tally.latency[0] != want[0] || tally.latency[1] != want[1] || tally.latency[2] != want[2] {
		t.Errorf("latencies = %v µs, want %v", tally.latency, want)
	}
	if !tally.last.Equal(sent.Add(200 * time.Microsecond)) {
		t.Errorf("last = %v, want the third distinct arrival", tally.last)
	}

	bad := newMQTTTally(2)
	bad.add(data, []byte("short"), sent)
	bad.add(data, mqttStamp(nil, 9, sent, mqttSize), sent)
	if got, err := bad.snapshot(); got != 0 || err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("malformed payloads: snapshot = %d, %v; want 0 and the first error", got, err)
	}
	bad2 := newMQTTTally(2)
	bad2.add(data, mqttStamp(nil, 2, sent, mqttSize), sent)
	if _, err := bad2.snapshot(); err == nil || !strings.Contains(err.Error(), "message number 2 of 2") {
		t.Errorf("out-of-range sequence: %v", err)
	}
}

func TestReadMessages(t *testing.T) {
	sent := time.Now()
	p0 := string(mqttStamp(nil, 0, sent, mqttSize))
	p1 := string(mqttStamp(nil, 1, sent, mqttSize))
	hdr := "NATS/1.0\r\nX: y\r\n\r\n"
	stream := "+OK\r\nPING\r\nMSG bench.data 1 128\r\n" + p0 + "\r\n" +
		"INFO {}\r\nHMSG bench.data 1 " + strconv.Itoa(len(hdr)) + " " + strconv.Itoa(len(hdr)+len(p1)) + "\r\n" + hdr + p1 + "\r\n"
	tally := newMQTTTally(2)
	var out strings.Builder
	w := bufio.NewWriter(&out)
	err := readMessages(bufio.NewReader(strings.NewReader(stream)), w, tally.add)
	if err != io.EOF {
		t.Errorf("readMessages ended with %v, want EOF at the end of the stream", err)
	}
	if got, terr := tally.snapshot(); got != 2 || terr != nil {
		t.Errorf("tally = %d, %v; want both messages", got, terr)
	}
	if out.String() != "PONG\r\n" {
		t.Errorf("answered %q, want one PONG", out.String())
	}
	err = readMessages(bufio.NewReader(strings.NewReader("-ERR 'Slow Consumer'\r\n")), w, newMQTTTally(1).add)
	if err == nil || !strings.Contains(err.Error(), "Slow Consumer") {
		t.Errorf("-ERR: %v", err)
	}
	err = readMessages(bufio.NewReader(strings.NewReader("MSG bench.data 1 nope\r\n")), w, newMQTTTally(1).add)
	if err == nil || !strings.Contains(err.Error(), "bad sizes") {
		t.Errorf("bad MSG line: %v", err)
	}
}

func TestMQTTSetupsBindLoopback(t *testing.T) {
	dir := t.TempDir()
	lb, err := mqttGatewaySetup(styleLeafbox, dir, "127.0.0.1:1884", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`server: "mqtt://127.0.0.1:1884"`, `{from: "bench/#", to: "", qos: 1}`} {
		if !strings.Contains(lb.config, want) {
			t.Errorf("leafbox config lacks %s:\n%s", want, lb.config)
		}
	}
	if !strings.Contains(strings.Join(lb.args, " "), "--addr 127.0.0.1 --port -1 --http-port -1") {
		t.Errorf("leafbox args %q", lb.args)
	}
	ns, err := mqttGatewaySetup(styleNATS, dir, "", 1885, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`mqtt { listen: "127.0.0.1:1885" }`, "server_name: mqttbench", "jetstream {", `listen: "127.0.0.1:-1"`} {
		if !strings.Contains(ns.config, want) {
			t.Errorf("nats-server config lacks %s:\n%s", want, ns.config)
		}
	}
	if _, err := mqttGatewaySetup("other", dir, "", 1, 0); err == nil {
		t.Error("an unknown style made a setup")
	}
}

// TestMQTTWithNATSServer runs the mqtt rows (unpaced, paced, paced ceiling) once with nats-server as the
// side under test (the stand-in set-up, its own MQTT listener), proving
// the publisher, the probe, the subscriber and the figures together.
func TestMQTTWithNATSServer(t *testing.T) {
	natsServer := leaftest.Binary(t)
	dir := t.TempDir()
	m := &measurer{nats: &natsCLI{timeout: 30 * time.Second}, workDir: dir, logf: t.Logf}
	f := newFleet([2]string{"ns", "nats-server"}, [2]string{natsServer, natsServer},
		[2]serverStyle{styleNATS, styleNATS}, dir, false, t.Logf)
	for _, qos := range []int{0, 1} {
		sc := mqttScenario(500, qos, 0)
		values, err := m.measureMQTT(context.Background(), f, sc, sideSubject)
		if err != nil {
			t.Fatalf("QoS %d: %v", qos, err)
		}
		if len(values) != 3 || values[0] <= 0 || values[1] <= 0 || values[2] < values[1] {
			t.Errorf("QoS %d: values = %v, want a rate and 0 < p50 ≤ p99", qos, values)
		}
	}
	// 50 messages at 1,000 a second take at least 49 ms.
	sc := mqttScenario(50, 0, 1000)
	start := time.Now()
	values, err := m.measureMQTT(context.Background(), f, sc, sideSubject)
	if err != nil {
		t.Fatalf("paced: %v", err)
	}
	if len(values) != 2 || values[0] <= 0 || values[1] < values[0] {
		t.Errorf("paced: values = %v, want 0 < p50 ≤ p99", values)
	}
	if d := time.Since(start); d < 49*time.Millisecond {
		t.Errorf("paced run of 50 messages at 1,000/s took %v", d)
	}
	// The paced ceiling: the same load read by a plain MQTT subscriber.
	sc = mqttPacedCeilingScenario(50, 1)
	start = time.Now()
	values, err = m.measureMQTT(context.Background(), f, sc, sideSubject)
	if err != nil {
		t.Fatalf("paced ceiling: %v", err)
	}
	if len(values) != len(sc.metrics) || values[0] <= 0 || values[1] < values[0] {
		t.Errorf("paced ceiling: values = %v, want 0 < p50 ≤ p99", values)
	}
	if d := time.Since(start); d < 49*time.Millisecond {
		t.Errorf("paced ceiling run of 50 messages at 1,000/s took %v", d)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "mqtt*", "server", "store")); len(matches) != 0 {
		t.Errorf("stores left behind: %v", matches)
	}
	if _, err := os.Stat(filepath.Join(dir, "mqtt001-mqtt-qos0-server0", "server", "server.log")); err != nil {
		t.Errorf("server log not kept: %v", err)
	}
}
