package bridgetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/store/jsapi"
)

// The subjects and streams the suite gives a bridge (Routes).
const (
	// InSubject is where the device's messages are published.
	InSubject = "bridgetest.in.dev"
	// OutSubject is where the suite publishes messages for the device.
	OutSubject = "bridgetest.out.dev"
	// InStream captures bridgetest.in.> in the stored-inbound cases.
	InStream = "BRIDGETEST_IN"
	// OutStream captures bridgetest.out.> in the stream-outbound case.
	OutStream = "BRIDGETEST_OUT"
	// OutDurable is the durable consumer of the stream-outbound case.
	OutDurable = "bridgetest"
)

// Routes say what the bridge under test connects: the harness turns
// them into its bridge's configuration.
type Routes struct {
	// In is the subject the device's messages are published on, as core
	// messages, or with bridge.Store when StoreIn is set.
	In string
	// StoreIn stores the device's messages in the stream capturing In
	// (bridge.Store) and acknowledges each to the device only after the
	// stream's PubAck; a message the stream refuses is not acknowledged
	// (and is reported with Status.SetError).
	StoreIn bool
	// Out is the subject whose messages go to the device: a core
	// subscription, or with OutStream the consumer's filter.
	Out string
	// OutStream and OutDurable, when set, take the outbound messages from
	// this durable consumer on this local stream instead (bridge.Consume),
	// each acknowledged only after the device accepted it, and counted in
	// Status.Out once acknowledged.
	OutStream, OutDurable string
}

// Harness is what a bridge's test implements to run the suite.
type Harness interface {
	// Open builds a bridge for routes (not running: the suite runs it)
	// and the device it talks to, up and ready. It registers the
	// device's cleanup with t.Cleanup.
	Open(t *testing.T, routes Routes) (bridge.Bridge, Device)
}

// Device is the device side of one bridge under test, which the test
// controls. Its methods may be called from any goroutine.
type Device interface {
	// Acknowledges reports whether the device protocol acknowledges the
	// device's messages (MQTT QoS 1, say). Send then returns on the ack,
	// and a message not acknowledged is sent again after a reconnect.
	Acknowledges() bool
	// Send sends payload from the device to the bridge, returning once
	// it is delivered: acknowledged by the bridge when the protocol
	// acknowledges, written otherwise. It waits through a drop (and
	// sends again after Restore) until ctx ends.
	Send(ctx context.Context, payload []byte) error
	// Receive returns the next payload the device got from the bridge,
	// in arrival order, or ctx's error.
	Receive(ctx context.Context) ([]byte, error)
	// Drop takes the device side away (broker stopped, cable pulled):
	// the bridge's connection fails and new ones fail until Restore.
	Drop(t *testing.T)
	// Restore brings the device side back, returning once it is ready to
	// take a connection (and, where the device side has clients of its
	// own, once they are connected again).
	Restore(t *testing.T)
	// Stall makes the device stop taking messages from the bridge (a slow
	// device) until Resume: it accepts (acknowledges, reads) none, so a
	// message sent to it meanwhile and then lost with a Drop was never
	// accepted, and a bridge must send it again.
	Stall(t *testing.T)
	// Resume ends a Stall.
	Resume(t *testing.T)
}

// Mapper is implemented by a Device whose bridge carries values rather
// than the suite's payloads as they are (a Modbus device holds numbers in
// registers; its bridge publishes them as JSON and takes JSON write
// requests). The device itself maps the payloads it is given to Send and
// those it returns from Receive; the suite maps what it sees on the bus.
type Mapper interface {
	// Published returns the payload the device sent, given a message the
	// bridge published on In. ok is false for a message that carries none
	// of the suite's payloads (a value the device held before the case
	// began, published by a bridge's first poll); the suite ignores it.
	Published(data []byte) (payload string, ok bool)
	// Command returns the message the suite publishes on Out for the
	// device to receive payload.
	Command(payload string) []byte
}

// Inapplicable is implemented by a Harness whose bridge some cases do not
// apply to. The suite logs the reason and the case passes without
// running; the reason must say why the case's behaviour does not exist
// for the bridge, not stand in for a missing feature.
type Inapplicable interface {
	// NotApplicable returns why the named case (as in Suite.Run:
	// "OutboundFromStream") does not apply, or "" when it does.
	NotApplicable(name string) string
}

// IdleWaiter is implemented by a Device that can tell when the bridge
// holds no connection to it; the stop cases then check that a stopped
// bridge let go of the device.
type IdleWaiter interface {
	// WaitIdle returns nil once no connection from the bridge is open, or
	// ctx's error.
	WaitIdle(ctx context.Context) error
}

// Suite is the conformance suite every bridge runs. Each case runs in a
// subtest with a Broker of its own and a bridge under a bridge.Runner.
type Suite struct {
	// Harness builds the bridge and its device.
	Harness Harness
	// Timeout bounds each wait (the package's Timeout when 0).
	Timeout time.Duration
	// BackpressureMsgs is how many messages the backpressure case
	// publishes at a stalled device (2000 when 0).
	BackpressureMsgs int
}

// Run runs the suite with its defaults against h.
func Run(t *testing.T, h Harness) { Suite{Harness: h}.Run(t) }

// Run runs every case.
func (s Suite) Run(t *testing.T) {
	if s.Timeout <= 0 {
		s.Timeout = Timeout
	}
	if s.BackpressureMsgs <= 0 {
		s.BackpressureMsgs = 2000
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"OpenClose", s.testOpenClose},
		{"Inbound", s.testInbound},
		{"Outbound", s.testOutbound},
		{"Reconnect", s.testReconnect},
		{"Backpressure", s.testBackpressure},
		{"OutboundFromStream", s.testOutboundFromStream},
		{"StoreBeforeAck", s.testStoreBeforeAck},
		{"CleanStop", s.testCleanStop},
	} {
		t.Run(c.name, func(t *testing.T) {
			if ia, ok := s.Harness.(Inapplicable); ok {
				if why := ia.NotApplicable(c.name); why != "" {
					t.Logf("%s does not apply to this bridge: %s", c.name, why)
					return
				}
			}
			c.run(t)
		})
	}
}

// fixture is one case's broker, device and running bridge.
type fixture struct {
	s      Suite
	t      *testing.T
	broker *Broker
	bus    *Bus // the test's side
	dev    Device
	runner *bridge.Runner
	status *bridge.Status
}

// open starts a Broker, builds the bridge for routes and runs it.
func (s Suite) open(t *testing.T, routes Routes, streams ...jsapi.StreamConfig) *fixture {
	t.Helper()
	f := &fixture{s: s, t: t, broker: NewBroker(t)}
	f.bus = f.broker.Bus(t)
	for _, sc := range streams {
		f.broker.AddStream(t, sc)
	}
	b, dev := s.Harness.Open(t, routes)
	if b == nil || dev == nil {
		t.Fatal("bridgetest: the harness returned no bridge or no device")
	}
	f.dev = dev
	bus, closeBus, _ := f.broker.Connect("")
	f.status = new(bridge.Status)
	f.runner = bridge.NewRunner(b, bridge.Env{Bus: bus, Status: f.status},
		bridge.Backoff{Min: 10 * time.Millisecond, Max: 200 * time.Millisecond, Stable: time.Minute})
	f.runner.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		defer cancel()
		if err := f.runner.Close(ctx); err != nil {
			t.Errorf("bridgetest: the bridge did not stop: %v", err)
		}
		closeBus()
	})
	return f
}

// ctx returns a context bounded by the suite's timeout.
func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(f.t.Context(), f.s.Timeout)
	f.t.Cleanup(cancel)
	return ctx
}

// wait waits for cond on the bridge's status.
func (f *fixture) wait(what string, cond func(bridge.Snapshot) bool) bridge.Snapshot {
	f.t.Helper()
	if err := f.status.Wait(f.ctx(), cond); err != nil {
		f.t.Fatalf("waiting for %s: %v; status %+v", what, err, f.status.Snapshot())
	}
	return f.status.Snapshot()
}

func connected(s bridge.Snapshot) bool { return s.State == bridge.StateConnected }

// waitInterest waits until the broker has interest on subj (or none).
func (f *fixture) waitInterest(subj string, want bool) {
	f.t.Helper()
	if err := f.broker.WaitInterest(f.ctx(), subj, want); err != nil {
		f.t.Fatalf("waiting for interest on %s to be %v: %v", subj, want, err)
	}
}

// send sends payload from the device.
func (f *fixture) send(payload string) {
	f.t.Helper()
	if err := f.dev.Send(f.ctx(), []byte(payload)); err != nil {
		f.t.Fatalf("device send %q: %v", payload, err)
	}
}

// receive returns the next payload the device got.
func (f *fixture) receive() string {
	f.t.Helper()
	p, err := f.dev.Receive(f.ctx())
	if err != nil {
		f.t.Fatalf("device receive: %v (status %+v)", err, f.status.Snapshot())
	}
	return string(p)
}

// mapper is the device's Mapper, nil when it carries payloads as they
// are.
func (f *fixture) mapper() Mapper {
	m, _ := f.dev.(Mapper)
	return m
}

// command is the message published on Out for the device to receive
// payload.
func (f *fixture) command(payload string) []byte {
	if m := f.mapper(); m != nil {
		return m.Command(payload)
	}
	return []byte(payload)
}

// publishOut publishes payload on Out for the device.
func (f *fixture) publishOut(payload string) error {
	return f.bus.Publish(OutSubject, "", nil, f.command(payload))
}

// subscribe collects the core messages on subj: on In the payloads the
// device sent (mapped back by a Mapper), on Out the messages as
// published.
func (f *fixture) subscribe(subj string) <-chan string {
	ch := make(chan string, 1<<16)
	mapper := f.mapper()
	unsub, err := f.bus.Subscribe(subj, "", func(m bridge.Msg) {
		if mapper != nil && string(m.Subject) == InSubject {
			p, ok := mapper.Published(m.Data)
			if ok {
				ch <- p
			}
			return
		}
		ch <- string(m.Data)
	})
	if err != nil {
		f.t.Fatalf("subscribe %s: %v", subj, err)
	}
	f.t.Cleanup(unsub)
	return ch
}

func (f *fixture) next(ch <-chan string, what string) string {
	f.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-f.ctx().Done():
		f.t.Fatalf("%s: nothing arrived (status %+v)", what, f.status.Snapshot())
		return ""
	}
}

func (f *fixture) stop() {
	f.t.Helper()
	before := f.status.Snapshot().LastError
	start := time.Now()
	if err := f.runner.Close(f.ctx()); err != nil {
		f.t.Fatalf("stopping the bridge: %v", err)
	}
	snap := f.status.Snapshot()
	if snap.State != bridge.StateStopped {
		f.t.Fatalf("state after stop %v, want stopped", snap.State)
	}
	if snap.LastError != before {
		f.t.Fatalf("stopping recorded an error: %q", snap.LastError)
	}
	f.t.Logf("the bridge stopped in %v", time.Since(start))
	if iw, ok := f.dev.(IdleWaiter); ok {
		if err := iw.WaitIdle(f.ctx()); err != nil {
			f.t.Fatalf("the stopped bridge still holds a device connection: %v", err)
		}
	}
}

func payloads(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// testOpenClose: the bridge connects, reports it, and stops cleanly
// without recording an error or keeping its subscription.
func (s Suite) testOpenClose(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	snap := f.wait("connected", connected)
	if snap.LastError != "" {
		t.Fatalf("error recorded while connecting: %q", snap.LastError)
	}
	f.waitInterest(OutSubject, true)
	f.stop()
	f.waitInterest(OutSubject, false)
}

// testInbound: device messages are published on In, in order, counted.
func (s Suite) testInbound(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	got := f.subscribe(InSubject)
	f.wait("connected", connected)
	want := payloads("in-", 1, 20)
	for _, p := range want {
		f.send(p)
	}
	for _, p := range want {
		if m := f.next(got, "inbound "+p); m != p {
			t.Fatalf("published %q, want %q (in order)", m, p)
		}
	}
	f.wait("20 counted in", func(s bridge.Snapshot) bool { return s.In >= 20 })
}

// testOutbound: messages on Out reach the device, in order, counted.
func (s Suite) testOutbound(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	f.wait("connected", connected)
	f.waitInterest(OutSubject, true)
	want := payloads("out-", 1, 20)
	for _, p := range want {
		if err := f.publishOut(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range want {
		if m := f.receive(); m != p {
			t.Fatalf("device got %q, want %q (in order)", m, p)
		}
	}
	f.wait("20 counted out", func(s bridge.Snapshot) bool { return s.Out >= 20 })
}

// testReconnect: when the device side drops, the bridge reports it with
// an error, reconnects once it is back (counted), and messages flow again
// both ways.
func (s Suite) testReconnect(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	got := f.subscribe(InSubject)
	f.wait("connected", connected)
	f.send("before")
	if m := f.next(got, "inbound before the drop"); m != "before" {
		t.Fatalf("got %q", m)
	}
	f.dev.Drop(t)
	snap := f.wait("the drop noticed", func(s bridge.Snapshot) bool { return s.State != bridge.StateConnected && s.LastError != "" })
	t.Logf("after the drop: %v, %q", snap.State, snap.LastError)
	f.dev.Restore(t)
	f.wait("reconnected", func(s bridge.Snapshot) bool { return connected(s) && s.Reconnects >= 1 })

	f.send("after")
	if m := f.next(got, "inbound after the reconnect"); m != "after" {
		t.Fatalf("got %q", m)
	}
	f.waitInterest(OutSubject, true)
	if err := f.publishOut("after"); err != nil {
		t.Fatal(err)
	}
	if m := f.receive(); m != "after" {
		t.Fatalf("device got %q after the reconnect, want after", m)
	}
}

// testBackpressure: a device that stops reading does not block the
// broker: publishing to it completes and other subscribers get every
// message; what the bridge cannot hold it counts as dropped, and the
// rest reaches the device, in order, once it reads again.
func (s Suite) testBackpressure(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	f.wait("connected", connected)
	// The bridge's own interest first: with the other subscriber in
	// place, interest alone would not say the bridge subscribed.
	f.waitInterest(OutSubject, true)
	other := f.subscribe(OutSubject)
	f.dev.Stall(t)
	n := s.BackpressureMsgs
	payload := strings.Repeat("x", 1000)
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for i := range n {
			_ = f.publishOut(strconv.Itoa(i) + ":" + payload)
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("published %d messages at a stalled device in %v", n, d)
	case <-f.ctx().Done():
		// Let the publisher go before failing, so the broker can stop.
		f.dev.Resume(t)
		t.Fatalf("publishing to a stalled device blocked the broker (status %+v)", f.status.Snapshot())
	}
	for i := range n {
		m := f.next(other, "another subscriber")
		if want := string(f.command(strconv.Itoa(i) + ":" + payload)); m != want {
			t.Fatalf("another subscriber got message %q, want number %d", m[:min(len(m), 20)], i)
		}
	}
	f.dev.Resume(t)
	snap := f.wait("every message delivered or counted dropped", func(s bridge.Snapshot) bool {
		var dropped uint64
		for _, d := range s.Drops {
			dropped += d
		}
		return s.Out+dropped >= uint64(n)
	})
	t.Logf("stalled device: %d delivered, drops %v", snap.Out, snap.Drops)
	last := -1
	for range snap.Out {
		m := f.receive()
		num, _, _ := strings.Cut(m, ":")
		i, err := strconv.Atoi(num)
		if err != nil || i <= last {
			t.Fatalf("device got message %q after %d: not in order", num, last)
		}
		last = i
	}
}

// testOutboundFromStream: messages stored in a stream reach the device in
// order, each acknowledged after the device took it: one sent to a
// stalled device and lost with its connection comes again. Those stored
// while the device is away wait in the stream and arrive, in order, when
// it is back; none is lost.
func (s Suite) testOutboundFromStream(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject, OutStream: OutStream, OutDurable: OutDurable},
		jsapi.StreamConfig{Name: OutStream, Subjects: []string{"bridgetest.out.>"}})
	store := func(from, to int) {
		for _, p := range payloads("s-", from, to) {
			if _, _, err := bridge.Store(f.ctx(), f.bus, OutSubject, nil, f.command(p)); err != nil {
				t.Fatalf("store %s: %v", p, err)
			}
		}
	}
	f.wait("connected", connected)
	store(1, 5)
	var got []string
	for len(got) < 5 {
		got = append(got, f.receive())
	}
	if want := payloads("s-", 1, 5); !slices.Equal(got, want) {
		t.Fatalf("device got %q, want %q", got, want)
	}
	f.waitAcked(5, 5)

	// Sent to a device that does not take it, then lost with the
	// connection: it was not acknowledged, so it comes again.
	delivered := make(chan uint64, 64)
	unsub, err := f.bus.Subscribe(">", "", func(m bridge.Msg) {
		var d bridge.Delivery
		if bridge.ParseDelivery(string(m.Reply), &d) && d.Stream == OutStream {
			select {
			case delivered <- d.Sequence:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f.dev.Stall(t)
	store(6, 6)
	for seq := uint64(0); seq != 6; {
		select {
		case seq = <-delivered:
		case <-f.ctx().Done():
			t.Fatal("the stream never sent message 6 to the bridge")
		}
	}
	unsub()
	f.dev.Drop(t)
	f.wait("the drop noticed", func(s bridge.Snapshot) bool { return s.State != bridge.StateConnected })
	// Stored while the device is away: they wait in the stream.
	store(7, 10)
	f.dev.Restore(t)
	f.dev.Resume(t)
	f.wait("reconnected", connected)
	// At least once, in order: each message is the next new one or a
	// repeat of one already seen (sent again after the drop).
	seen := map[string]bool{}
	nextNew, received := 6, 5
	for nextNew <= 10 {
		m := f.receive()
		received++
		switch {
		case m == "s-"+strconv.Itoa(nextNew):
			seen[m] = true
			nextNew++
		case seen[m] || slices.Contains(payloads("s-", 1, 5), m):
			t.Logf("redelivered %s", m)
		default:
			t.Fatalf("device got %q while waiting for s-%d: out of order or lost", m, nextNew)
		}
	}
	f.waitAcked(received, 10)
}

// waitAcked waits until the bridge counted received messages out (it
// counts each after acknowledging it to the stream), then checks that the
// consumer's ack floor reached seq.
func (f *fixture) waitAcked(received int, seq uint64) {
	f.t.Helper()
	f.wait(fmt.Sprint(received, " counted out"), func(s bridge.Snapshot) bool { return s.Out >= uint64(received) })
	if floor := f.broker.ConsumerInfo(f.t, OutStream, OutDurable).AckFloor.Stream; floor < seq {
		f.t.Fatalf("the device took %d messages but the consumer's ack floor is %d, want %d", received, floor, seq)
	}
}

// testStoreBeforeAck: a device message is acknowledged only once the
// stream stored it; one the stream refuses is not acknowledged, and is
// stored (then acknowledged) once the stream has room again. A device
// without acknowledgements sees the refusal counted as a drop instead.
func (s Suite) testStoreBeforeAck(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, StoreIn: true, Out: OutSubject},
		jsapi.StreamConfig{Name: InStream, Subjects: []string{"bridgetest.in.>"}, MaxMsgs: 1, Discard: jsapi.DiscardNew})
	f.wait("connected", connected)
	f.send("first")
	if msgs := f.stored(); len(msgs) != 1 || msgs[0] != "first" {
		t.Fatalf("when the device's send returned the stream held %d messages, want the first one", len(msgs))
	}

	// The stream is full: the next message is refused.
	errBefore := f.status.Snapshot().LastError
	sent := make(chan error, 1)
	go func() { sent <- f.dev.Send(f.ctx(), []byte("second")) }()
	if !f.dev.Acknowledges() {
		f.wait("the refusal counted as a drop", func(s bridge.Snapshot) bool {
			return s.Drops[slices.Index(bridge.DropReasons, bridge.DropRejected)] >= 1
		})
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		f.broker.PurgeStream(t, InStream)
		f.send("third")
		if msgs := f.stored(); len(msgs) != 1 || msgs[0] != "third" {
			t.Fatalf("after the purge the stream held %d messages, want the third one", len(msgs))
		}
		return
	}
	f.wait("the refusal reported", func(s bridge.Snapshot) bool { return s.LastError != "" && s.LastError != errBefore })
	select {
	case err := <-sent:
		t.Fatalf("the device's refused message was acknowledged (send returned %v)", err)
	default:
	}
	f.broker.PurgeStream(t, InStream)
	if err := <-sent; err != nil {
		t.Fatalf("the refused message was never acknowledged after the purge: %v", err)
	}
	if got := f.stored(); len(got) != 1 || got[0] != "second" {
		t.Fatalf("when the device's second send was acknowledged the stream held %q, want [second]", got)
	}
}

// stored returns the payloads in InStream (mapped back by a Mapper).
func (f *fixture) stored() []string {
	f.t.Helper()
	var out []string
	mapper := f.mapper()
	for _, m := range f.broker.StoredMsgs(f.t, InStream) {
		p := string(m.Data)
		if mapper != nil {
			var ok bool
			if p, ok = mapper.Published(m.Data); !ok {
				p = "(not a payload: " + string(m.Data) + ")"
			}
		}
		out = append(out, p)
	}
	return out
}

// testCleanStop: a bridge stopped with traffic in flight both ways
// returns promptly, records no error, and lets go of its subscription
// (and, when the device can tell, of the device).
func (s Suite) testCleanStop(t *testing.T) {
	f := s.open(t, Routes{In: InSubject, Out: OutSubject})
	f.wait("connected", connected)
	f.waitInterest(OutSubject, true)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	defer halt() // also when the case fails
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = f.publishOut(fmt.Sprint("flow-", i))
		}
	})
	wg.Go(func() {
		ctx, cancel := context.WithCancel(f.t.Context())
		defer cancel()
		go func() { <-stop; cancel() }()
		for i := 0; ctx.Err() == nil; i++ {
			_ = f.dev.Send(ctx, []byte(fmt.Sprint("up-", i)))
		}
	})
	f.wait("traffic flowing", func(s bridge.Snapshot) bool { return s.Out >= 10 && s.In >= 10 })
	f.stop()
	halt()
	wg.Wait()
	f.waitInterest(OutSubject, false)
}
