package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// The shaped uplink rows run the forward scenario through a link the
// harness's relay shapes like a cellular uplink: an added round trip and
// a bandwidth cap each way. Before the clock starts, one message goes
// through and the run waits until the hub stream holds it, so that both
// sides are linked and their forwarding set up (nats-server's stream
// source creates its consumer across the slow link first, which can take
// tens of seconds); the rows then measure N messages from the first
// publish until the hub stream holds them all, and the link utilisation:
// the bytes that crossed toward the hub in that time over what the cap
// allows.

// groupUplinkAlias is another name -only takes for groupLeaf: every
// uplink row, shaped ones included.
const groupUplinkAlias = "uplink"

// linkShape is how the relay shapes a link: rtt is the round trip it adds
// (half each way) and mbit the bandwidth cap each way, in Mbit/s (0: no
// cap).
type linkShape struct {
	rtt  time.Duration
	mbit float64
}

// bytesPerSecond returns the cap in bytes per second, 0 for none.
func (s linkShape) bytesPerSecond() float64 { return s.mbit * 1e6 / 8 }

// shaped reports whether s changes the link at all.
func (s linkShape) shaped() bool { return s.rtt > 0 || s.mbit > 0 }

// String names the shape in a row, e.g. "RTT +200 ms, 10 Mbit/s".
func (s linkShape) String() string {
	return fmt.Sprintf("RTT +%d ms, %g Mbit/s", s.rtt.Milliseconds(), s.mbit)
}

// shapedMsgs returns the messages of a shaped run: enough for a few
// seconds of the link's capacity (compressed, a message takes about a
// fifth of the bytes, so five times as many).
func shapedMsgs(w workload, mbit float64, compression string) int {
	n := max(50, w.LeafMsgs/50)
	if mbit >= 10 {
		n = max(100, w.LeafMsgs/6)
	}
	if compression != compressOff {
		n *= 5
	}
	return n
}

// shapedScenario returns the forward scenario through a link with rtt
// added and a cap of mbit Mbit/s each way, each gateway asking for
// compression: off (so the link carries the bytes each side puts on it),
// or s2_auto, the default, which picks its level by the round trip.
func shapedScenario(w workload, rtt time.Duration, mbit float64, compression string) scenario {
	shape := linkShape{rtt: rtt, mbit: mbit}
	msgs := shapedMsgs(w, mbit, compression)
	name := fmt.Sprintf("uplink shaped %s, %s × %d B", shape, groupThousands(int64(msgs)), w.LeafSize)
	slug := fmt.Sprintf("leafshaped-%dms-%gm", rtt.Milliseconds(), mbit)
	order := orderLeaf + 3
	if compression != compressOff {
		name += ", compression " + compression
		slug += "-" + compression
		order++
	}
	return scenario{slug: slug, kind: kindLeafShaped,
		size: w.LeafSize, msgs: msgs, compression: compression, link: shape, metrics: []metric{
			{Name: name, Unit: unitRate, Better: higherIsBetter, Order: order},
			{Name: name + ", link utilisation toward the hub", Unit: unitPercent, Better: higherIsBetter, Order: order},
			{Name: name + ", wire bytes per message", Unit: unitBytes, Better: lowerIsBetter, Order: order},
		}}
}

// describeShaped returns the workload line of the shaped rows.
func describeShaped() string {
	return "Uplink shaped: the forward scenario through the relay shaping the link, with compression off, and with both gateways on the default s2_auto (which picks its S2 level by the link's round trip; the hub accepts what the gateway asks): the added round trip (half each way) and the bandwidth cap each way; " +
		"one message goes through first and the clock starts once the hub stream holds it (so nats-server's stream source is set up); " +
		"the rate is messages ÷ time from the first publish until the hub stream holds them all, the utilisation is the bytes that crossed toward the hub in that time ÷ what the cap carries in it, and wire bytes are both ways, per message"
}

// measureShaped runs one shaped forward scenario on rig (linked, the
// link shaped) and returns its values: rate, utilisation and wire bytes.
func (m *measurer) measureShaped(ctx context.Context, rig *leafRig, sc scenario, label string, limit time.Duration) ([]float64, error) {
	warm := time.Now()
	if err := publishTelemetry(ctx, rig.gateway.clientAddr, 1, sc.size, limit); err != nil {
		return nil, err
	}
	if _, err := waitHubStream(ctx, rig, 1, limit+leafRelinkTimeout); err != nil {
		return nil, fmt.Errorf("benchcmp: warm-up message: %w", err)
	}
	m.logf("%s, %s: the warm-up message reached the hub stream in %v", label, sc.link, time.Since(warm).Round(time.Millisecond))
	toHub0, fromHub0 := rig.proxy.bytes()
	start := time.Now()
	if err := publishTelemetry(ctx, rig.gateway.clientAddr, sc.msgs, sc.size, limit); err != nil {
		return nil, err
	}
	p, err := waitHubStream(ctx, rig, uint64(sc.msgs)+1, limit)
	if err != nil {
		return nil, err
	}
	toHub, fromHub := rig.proxy.bytes()
	elapsed := p.all.Sub(start).Seconds()
	util := 0.0
	if bps := sc.link.bytesPerSecond(); bps > 0 {
		util = 100 * float64(toHub-toHub0) / (bps * elapsed)
	}
	wire := float64(toHub-toHub0+fromHub-fromHub0) / float64(sc.msgs)
	return []float64{float64(sc.msgs) / elapsed, util, wire}, nil
}

// shapeChunk is the most one read of a shaped pipe takes, so that the
// pacing is smooth.
const shapeChunk = 4 << 10

// shapeQueue is the bottleneck queue of a shaped pipe beyond what the
// link holds in flight (cap × one-way delay), as a router's buffer.
const shapeQueue = 256 << 10

// chunk is bytes read from one end of a shaped pipe with the time they
// reach the other end.
type chunk struct {
	b  []byte
	at time.Time
}

// shapedCopy copies src to dst as a link with half of shape's round trip
// one way and its bandwidth cap would: each chunk leaves once the bytes
// before it have been serialized at the cap, and arrives the one-way
// delay later. It counts what it writes in n. The queue between the
// reader and the writer is bounded (what the link holds in flight plus
// shapeQueue), so a sender faster than the cap is held back as TCP would
// be.
func shapedCopy(dst io.Writer, src io.Reader, shape linkShape, n *atomic.Int64) {
	delay := shape.rtt / 2
	bps := shape.bytesPerSecond()
	inFlight := shapeQueue
	if bps > 0 {
		inFlight += int(bps * delay.Seconds())
	} else {
		inFlight += 16 << 20
	}
	q := make(chan chunk, max(16, inFlight/shapeChunk))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.at); d > 0 {
				time.Sleep(d)
			}
			k, err := dst.Write(c.b)
			n.Add(int64(k))
			if err != nil {
				for range q { // drain so the reader can finish
				}
				return
			}
		}
	}()
	var sent time.Time // when the link has serialized everything so far
	for {
		b := make([]byte, shapeChunk)
		k, err := src.Read(b)
		if k > 0 {
			now := time.Now()
			if sent.Before(now) {
				sent = now
			}
			if bps > 0 {
				sent = sent.Add(time.Duration(float64(k) / bps * float64(time.Second)))
			}
			q <- chunk{b: b[:k], at: sent.Add(delay)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

// pipeFor returns how the relay copies one direction: shaped when the
// proxy has a shape, else a plain counted copy.
func (p *linkProxy) pipeFor() func(dst, src net.Conn, n *atomic.Int64) {
	shape := p.shape.Load()
	if shape == nil || !shape.shaped() {
		return func(dst, src net.Conn, n *atomic.Int64) { _, _ = io.Copy(countingWriter{dst, n}, src) }
	}
	return func(dst, src net.Conn, n *atomic.Int64) { shapedCopy(dst, src, *shape, n) }
}

// setShape shapes the connections the proxy relays from now on.
func (p *linkProxy) setShape(s linkShape) { p.shape.Store(&s) }
