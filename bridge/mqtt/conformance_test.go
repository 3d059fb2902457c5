package mqtt

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
	"github.com/leafbox/leafbox/core/subject"
)

// TestConformance runs the bridge conformance suite against the MQTT
// bridge (MQTT 3.1.1) connected to fakeBroker, a minimal broker the test
// plays: the suite's device must see the bridge's own acknowledgements,
// which a real broker in between would hide.
func TestConformance(t *testing.T) {
	bridgetest.Suite{Harness: mqttHarness{}, BackpressureMsgs: 500}.Run(t)
}

type mqttHarness struct{}

func (mqttHarness) Open(t *testing.T, routes bridgetest.Routes) (bridge.Bridge, bridgetest.Device) {
	fb := newFakeBroker(t)
	inTopic := subject.TopicFromSubject(routes.In)
	fb.inTopic = inTopic
	cfg := Config{
		Name: "conformance", Server: fb.addr, Version: V311, ClientID: "conformance", SessionExpiry: time.Hour,
		KeepAlive: 5 * time.Second, ReconnectDelay: 20 * time.Millisecond, ConnectTimeout: 2 * time.Second,
		RequestTimeout: 2 * time.Second, QueueLen: 64,
		Inbound:  []InboundRoute{{From: inTopic, QoS: 1, Store: routes.StoreIn}},
		Outbound: []OutboundRoute{{From: routes.Out, QoS: 1, Stream: routes.OutStream, Durable: routes.OutDurable}},
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, fb
}

// fakeBroker is the MQTT 3.1.1 broker side of one bridge: it accepts the
// bridge's connections, sends it PUBLISHes at QoS 1 (Send) and takes its
// PUBLISHes (Receive).
type fakeBroker struct {
	t       *testing.T
	addr    string
	inTopic string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change below
	ln       net.Listener
	conn     net.Conn // the bridge's connection once subscribed
	conns    map[net.Conn]bool
	acked    map[uint16]bool
	nextID   uint16
	received [][]byte
	stalled  chan struct{} // non-nil while stalled; closed by Resume
	writeMu  sync.Mutex
}

func newFakeBroker(t *testing.T) *fakeBroker {
	fb := &fakeBroker{t: t, changed: make(chan struct{}), conns: map[net.Conn]bool{}, acked: map[uint16]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb.addr = ln.Addr().String()
	fb.serve(ln)
	t.Cleanup(func() { fb.Drop(t) })
	return fb
}

// notify wakes the waiters; fb.mu is held.
func (fb *fakeBroker) notify() {
	close(fb.changed)
	fb.changed = make(chan struct{})
}

// await waits until cond (called with fb.mu held) holds.
func (fb *fakeBroker) await(ctx context.Context, cond func() bool) error {
	for {
		fb.mu.Lock()
		ok, ch := cond(), fb.changed
		fb.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (fb *fakeBroker) serve(ln net.Listener) {
	fb.mu.Lock()
	fb.ln = ln
	fb.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fb.mu.Lock()
			fb.conns[c] = true
			fb.notify()
			fb.mu.Unlock()
			go fb.handle(c)
		}
	}()
}

func (fb *fakeBroker) write(c net.Conn, p packets.ControlPacket) error {
	fb.writeMu.Lock()
	defer fb.writeMu.Unlock()
	return p.Write(c)
}

// handle serves one connection of the bridge.
func (fb *fakeBroker) handle(c net.Conn) {
	defer func() {
		c.Close()
		fb.mu.Lock()
		delete(fb.conns, c)
		if fb.conn == c {
			fb.conn = nil
		}
		fb.notify()
		fb.mu.Unlock()
	}()
	for {
		fb.mu.Lock()
		stalled := fb.stalled
		fb.mu.Unlock()
		if stalled != nil {
			<-stalled
		}
		cp, err := packets.ReadPacket(c)
		if err != nil {
			return
		}
		switch p := cp.(type) {
		case *packets.ConnectPacket:
			ack := packets.NewControlPacket(packets.Connack).(*packets.ConnackPacket)
			ack.SessionPresent = !p.CleanSession
			if fb.write(c, ack) != nil {
				return
			}
		case *packets.SubscribePacket:
			ack := packets.NewControlPacket(packets.Suback).(*packets.SubackPacket)
			ack.MessageID, ack.ReturnCodes = p.MessageID, p.Qoss
			if fb.write(c, ack) != nil {
				return
			}
			fb.mu.Lock()
			fb.conn = c
			fb.notify()
			fb.mu.Unlock()
		case *packets.PublishPacket:
			if p.Qos > 0 {
				ack := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
				ack.MessageID = p.MessageID
				if fb.write(c, ack) != nil {
					return
				}
			}
			fb.mu.Lock()
			fb.received = append(fb.received, p.Payload)
			fb.notify()
			fb.mu.Unlock()
		case *packets.PubackPacket:
			fb.mu.Lock()
			fb.acked[p.MessageID] = true
			fb.notify()
			fb.mu.Unlock()
		case *packets.PingreqPacket:
			if fb.write(c, packets.NewControlPacket(packets.Pingresp)) != nil {
				return
			}
		case *packets.DisconnectPacket:
			return
		}
	}
}

func (fb *fakeBroker) Acknowledges() bool { return true }

// Send publishes payload to the bridge at QoS 1 and returns on its
// PUBACK, sending it again (DUP) on the next connection after a loss.
func (fb *fakeBroker) Send(ctx context.Context, payload []byte) error {
	fb.mu.Lock()
	fb.nextID++
	if fb.nextID == 0 {
		fb.nextID = 1
	}
	id := fb.nextID
	fb.mu.Unlock()
	dup := false
	for {
		var c net.Conn
		if err := fb.await(ctx, func() bool { c = fb.conn; return c != nil }); err != nil {
			return err
		}
		p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
		p.Qos, p.MessageID, p.TopicName, p.Payload, p.Dup = 1, id, fb.inTopic, payload, dup
		if err := fb.write(c, p); err == nil {
			err = fb.await(ctx, func() bool { return fb.acked[id] || fb.conn != c })
			if err != nil {
				return err
			}
			fb.mu.Lock()
			ok := fb.acked[id]
			delete(fb.acked, id)
			fb.mu.Unlock()
			if ok {
				return nil
			}
		}
		dup = true
	}
}

// Receive returns the next payload the bridge published.
func (fb *fakeBroker) Receive(ctx context.Context) ([]byte, error) {
	var p []byte
	err := fb.await(ctx, func() bool {
		if len(fb.received) == 0 {
			return false
		}
		p, fb.received = fb.received[0], fb.received[1:]
		return true
	})
	return p, err
}

// Drop closes the listener and every connection.
func (fb *fakeBroker) Drop(t *testing.T) {
	fb.mu.Lock()
	if fb.ln != nil {
		fb.ln.Close()
		fb.ln = nil
	}
	for c := range fb.conns {
		c.Close()
	}
	fb.conn = nil
	fb.notify()
	fb.mu.Unlock()
}

// Restore listens again on the same address.
func (fb *fakeBroker) Restore(t *testing.T) {
	ln, err := net.Listen("tcp", fb.addr)
	if err != nil {
		t.Fatal(err)
	}
	fb.serve(ln)
}

func (fb *fakeBroker) Stall(t *testing.T) {
	fb.mu.Lock()
	fb.stalled = make(chan struct{})
	fb.mu.Unlock()
}

func (fb *fakeBroker) Resume(t *testing.T) {
	fb.mu.Lock()
	if fb.stalled != nil {
		close(fb.stalled)
		fb.stalled = nil
	}
	fb.mu.Unlock()
}

// WaitIdle waits until the bridge holds no connection.
func (fb *fakeBroker) WaitIdle(ctx context.Context) error {
	return fb.await(ctx, func() bool { return len(fb.conns) == 0 })
}
