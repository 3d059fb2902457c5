package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// The mqtt rows measure MQTT → subject delivery. Each run starts its own
// servers, an MQTT 3.1.1 publisher (paho.mqtt.golang) and a raw-protocol
// NATS subscriber on bench.>:
//
//   - leafbox: a Mosquitto on loopback and a leafbox whose MQTT bridge
//     subscribes bench/# there and publishes each message on the subject
//     of its topic; the publisher sends to Mosquitto, so the path includes
//     Mosquitto, which is the bridge's design;
//   - nats-server: its own MQTT listener (it needs JetStream and a
//     server_name); the publisher sends to it.
//
// Every message is mqttSize bytes and carries its sequence number and its
// send time (see mqttStamp); the subscriber notes when each arrives.

// Names and sizes the mqtt rows use on both sides.
const (
	mqttSize      = 128           // mqttSize is the payload of every message.
	mqttTopic     = "bench/data"  // mqttTopic is where the measured messages are published.
	mqttProbe     = "bench/probe" // mqttProbe is where readiness probes are published.
	mqttSubject   = "bench.>"     // mqttSubject is what the NATS subscriber subscribes.
	mqttFilter    = "bench/#"     // mqttFilter is the bridge's inbound topic filter.
	mqttWindow    = 100           // mqttWindow is the QoS 1 publisher's messages awaiting PUBACK.
	mqttMosquitto = "/usr/sbin/mosquitto"
)

// mqttPacedRate is the paced mqtt rows' messages a second.
const mqttPacedRate = 1000

// mqttStall is how long the subscriber may receive nothing, once the
// publisher is done, before the run fails for lost messages.
const mqttStall = 3 * time.Second

// mqttStampSize is the part of a payload mqttStamp writes.
const mqttStampSize = 16

// mqttStamp appends a payload of size bytes to dst: the sequence number
// and the send time in Unix nanoseconds, both big-endian uint64, then
// padding. size must be at least mqttStampSize.
func mqttStamp(dst []byte, seq uint64, sent time.Time, size int) []byte {
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = binary.BigEndian.AppendUint64(dst, uint64(sent.UnixNano()))
	for range size - mqttStampSize {
		dst = append(dst, 'x')
	}
	return dst
}

// parseMQTTStamp returns the sequence number and send time mqttStamp
// wrote at the start of payload.
func parseMQTTStamp(payload []byte) (seq uint64, sent int64, err error) {
	if len(payload) < mqttStampSize {
		return 0, 0, fmt.Errorf("benchcmp: payload of %d B is shorter than its %d B stamp", len(payload), mqttStampSize)
	}
	return binary.BigEndian.Uint64(payload), int64(binary.BigEndian.Uint64(payload[8:])), nil
}

// parseMsgLine returns the payload size of a NATS MSG or HMSG control line
// (without its CRLF): MSG <subject> <sid> [reply] <size>, HMSG <subject>
// <sid> [reply] <header size> <total size>. For HMSG, hdr is the header
// size; the payload follows it within size.
func parseMsgLine(line string) (size, hdr int, err error) {
	f := strings.Fields(line)
	switch {
	case len(f) >= 4 && len(f) <= 5 && f[0] == "MSG":
		size, err = strconv.Atoi(f[len(f)-1])
	case len(f) >= 5 && len(f) <= 6 && f[0] == "HMSG":
		if hdr, err = strconv.Atoi(f[len(f)-2]); err == nil {
			size, err = strconv.Atoi(f[len(f)-1])
		}
	default:
		return 0, 0, fmt.Errorf("benchcmp: not a MSG line: %q", line)
	}
	if err != nil || size < 0 || hdr < 0 || hdr > size {
		return 0, 0, fmt.Errorf("benchcmp: bad sizes in %q", line)
	}
	return size, hdr, nil
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method, and false when sorted is empty.
func percentile(sorted []float64, p float64) (float64, bool) {
	if len(sorted) == 0 || p <= 0 || p > 100 {
		return 0, false
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1], true
}

// mqttTally records what the subscriber received.
type mqttTally struct {
	mu        sync.Mutex
	want      int
	got       int
	seen      []bool    // seen[seq] is whether message seq arrived (duplicates count once).
	latency   []float64 // latency holds receive − send in µs for each first arrival.
	last      time.Time // last is when the last new message arrived.
	probed    chan struct{}
	probeOnce sync.Once
	all       chan struct{}
	err       error // err is the first malformed message, if any.
}

func newMQTTTally(want int) *mqttTally {
	return &mqttTally{want: want, seen: make([]bool, want), latency: make([]float64, 0, want),
		probed: make(chan struct{}), all: make(chan struct{})}
}

// add records one message that arrived at now on subject.
func (t *mqttTally) add(subject string, payload []byte, now time.Time) {
	if subject != strings.ReplaceAll(mqttTopic, "/", ".") {
		t.probeOnce.Do(func() { close(t.probed) })
		return
	}
	seq, sent, err := parseMQTTStamp(payload)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && seq >= uint64(t.want) {
		err = fmt.Errorf("benchcmp: message number %d of %d", seq, t.want)
	}
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return
	}
	if t.seen[seq] {
		return
	}
	t.seen[seq] = true
	t.got++
	t.last = now
	t.latency = append(t.latency, float64(now.UnixNano()-sent)/1e3)
	if t.got == t.want {
		close(t.all)
	}
}

// snapshot returns how many distinct messages arrived and the first error.
func (t *mqttTally) snapshot() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.got, t.err
}

// natsSubscriber is a raw-protocol NATS client subscribed to mqttSubject.
type natsSubscriber struct {
	conn net.Conn
	done chan struct{}
	err  error // err is why the read loop ended; read after done is closed.
}

// subscribeNATS connects to addr, subscribes subject, waits for the PONG
// that proves the subscription is in place, and hands every message to
// add until closed.
func subscribeNATS(ctx context.Context, addr, subject string, add func(subject string, payload []byte, now time.Time)) (*natsSubscriber, error) {
	d := net.Dialer{Timeout: startTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: NATS subscriber: %w", err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriter(conn)
	conn.SetDeadline(time.Now().Add(startTimeout))
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		conn.Close()
		return nil, fmt.Errorf("benchcmp: NATS subscriber: no INFO from %s (%q, %v)", addr, strings.TrimSpace(line), err)
	}
	w.WriteString(connectLine + "SUB " + subject + " 1\r\n")
	if err := pingPong(w, r); err != nil {
		conn.Close()
		return nil, fmt.Errorf("benchcmp: NATS subscriber: %w", err)
	}
	conn.SetDeadline(time.Time{})
	s := &natsSubscriber{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = readMessages(r, w, add)
	}()
	return s, nil
}

// readMessages reads MSG and HMSG frames from r into add, answering the
// server's PINGs through w, until the connection fails.
func readMessages(r *bufio.Reader, w *bufio.Writer, add func(subject string, payload []byte, now time.Time)) error {
	var buf []byte
	for {
		line, hdr, size, err := nextMsg(r, w, &buf)
		if err != nil {
			return err
		}
		add(strings.Fields(line)[1], buf[hdr:size], time.Now())
	}
}

// nextMsg reads frames from r until a MSG or HMSG arrives, answering the
// server's PINGs through w and skipping +OK, PONG and INFO. It returns the
// control line and reads the frame into *buf (grown as needed, reused
// across calls): the payload is (*buf)[hdr:size], the headers before it.
func nextMsg(r *bufio.Reader, w *bufio.Writer, buf *[]byte) (line string, hdr, size int, err error) {
	for {
		line, err = r.ReadString('\n')
		if err != nil {
			return "", 0, 0, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "PING":
			w.WriteString("PONG\r\n")
			if err := w.Flush(); err != nil {
				return "", 0, 0, err
			}
			continue
		case strings.HasPrefix(line, "-ERR"):
			return "", 0, 0, fmt.Errorf("server said %s", line)
		case !strings.HasPrefix(line, "MSG ") && !strings.HasPrefix(line, "HMSG "):
			continue // +OK, PONG, INFO
		}
		if size, hdr, err = parseMsgLine(line); err != nil {
			return "", 0, 0, err
		}
		if cap(*buf) < size+2 {
			*buf = make([]byte, size+2)
		}
		*buf = (*buf)[:size+2]
		if _, err := io.ReadFull(r, *buf); err != nil {
			return "", 0, 0, err
		}
		return line, hdr, size, nil
	}
}

// subscribeMQTT connects a plain MQTT 3.1.1 client to addr, subscribes
// mqttFilter at qos, and feeds every PUBLISH to tally (under the subject
// of its topic) until closed, acknowledging QoS 1 ones in batches. It
// measures the broker alone: the ceiling of any path through it.
func subscribeMQTT(ctx context.Context, addr string, qos int, tally *mqttTally) (*natsSubscriber, error) {
	d := net.Dialer{Timeout: startTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: MQTT subscriber: %w", err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	conn.SetDeadline(time.Now().Add(startTimeout))
	id := "benchcmp-sub"
	connect := append([]byte{0x10, byte(12 + len(id)), 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, byte(len(id))}, id...)
	sub := append([]byte{0x82, byte(5 + len(mqttFilter)), 0, 1, 0, byte(len(mqttFilter))}, mqttFilter...)
	sub = append(sub, byte(qos))
	var ack [5]byte
	if _, err = conn.Write(connect); err == nil {
		_, err = io.ReadFull(r, ack[:4])
	}
	if err == nil && (ack[0] != 0x20 || ack[3] != 0) {
		err = fmt.Errorf("CONNACK % x", ack[:4])
	}
	if err == nil {
		if _, err = conn.Write(sub); err == nil {
			_, err = io.ReadFull(r, ack[:5])
		}
	}
	if err == nil && (ack[0] != 0x90 || ack[4] > 2) {
		err = fmt.Errorf("SUBACK % x", ack[:5])
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("benchcmp: MQTT subscriber: %w", err)
	}
	conn.SetDeadline(time.Time{})
	s := &natsSubscriber{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = readPublishes(r, bufio.NewWriter(conn), tally)
	}()
	return s, nil
}

// readPublishes reads MQTT packets from r into tally, acknowledging QoS 1
// PUBLISH packets through w, until the connection fails.
func readPublishes(r *bufio.Reader, w *bufio.Writer, tally *mqttTally) error {
	var buf []byte
	for {
		first, err := r.ReadByte()
		if err != nil {
			return err
		}
		size, mul := 0, 1
		for i := 0; ; i++ {
			b, err := r.ReadByte()
			if err != nil {
				return err
			}
			if i == 4 {
				return errors.New("benchcmp: MQTT subscriber: bad remaining length")
			}
			size += int(b&0x7f) * mul
			mul <<= 7
			if b < 0x80 {
				break
			}
		}
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		if first>>4 != 3 || size < 2 {
			continue
		}
		n := int(binary.BigEndian.Uint16(buf))
		body := buf[2:]
		if len(body) < n {
			return errors.New("benchcmp: MQTT subscriber: short PUBLISH")
		}
		topic, body := string(body[:n]), body[n:]
		if (first>>1)&3 == 1 {
			if len(body) < 2 {
				return errors.New("benchcmp: MQTT subscriber: short PUBLISH")
			}
			w.Write([]byte{0x40, 2, body[0], body[1]})
			body = body[2:]
		}
		tally.add(strings.ReplaceAll(topic, "/", "."), body, time.Now())
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// close ends the subscriber's connection and waits for its read loop.
func (s *natsSubscriber) close() {
	s.conn.Close()
	<-s.done
}

// freePort returns a loopback TCP port that was free a moment ago: the
// listeners that take it (Mosquitto, nats-server's MQTT) cannot report a
// kernel-chosen one.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("benchcmp: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startMosquitto starts Mosquitto on 127.0.0.1:port from a configuration
// file in dir (anonymous clients, no persistence, no limit on queued
// messages, so that a slow bridge costs time, not messages) and waits
// until it accepts connections.
func startMosquitto(ctx context.Context, dir string, port int) (*server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 0\nlog_dest stderr\n", port)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	logPath := filepath.Join(dir, "mosquitto.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(mqttMosquitto, "-c", conf)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchcmp: starting Mosquitto (%s): %w", mqttMosquitto, err)
	}
	s := &server{label: "Mosquitto", bin: mqttMosquitto, dir: dir, cmd: cmd, logPath: logPath, exited: make(chan struct{}),
		clientAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		if err := s.alive(); err != nil {
			return nil, err
		}
		c, err := net.DialTimeout("tcp", s.clientAddr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("benchcmp: Mosquitto does not accept connections on %s after %v: %v%s", s.clientAddr, startTimeout, err, s.logTail())
		}
		if err := pause(ctx, 10*time.Millisecond); err != nil {
			s.stop()
			return nil, err
		}
	}
}

// mqttGatewaySetup returns the setup of side's server for an mqtt run:
// leafbox bridging the Mosquitto at brokerAddr with an inbound route of
// the given QoS from bench/# to subjects without prefix, or nats-server
// with its MQTT listener on 127.0.0.1:mqttPort.
func mqttGatewaySetup(style serverStyle, dir, brokerAddr string, mqttPort, qos int) (serverSetup, error) {
	switch style {
	case styleLeafbox:
		path := filepath.Join(dir, "leafbox.yaml")
		conf := fmt.Sprintf(`server_name: mqttbench
bridges:
  mqtt:
    - name: bench
      server: %s
      client_id: leafbox-bench
      clean_start: true
      inbound:
        - {from: %q, to: "", qos: %d}
`, strconv.Quote("mqtt://"+brokerAddr), mqttFilter, qos)
		return serverSetup{configPath: path, config: conf, args: []string{"run", "--config", path,
			"--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir}}, nil
	case styleNATS:
		path := filepath.Join(dir, "nats-server.conf")
		conf := fmt.Sprintf(`server_name: mqttbench
listen: "127.0.0.1:-1"
http: "127.0.0.1:-1"
ports_file_dir: %s
jetstream { store_dir: %s }
mqtt { listen: "127.0.0.1:%d" }
`, strconv.Quote(dir), strconv.Quote(filepath.Join(dir, "store")), mqttPort)
		return serverSetup{configPath: path, config: conf, args: []string{"--config", path}}, nil
	}
	return serverSetup{}, fmt.Errorf("benchcmp: unknown server style %q", style)
}

// mqttRig is one mqtt run's processes.
type mqttRig struct {
	broker *server // broker is Mosquitto (leafbox runs) or nil.
	srv    *server // srv is leafbox or nats-server.
	mqtt   string  // mqtt is host:port the publisher connects to.
	dir    string
	keep   bool
}

// stop stops the servers and removes the store unless it is to be kept.
func (r *mqttRig) stop() {
	for _, s := range []*server{r.srv, r.broker} {
		if s != nil {
			s.stop()
		}
	}
	if !r.keep {
		os.RemoveAll(filepath.Join(r.dir, "server", "store"))
	}
}

// alive returns an error if a server of the rig has exited.
func (r *mqttRig) alive() error {
	for _, s := range []*server{r.srv, r.broker} {
		if s != nil {
			if err := s.alive(); err != nil {
				return err
			}
		}
	}
	return nil
}

// startMQTTRig starts side's servers for sc.
func startMQTTRig(ctx context.Context, f *fleet, sc scenario, side int) (*mqttRig, error) {
	f.fresh++
	rig := &mqttRig{dir: filepath.Join(f.workDir, fmt.Sprintf("mqtt%03d-%s-server%d", f.fresh, sc.slug, side)), keep: f.keep}
	ok := false
	defer func() {
		if !ok {
			rig.stop()
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	rig.mqtt = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if f.styles[side] == styleLeafbox {
		if rig.broker, err = startMosquitto(ctx, filepath.Join(rig.dir, "mosquitto"), port); err != nil {
			return nil, err
		}
		if sc.mqttDirect {
			ok = true
			return rig, nil // Mosquitto alone
		}
	}
	srvDir := filepath.Join(rig.dir, "server")
	setup, err := mqttGatewaySetup(f.styles[side], srvDir, rig.mqtt, port, sc.qos)
	if err != nil {
		return nil, err
	}
	if rig.srv, err = startSetup(ctx, f.labels[side], f.bins[side], setup, srvDir); err != nil {
		return nil, err
	}
	ok = true
	return rig, nil
}

// connectMQTT connects an MQTT 3.1.1 client to addr.
func connectMQTT(addr string) (mqtt.Client, error) {
	opts := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("benchcmp-pub").
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetOrderMatters(false).SetConnectTimeout(startTimeout).SetWriteTimeout(startTimeout)
	c := mqtt.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(startTimeout) {
		return nil, fmt.Errorf("benchcmp: MQTT publisher: no CONNACK from %s within %v", addr, startTimeout)
	}
	if err := tok.Error(); err != nil {
		return nil, fmt.Errorf("benchcmp: MQTT publisher: %w", err)
	}
	return c, nil
}

// awaitToken waits for an MQTT publish to complete.
func awaitToken(tok mqtt.Token, timeout time.Duration) error {
	if !tok.WaitTimeout(timeout) {
		return fmt.Errorf("benchcmp: MQTT publisher: no PUBACK within %v", timeout)
	}
	return tok.Error()
}

// probeMQTT publishes a QoS 0 probe every 50 ms until the subscriber has
// seen one, which proves the whole path (the bridge's subscription on
// Mosquitto included) is in place.
func probeMQTT(ctx context.Context, c mqtt.Client, tally *mqttTally, rig *mqttRig) error {
	deadline := time.Now().Add(startTimeout)
	probe := mqttStamp(nil, 0, time.Now(), mqttSize)
	for {
		if err := awaitToken(c.Publish(mqttProbe, 0, false, probe), startTimeout); err != nil {
			return err
		}
		select {
		case <-tally.probed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if err := rig.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("benchcmp: no probe on %s reached the NATS subscriber within %v", mqttProbe, startTimeout)
		}
	}
}

// measureMQTT runs one mqtt scenario on side and returns its throughput
// (unless the publisher is paced) and its latency p50 and p99 in µs.
func (m *measurer) measureMQTT(ctx context.Context, f *fleet, sc scenario, side int) ([]float64, error) {
	rig, err := startMQTTRig(ctx, f, sc, side)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	tally := newMQTTTally(sc.msgs)
	var sub *natsSubscriber
	if sc.mqttDirect {
		sub, err = subscribeMQTT(ctx, rig.mqtt, sc.qos, tally)
	} else {
		sub, err = subscribeNATS(ctx, rig.srv.clientAddr, mqttSubject, tally.add)
	}
	if err != nil {
		return nil, err
	}
	defer sub.close()
	c, err := connectMQTT(rig.mqtt)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(100)
	if err := probeMQTT(ctx, c, tally, rig); err != nil {
		return nil, err
	}

	limit := m.nats.timeout
	var payload []byte
	pending := make([]mqtt.Token, mqttWindow)
	start := time.Now()
	for i := range sc.msgs {
		if sc.rate > 0 {
			// Pacing: wait for message i's slot in the schedule.
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(sc.rate))); d > 0 {
				if err := pause(ctx, d); err != nil {
					return nil, err
				}
			}
		}
		if sc.qos > 0 {
			if tok := pending[i%mqttWindow]; tok != nil {
				if err := awaitToken(tok, limit); err != nil {
					return nil, fmt.Errorf("message %d: %w", i-mqttWindow, err)
				}
			}
		}
		payload = mqttStamp(payload[:0], uint64(i), time.Now(), mqttSize)
		tok := c.Publish(mqttTopic, byte(sc.qos), false, slices.Clone(payload))
		if sc.qos > 0 {
			pending[i%mqttWindow] = tok
		} else if i%1000 == 999 {
			// Check the connection now and then; QoS 0 tokens complete on write.
			if err := awaitToken(tok, limit); err != nil {
				return nil, err
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	for _, tok := range pending {
		if tok != nil {
			if err := awaitToken(tok, limit); err != nil {
				return nil, err
			}
		}
	}

	// Wait for every message, failing when none arrives for mqttStall.
	deadline := start.Add(limit)
	lastGot, lastChange := -1, time.Now()
	for {
		select {
		case <-tally.all:
		case <-sub.done:
			return nil, fmt.Errorf("benchcmp: NATS subscriber: %v", sub.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
			if err := rig.alive(); err != nil {
				return nil, err
			}
			got, err := tally.snapshot()
			if err != nil {
				return nil, err
			}
			now := time.Now()
			if got != lastGot {
				lastGot, lastChange = got, now
			}
			if now.Sub(lastChange) > mqttStall || now.After(deadline) {
				return nil, fmt.Errorf("benchcmp: the NATS subscriber received %d of %d messages (none for %v)", got, sc.msgs, now.Sub(lastChange).Round(time.Millisecond))
			}
			continue
		}
		break
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if tally.err != nil {
		return nil, tally.err
	}
	lat := slices.Clone(tally.latency)
	slices.Sort(lat)
	p50, _ := percentile(lat, 50)
	p99, _ := percentile(lat, 99)
	elapsed := tally.last.Sub(start).Seconds()
	if elapsed <= 0 {
		return nil, errors.New("benchcmp: mqtt run took no measurable time")
	}
	if sc.rate > 0 {
		return []float64{p50, p99}, nil
	}
	return []float64{float64(sc.msgs) / elapsed, p50, p99}, nil
}
