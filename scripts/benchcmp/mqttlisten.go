package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// The mqttlisten rows measure MQTT brokers end to end, MQTT clients on
// both sides: leafbox's own MQTT listener (core/mqtt) against Mosquitto
// and against nats-server's MQTT listener. The table has two value
// columns, so each reference gets rows of its own ("vs Mosquitto: …",
// "vs nats-server: …"), and leafbox runs once for each, next to it in
// the same round.
//
//   - Throughput: 1 or 16 MQTT 3.1.1 publishers (paho.mqtt.golang) send
//     mqttSize-byte messages on mqttTopic at QoS 0 or 1 (each QoS 1
//     publisher keeps at most mqttWindow awaiting PUBACK); one raw-protocol
//     MQTT subscriber of mqttFilter at the same QoS receives them all.
//   - Idle connections: mqttIdleConns raw MQTT 3.1.1 clients connect
//     (CONNECT, CONNACK) from mqttIdleDialers goroutines; the connection
//     rate is their number ÷ the time to open them all, and the memory
//     row is the growth of the broker's VmRSS, once steady, per connection.

// Reference servers of the mqttlisten rows.
const (
	refMosquitto = "Mosquitto"
	refNATS      = "nats-server"
)

// Sizes of the mqttlisten rows.
const (
	mqttIdleConns   = 10_000 // mqttIdleConns is how many idle connections the memory row opens.
	mqttIdleDialers = 16     // mqttIdleDialers connect the idle clients concurrently.
	mqttKeepAlive   = 300    // mqttKeepAlive is the idle clients' keep alive in seconds.
	// mqttIdleSettle is how long each broker is left idle before each
	// RSS reading of the memory row, so that both readings are of a
	// broker at rest: a runtime that returns memory once a burst is over
	// (Go's scavenger, leafbox's idle reclaim after two 5 s looks) has
	// done so.
	mqttIdleSettle = 12 * time.Second
)

// mqttListenScenario returns the throughput scenario of msgs messages
// from pubs publishers at qos, against ref.
func mqttListenScenario(msgs, qos, pubs int, ref string) scenario {
	name := fmt.Sprintf("vs %s: MQTT listener %d B, QoS %d, %d publisher%s → 1 subscriber", ref, mqttSize, qos, pubs, plural(pubs))
	return scenario{slug: fmt.Sprintf("mqttl-%s-qos%d-p%d", refSlug(ref), qos, pubs), kind: kindMQTTListen, size: mqttSize,
		msgs: msgs, qos: qos, mqttPubs: pubs, mqttRef: ref, metrics: []metric{
			{Name: name, Unit: unitRate, Better: higherIsBetter, Order: orderMQTTListen},
			{Name: name + ", latency p50", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTTListen},
			{Name: name + ", latency p99", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTTListen},
		}}
}

// mqttIdleScenario returns the idle connections scenario against ref.
func mqttIdleScenario(conns int, ref string) scenario {
	name := fmt.Sprintf("vs %s: MQTT listener, %s idle connections", ref, groupThousands(int64(conns)))
	return scenario{slug: "mqttl-idle-" + refSlug(ref), kind: kindMQTTIdle, msgs: conns, mqttRef: ref, metrics: []metric{
		{Name: name + ", connection rate", Unit: unitConns, Better: higherIsBetter, Order: orderMQTTListen + 1},
		{Name: name + ", RSS per connection", Unit: unitKiB, Better: lowerIsBetter, Order: orderMQTTListen + 1},
	}}
}

// refSlug names ref in file names.
func refSlug(ref string) string {
	if ref == refMosquitto {
		return "mosq"
	}
	return "nats"
}

// plural returns "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeMQTTListen returns the workload lines of the mqttlisten rows.
func (w workload) describeMQTTListen() []string {
	return []string{
		fmt.Sprintf("MQTT listener: MQTT clients on both ends, each run starts its own broker on loopback: leafbox with `mqtt: {listen: ..., max_connections: 0, max_queue: 1000000, max_inflight: N}` and JetStream on, N being the reference's in-flight bound (65,535 against Mosquitto's none, 1,024 against nats-server's default max_ack_pending; leafbox's default is 64); "+
			"Mosquitto (%s, anonymous, no persistence, no queue or in-flight limits); nats-server with JetStream and `mqtt { listen: ... }`. "+
			"The value columns are leafbox and the reference the row names (\"vs Mosquitto\" rows: the second column is Mosquitto; \"vs nats-server\" rows: nats-server); leafbox runs once for each pairing. "+
			"1 or 16 MQTT 3.1.1 publishers (paho.mqtt.golang) send %s messages in all at QoS 0, %s at QoS 1 (at most %d awaiting PUBACK per publisher), %d B each with its sequence number and send time, on %s, "+
			"to one raw-protocol MQTT 3.1.1 subscriber of %s at the same QoS (PUBACKs batched). Throughput is messages ÷ time from the first send to the last receive; latency is receive − send (p50, p99), "+
			"mostly queueing as the publishers send as fast as they can. A lost message fails the row",
			mqttMosquitto, groupThousands(int64(w.MQTTMsgs)), groupThousands(int64(w.MQTTMsgsQoS1)), mqttWindow, mqttSize, mqttTopic, mqttFilter),
		fmt.Sprintf("MQTT idle connections: %d goroutines open %s raw MQTT 3.1.1 connections from 127.0.0.1 (TCP connect, CONNECT with clean session and keep alive %d s, CONNACK); "+
			"the connection rate is their number ÷ the time to open them all (the harness shares the CPUs); RSS per connection is (broker VmRSS once steady with them all open − VmRSS once steady with one client) ÷ their number, each reading taken after the broker was left idle for %v",
			mqttIdleDialers, groupThousands(int64(w.MQTTIdle)), mqttKeepAlive, mqttIdleSettle),
	}
}

// mqttListenRig is one mqttlisten run's broker.
type mqttListenRig struct {
	srv  *server
	addr string // addr is host:port of its MQTT listener.
}

// startMQTTListen starts side's broker for sc: leafbox with its MQTT
// listener (or nats-server standing in) on the subject side, Mosquitto or
// nats-server with its MQTT listener on the reference side.
func startMQTTListen(ctx context.Context, f *fleet, sc scenario, side int) (*mqttListenRig, error) {
	raiseFileLimit()
	f.fresh++
	dir := filepath.Join(f.workDir, fmt.Sprintf("mqttl%03d-%s-server%d", f.fresh, sc.slug, side))
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	rig := &mqttListenRig{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if side == sideReference && sc.mqttRef == refMosquitto {
		if rig.srv, err = startMosquitto(ctx, dir, port); err != nil {
			return nil, err
		}
		return rig, nil
	}
	style, label, bin := f.styles[side], f.labels[side], f.bins[side]
	if side == sideReference {
		style = styleNATS
	}
	var setup serverSetup
	if style == styleLeafbox {
		path := filepath.Join(dir, "leafbox.yaml")
		setup = serverSetup{configPath: path, config: mqttListenConfig(filepath.Join(dir, "store"), rig.addr, mqttInflight(sc.mqttRef)),
			args: []string{"run", "--config", path, "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir}}
	} else if setup, err = mqttGatewaySetup(styleNATS, dir, "", port, sc.qos); err != nil {
		return nil, err
	}
	if rig.srv, err = startSetup(ctx, label, bin, setup, dir); err != nil {
		return nil, err
	}
	return rig, nil
}

// mqttListenConfig returns the leafbox configuration of an mqttlisten
// run: JetStream on in store, the MQTT listener on addr without a
// connection limit and with a queue of a million, as the harness runs
// Mosquitto without a queue limit (leafbox's default queue of 10,000 drops
// what 16 QoS 1 publishers send ahead of one subscriber). The in-flight
// window stays at leafbox's default of 64: a larger one is slower (each
// PUBACK makes the session scan its in-flight messages from the queue's
// head), 11,165 against 27,588 msgs/s at 1,024 in a profiled test.
func mqttListenConfig(store, addr string, inflight int) string {
	return fmt.Sprintf(`server_name: mqttbench
jetstream:
  store_dir: %s
mqtt:
  listen: %s
  max_connections: 0
  max_queue: 1000000
  max_inflight: %d
`, strconv.Quote(store), strconv.Quote(addr), inflight)
}

// mqttInflight is leafbox's max_inflight in the pairing with ref: the
// reference's own bound on QoS 1/2 messages in flight to a subscriber,
// so that both sides run with the same window. Mosquitto runs with
// max_inflight_messages 0 (none: leafbox's largest, the 65,535 packet
// ids), nats-server's MQTT with its default max_ack_pending of 1,024.
func mqttInflight(ref string) int {
	if ref == refMosquitto {
		return 65535
	}
	return 1024
}

var fileLimitOnce sync.Once

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard one, for this
// process and the brokers it starts after, so that the idle rows can hold
// mqttIdleConns connections on each end.
func raiseFileLimit() {
	fileLimitOnce.Do(func() {
		var lim syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
			lim.Cur = lim.Max
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	})
}

// mosquittoVersion returns the first line Mosquitto's -h prints, such as
// "mosquitto version 2.0.11" (it exits non-zero after it).
func mosquittoVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, mqttMosquitto, "-h").CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if !strings.HasPrefix(line, "mosquitto version ") {
		return "(unknown version)"
	}
	return strings.TrimPrefix(line, "mosquitto ")
}

// fileLimit returns the soft RLIMIT_NOFILE.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return lim.Cur
}

// measureMQTTListen runs one mqttlisten scenario on side.
func (m *measurer) measureMQTTListen(ctx context.Context, f *fleet, sc scenario, side int) ([]float64, error) {
	rig, err := startMQTTListen(ctx, f, sc, side)
	if err != nil {
		return nil, err
	}
	defer rig.srv.stop()
	if sc.kind == kindMQTTIdle {
		return m.measureMQTTIdle(ctx, rig, sc.msgs)
	}
	return m.measureMQTTThroughput(ctx, rig, sc)
}

// connectMQTTPub connects an MQTT 3.1.1 publisher with client id id.
func connectMQTTPub(addr, id string) (mqtt.Client, error) {
	opts := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetOrderMatters(false).SetConnectTimeout(startTimeout).SetWriteTimeout(startTimeout)
	c := mqtt.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(startTimeout) {
		return nil, fmt.Errorf("benchcmp: MQTT publisher %s: no CONNACK from %s within %v", id, addr, startTimeout)
	}
	if err := tok.Error(); err != nil {
		return nil, fmt.Errorf("benchcmp: MQTT publisher %s: %w", id, err)
	}
	return c, nil
}

// pubRange returns the sequence numbers [from, to) publisher p of pubs
// sends of total: consecutive shares, the first total%pubs one larger.
func pubRange(total, pubs, p int) (from, to int) {
	share, extra := total/pubs, total%pubs
	from = p*share + min(p, extra)
	to = from + share
	if p < extra {
		to++
	}
	return from, to
}

// measureMQTTThroughput runs a throughput scenario against rig and
// returns msgs/s, latency p50 and p99 in µs.
func (m *measurer) measureMQTTThroughput(ctx context.Context, rig *mqttListenRig, sc scenario) ([]float64, error) {
	alive := &mqttRig{srv: rig.srv}
	tally := newMQTTTally(sc.msgs)
	sub, err := subscribeMQTT(ctx, rig.addr, sc.qos, tally)
	if err != nil {
		return nil, err
	}
	defer sub.close()
	pubs := make([]mqtt.Client, sc.mqttPubs)
	for i := range pubs {
		if pubs[i], err = connectMQTTPub(rig.addr, fmt.Sprintf("benchcmp-pub-%d", i)); err != nil {
			return nil, err
		}
		defer pubs[i].Disconnect(100)
	}
	if err := probeMQTT(ctx, pubs[0], tally, alive); err != nil {
		return nil, err
	}

	limit := m.nats.timeout
	errs := make([]error, len(pubs))
	var wg sync.WaitGroup
	start := time.Now()
	for p, c := range pubs {
		from, to := pubRange(sc.msgs, len(pubs), p)
		wg.Go(func() { errs[p] = publishRange(ctx, c, sc.qos, from, to, limit) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := awaitTally(ctx, tally, sub, alive, start, limit); err != nil {
		return nil, err
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	lat := slices.Clone(tally.latency)
	slices.Sort(lat)
	p50, _ := percentile(lat, 50)
	p99, _ := percentile(lat, 99)
	elapsed := tally.last.Sub(start).Seconds()
	if elapsed <= 0 {
		return nil, errors.New("benchcmp: mqttlisten run took no measurable time")
	}
	return []float64{float64(sc.msgs) / elapsed, p50, p99}, nil
}

// publishRange publishes messages from through to-1 on c at qos, as fast
// as c goes (at QoS 1 with at most mqttWindow awaiting PUBACK).
func publishRange(ctx context.Context, c mqtt.Client, qos, from, to int, limit time.Duration) error {
	var payload []byte
	pending := make([]mqtt.Token, mqttWindow)
	for i := from; i < to; i++ {
		k := (i - from) % mqttWindow
		if qos > 0 && pending[k] != nil {
			if err := awaitToken(pending[k], limit); err != nil {
				return fmt.Errorf("message %d: %w", i-mqttWindow, err)
			}
		}
		payload = mqttStamp(payload[:0], uint64(i), time.Now(), mqttSize)
		tok := c.Publish(mqttTopic, byte(qos), false, slices.Clone(payload))
		if qos > 0 {
			pending[k] = tok
		} else if (i-from)%1000 == 999 {
			if err := awaitToken(tok, limit); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	for _, tok := range pending {
		if tok != nil {
			if err := awaitToken(tok, limit); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitTally waits until tally has every message, failing when none
// arrives for mqttStall, the subscriber ends, a server of rig exits or
// limit has passed since start.
func awaitTally(ctx context.Context, tally *mqttTally, sub *natsSubscriber, rig *mqttRig, start time.Time, limit time.Duration) error {
	deadline := start.Add(limit)
	lastGot, lastChange := -1, time.Now()
	for {
		select {
		case <-tally.all:
			_, err := tally.snapshot()
			return err
		case <-sub.done:
			return fmt.Errorf("benchcmp: MQTT subscriber: %v", sub.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if err := rig.alive(); err != nil {
			return err
		}
		got, err := tally.snapshot()
		if err != nil {
			return err
		}
		now := time.Now()
		if got != lastGot {
			lastGot, lastChange = got, now
		}
		if now.Sub(lastChange) > mqttStall || now.After(deadline) {
			return fmt.Errorf("benchcmp: the MQTT subscriber received %d of %d messages (none for %v)", got, tally.want, now.Sub(lastChange).Round(time.Millisecond))
		}
	}
}

// mqttConnectPacket returns an MQTT 3.1.1 CONNECT packet with clean
// session, the given keep alive in seconds and client id.
func mqttConnectPacket(id string, keepAlive uint16) []byte {
	body := []byte{0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, byte(keepAlive >> 8), byte(keepAlive), byte(len(id) >> 8), byte(len(id))}
	body = append(body, id...)
	pkt := appendRemainingLength([]byte{0x10}, len(body))
	return append(pkt, body...)
}

// appendRemainingLength appends n in MQTT's variable byte integer form.
func appendRemainingLength(dst []byte, n int) []byte {
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			b |= 0x80
		}
		dst = append(dst, b)
		if n == 0 {
			return dst
		}
	}
}

// checkConnack returns an error unless b is an MQTT 3.1.1 CONNACK that
// accepts the connection.
func checkConnack(b []byte) error {
	if len(b) != 4 || b[0] != 0x20 || b[1] != 2 {
		return fmt.Errorf("benchcmp: not a CONNACK: % x", b)
	}
	if b[3] != 0 {
		return fmt.Errorf("benchcmp: CONNACK refuses the connection (return code %d)", b[3])
	}
	return nil
}

// dialIdleMQTT opens one MQTT connection to addr as client id and waits
// for its CONNACK.
func dialIdleMQTT(ctx context.Context, addr, id string) (net.Conn, error) {
	d := net.Dialer{Timeout: startTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(startTimeout))
	var ack [4]byte
	if _, err = conn.Write(mqttConnectPacket(id, mqttKeepAlive)); err == nil {
		_, err = io.ReadFull(conn, ack[:])
	}
	if err == nil {
		err = checkConnack(ack[:])
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// perConnKiB returns the growth from before to after (bytes) per
// connection in KiB.
func perConnKiB(before, after int64, conns int) (float64, error) {
	if conns <= 0 {
		return 0, fmt.Errorf("benchcmp: %d connections", conns)
	}
	return float64(after-before) / float64(conns) / 1024, nil
}

// measureMQTTIdle opens conns idle connections to rig and returns the
// connection rate and the RSS growth per connection in KiB.
func (m *measurer) measureMQTTIdle(ctx context.Context, rig *mqttListenRig, conns int) ([]float64, error) {
	if need := uint64(conns + 1000); fileLimit() < need {
		return nil, fmt.Errorf("benchcmp: RLIMIT_NOFILE is %d; %d idle connections need about %d", fileLimit(), conns, need)
	}
	// The baseline: the broker once steady after one client's handshake.
	first, err := dialIdleMQTT(ctx, rig.addr, "benchcmp-idle-base")
	if err != nil {
		return nil, fmt.Errorf("benchcmp: idle client: %w", err)
	}
	defer first.Close()
	if err := pause(ctx, mqttIdleSettle); err != nil {
		return nil, err
	}
	before, _, err := steadyRSS(ctx, rig.srv)
	if err != nil {
		return nil, err
	}

	open := make([]net.Conn, conns)
	defer func() {
		for _, c := range open {
			if c != nil {
				c.Close()
			}
		}
	}()
	errs := make([]error, mqttIdleDialers)
	var wg sync.WaitGroup
	start := time.Now()
	for d := range mqttIdleDialers {
		from, to := pubRange(conns, mqttIdleDialers, d)
		wg.Go(func() {
			for i := from; i < to; i++ {
				c, err := dialIdleMQTT(ctx, rig.addr, fmt.Sprintf("benchcmp-idle-%05d", i))
				if err != nil {
					errs[d] = fmt.Errorf("benchcmp: idle connection %d of %d: %w", i+1, conns, err)
					return
				}
				open[i] = c
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := rig.srv.alive(); err != nil {
		return nil, err
	}
	if err := pause(ctx, mqttIdleSettle); err != nil {
		return nil, err
	}
	after, steady, err := steadyRSS(ctx, rig.srv)
	if err != nil {
		return nil, err
	}
	if !steady {
		m.logf("%s: RSS still moving after %v with %d idle connections; took the last reading", rig.srv.label, rssTimeout, conns)
	}
	perConn, err := perConnKiB(before, after, conns)
	if err != nil {
		return nil, err
	}
	// A broker that dropped idle clients would read as cheap: check that
	// they are still there (a closed one reads EOF at once).
	if err := checkStillOpen(open); err != nil {
		return nil, err
	}
	return []float64{float64(conns) / elapsed.Seconds(), perConn}, nil
}

// checkStillOpen returns an error if the broker closed any of conns: a
// read with a deadline just past must time out rather than see EOF.
func checkStillOpen(conns []net.Conn) error {
	closed := 0
	var one [1]byte
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.Read(one[:])
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			closed++
		}
		c.SetReadDeadline(time.Time{})
	}
	if closed > 0 {
		return fmt.Errorf("benchcmp: the broker closed %d of %d idle connections", closed, len(conns))
	}
	return nil
}
