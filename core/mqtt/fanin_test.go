package mqtt_test

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkMQTTFanIn measures QoS 0 publishes (128-byte payloads) from 16
// MQTT 3.1.1 clients to one subscriber of bench/#, the shape of
// scripts/bench's "16 publishers → 1 subscriber" listener row. The
// publishers keep at most fanInWindow bytes ahead of the subscriber, so
// that the listener is measured rather than its slow-consumer limit.
func BenchmarkMQTTFanIn(b *testing.B) {
	const pubs = 16
	env := newTestEnv(b, nil, nil)
	connect := func(id byte) *raw { return env.connect311(b, id) }
	sub := connect('s')
	sub.subscribeBench311()
	var ps []*raw
	for i := range pubs {
		ps = append(ps, connect(byte('a'+i)))
	}
	// PUBLISH QoS 0 to bench/x with 128 bytes: remaining length 137.
	one := append([]byte{0x30, 137, 1, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', 'x'}, make([]byte, 128)...)
	const perBatch = 64
	const fanInWindow = 2 << 20
	batch := make([]byte, 0, perBatch*len(one))
	for range perBatch {
		batch = append(batch, one...)
	}
	// credits: one per batch in flight, handed back as the subscriber
	// reads a batch's bytes.
	credits := make(chan struct{}, fanInWindow/len(batch))
	for range cap(credits) {
		credits <- struct{}{}
	}
	got := make(chan error, 1)
	b.ReportAllocs()
	b.SetBytes(128)
	b.ResetTimer()
	go func() {
		buf := make([]byte, 64<<10)
		want, n := b.N*len(one), 0
		for n < want {
			_ = sub.nc.SetReadDeadline(time.Now().Add(wait))
			m, err := sub.r.Read(buf)
			if err != nil {
				got <- err
				return
			}
			for back := (n+m)/len(batch) - n/len(batch); back > 0; back-- {
				select {
				case credits <- struct{}{}:
				default:
				}
			}
			n += m
		}
		got <- nil
	}()
	var wg sync.WaitGroup
	per := (b.N + pubs - 1) / pubs
	left := b.N
	for _, p := range ps {
		k := min(per, left)
		left -= k
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < k; done += perBatch {
				n := min(perBatch, k-done)
				<-credits
				if _, err := p.nc.Write(batch[:n*len(one)]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-got; err != nil {
		b.Fatal(err)
	}
}

// Publishers whose readers write the subscriber's deliveries at the end
// of their read batches lose none and keep each publisher's order: 8
// MQTT 3.1.1 publishers send 2,000 QoS 0 messages each, in bursts, to one
// subscriber of bench/#, MQTT 3.1.1 or 5, which must see every one once,
// each publisher's in sequence. A batch that left a delivery queued
// without writing it would stall the subscriber short of the count.
func TestFanInDeliversEveryMessageInOrder(t *testing.T) {
	for _, v5 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v3.1.1", true: "v5"}[v5], func(t *testing.T) { fanIn(t, v5) })
	}
}

func fanIn(t *testing.T, v5 bool) {
	const pubs, each, perWrite = 8, 2000, 50
	env := newTestEnv(t, nil, nil)
	connect := func(id byte) *raw { return env.connect311(t, id) }
	// A delivery: PUBLISH QoS 0 on bench/x, then (MQTT 5) an empty
	// property block, then publisher and sequence.
	head := []byte{0x30, 12, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', 'x'}
	var sub *raw
	if v5 {
		sub = env.raw(t)
		sub.connect5("s")
		sub.writeBytes(0x82, 13, 0, 1, 0, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', '#', 0)
		expect(sub, 0x90, 4, 0, 1, 0, 0)
		head = []byte{0x30, 13, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', 'x', 0}
	} else {
		sub = connect('s')
		sub.subscribeBench311()
	}
	var wg sync.WaitGroup
	for p := range pubs {
		r := connect(byte('a' + p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var burst []byte
			for i := range each {
				// PUBLISH QoS 0 to bench/x: publisher and sequence, 3 bytes.
				burst = append(burst, 0x30, 12, 0, 7, 'b', 'e', 'n', 'c', 'h', '/', 'x', byte(p), byte(i>>8), byte(i))
				if len(burst) >= perWrite*14 || i == each-1 {
					if _, err := r.nc.Write(burst); err != nil {
						t.Error(err)
						return
					}
					burst = burst[:0]
				}
			}
		}()
	}
	next := make([]int, pubs)
	for n := 0; n < pubs*each; n++ {
		pkt := sub.readBytes(len(head) + 3)
		if !slices.Equal(pkt[:len(head)], head) {
			t.Fatalf("delivery %d: % x", n, pkt)
		}
		p, seq := int(pkt[len(head)]), int(pkt[len(head)+1])<<8|int(pkt[len(head)+2])
		if p >= pubs || seq != next[p] {
			t.Fatalf("delivery %d: publisher %d message %d, want message %d", n, p, seq, next[p])
		}
		next[p]++
	}
	wg.Wait()
}
