package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScenariosTableOrder(t *testing.T) {
	var rows []metricResult
	for _, sc := range scenarios(defaultWorkload(false)) {
		for _, mt := range sc.metrics {
			rows = append(rows, metricResult{metric: mt})
		}
	}
	rows = append(rows, metricResult{metric: metric{Name: "idle RSS", Order: orderMemory}},
		metricResult{metric: metric{Name: "peak RSS", Order: orderMemory}})
	var names []string
	for _, r := range tableOrder(rows) {
		names = append(names, r.Name)
	}
	want := []string{
		"publish-only 16 B",
		"publish-only 1 KiB",
		"1 publisher → 1 subscriber 16 B",
		"1 publisher → 4 subscribers 16 B",
		"request-reply",
		"request-reply p50 latency",
		"request-reply p99 latency",
		"JetStream async publish 16 B, memory",
		"JetStream async publish 16 B, file, default sync",
		"JetStream async publish 16 B, file, sync always on both",
		"JetStream async publish 16 B, file, sync every 2 m on both",
		"file store: async publish 128 B, default sync",
		"file store: async publish 128 B, default sync, encrypted (chachapoly)",
		"JetStream sync publish 16 B, memory",
		"JetStream sync publish 16 B, file, default sync",
		"JetStream sync publish 16 B, file, sync always on both",
		"JetStream sync publish 16 B, file, sync every 2 m on both",
		"JetStream pull consume 16 B, file, default sync",
		"file store: pull consume 128 B, durable, explicit acks",
		"file store: pull consume 128 B, durable, explicit acks, encrypted (chachapoly)",
		"uplink forward 128 B, compression off",
		"uplink forward 128 B, compression s2_fast",
		"uplink wire bytes per message, compression off",
		"uplink forward, gateway CPU per message, compression off",
		"uplink forward, hub CPU per message, compression off",
		"uplink wire bytes per message, compression s2_fast",
		"uplink forward, gateway CPU per message, compression s2_fast",
		"uplink forward, hub CPU per message, compression s2_fast",
		"uplink backlog drain 128 B, from link up",
		"uplink backlog, link up → first message in hub stream",
		"gateway RSS holding a backlog of 50,000",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 8,333 × 128 B",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 8,333 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 8,333 × 128 B, wire bytes per message",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 8,333 × 128 B",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 8,333 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 8,333 × 128 B, wire bytes per message",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 8,333 × 128 B",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 8,333 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 8,333 × 128 B, wire bytes per message",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 1,000 × 128 B",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 1,000 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 1,000 × 128 B, wire bytes per message",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 1,000 × 128 B",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 1,000 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 1,000 × 128 B, wire bytes per message",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 1,000 × 128 B",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 1,000 × 128 B, link utilisation toward the hub",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 1,000 × 128 B, wire bytes per message",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +50 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, wire bytes per message",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +200 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, wire bytes per message",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +600 ms, 10 Mbit/s, 41,665 × 128 B, compression s2_auto, wire bytes per message",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +50 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, wire bytes per message",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +200 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, wire bytes per message",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, link utilisation toward the hub",
		"uplink shaped RTT +600 ms, 1 Mbit/s, 5,000 × 128 B, compression s2_auto, wire bytes per message",
		"MQTT → subject 128 B, QoS 0",
		"MQTT → subject 128 B, QoS 0, latency p50",
		"MQTT → subject 128 B, QoS 0, latency p99",
		"MQTT → subject 128 B, QoS 1",
		"MQTT → subject 128 B, QoS 1, latency p50",
		"MQTT → subject 128 B, QoS 1, latency p99",
		"MQTT → subject 128 B, QoS 0, paced 1,000 msgs/s, latency p50",
		"MQTT → subject 128 B, QoS 0, paced 1,000 msgs/s, latency p99",
		"MQTT → subject 128 B, QoS 1, paced 1,000 msgs/s, latency p50",
		"MQTT → subject 128 B, QoS 1, paced 1,000 msgs/s, latency p99",
		"MQTT → MQTT subscriber 128 B, QoS 0 (leafbox column: Mosquitto alone, the bridge path's ceiling)",
		"MQTT → MQTT subscriber 128 B, QoS 0 (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p50",
		"MQTT → MQTT subscriber 128 B, QoS 0 (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p99",
		"MQTT → MQTT subscriber 128 B, QoS 1 (leafbox column: Mosquitto alone, the bridge path's ceiling)",
		"MQTT → MQTT subscriber 128 B, QoS 1 (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p50",
		"MQTT → MQTT subscriber 128 B, QoS 1 (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p99",
		"MQTT → MQTT subscriber 128 B, QoS 0, paced 1,000 msgs/s (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p50",
		"MQTT → MQTT subscriber 128 B, QoS 0, paced 1,000 msgs/s (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p99",
		"MQTT → MQTT subscriber 128 B, QoS 1, paced 1,000 msgs/s (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p50",
		"MQTT → MQTT subscriber 128 B, QoS 1, paced 1,000 msgs/s (leafbox column: Mosquitto alone, the bridge path's ceiling), latency p99",
		"MQTT → subject 128 B, QoS 0, paced 1,000 msgs/s, added by the bridge (bridge path − Mosquitto alone, same round), latency p50",
		"MQTT → subject 128 B, QoS 0, paced 1,000 msgs/s, added by the bridge (bridge path − Mosquitto alone, same round), latency p99",
		"MQTT → subject 128 B, QoS 1, paced 1,000 msgs/s, added by the bridge (bridge path − Mosquitto alone, same round), latency p50",
		"MQTT → subject 128 B, QoS 1, paced 1,000 msgs/s, added by the bridge (bridge path − Mosquitto alone, same round), latency p99",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber, latency p50",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber, latency p99",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber, latency p50",
		"vs Mosquitto: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber, latency p99",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber, latency p50",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber, latency p99",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber, latency p50",
		"vs Mosquitto: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber, latency p99",
		"vs nats-server: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber",
		"vs nats-server: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber, latency p50",
		"vs nats-server: MQTT listener 128 B, QoS 0, 1 publisher → 1 subscriber, latency p99",
		"vs nats-server: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber",
		"vs nats-server: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber, latency p50",
		"vs nats-server: MQTT listener 128 B, QoS 0, 16 publishers → 1 subscriber, latency p99",
		"vs nats-server: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber",
		"vs nats-server: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber, latency p50",
		"vs nats-server: MQTT listener 128 B, QoS 1, 1 publisher → 1 subscriber, latency p99",
		"vs nats-server: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber",
		"vs nats-server: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber, latency p50",
		"vs nats-server: MQTT listener 128 B, QoS 1, 16 publishers → 1 subscriber, latency p99",
		"vs Mosquitto: MQTT listener, 10,000 idle connections, connection rate",
		"vs Mosquitto: MQTT listener, 10,000 idle connections, RSS per connection",
		"vs nats-server: MQTT listener, 10,000 idle connections, connection rate",
		"vs nats-server: MQTT listener, 10,000 idle connections, RSS per connection",
		"Modbus RTU poll of 100 registers at 100ms over a pty, cycle time p50",
		"Modbus RTU poll of 100 registers at 100ms over a pty, cycle time p99",
		"Modbus RTU poll of 100 registers at 100ms over a pty, jitter p50",
		"Modbus RTU poll of 100 registers at 100ms over a pty, jitter p99",
		"Modbus RTU poll of 100 registers at 100ms over a pty, grid slots missed",
		"idle RSS",
		"peak RSS",
		"RSS with 1,000,000 stored 16 B msgs, file",
		"file store: RSS with 1,000,000 stored 128 B msgs",
		"file store: RSS with 1,000,000 stored 128 B msgs, encrypted (chachapoly)",
		"file store: start-up with 10,000,000 stored 128 B msgs",
		"file store: RSS after opening 10,000,000 stored 128 B msgs",
		"RSS with 1,000,000 stored 16 B msgs, memory",
	}
	if !slices.Equal(names, want) {
		t.Errorf("table order:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

func TestScenariosAreConsistent(t *testing.T) {
	slugs := map[string]bool{}
	for _, sc := range scenarios(defaultWorkload(true)) {
		if slugs[sc.slug] {
			t.Errorf("slug %q used twice", sc.slug)
		}
		slugs[sc.slug] = true
		if sc.kind == kindDifference {
			continue // checked by TestDifferenceRowsNameTheirSources
		}
		if sc.msgs <= 0 || len(sc.metrics) == 0 {
			t.Errorf("%s: %d messages, %d metrics", sc.slug, sc.msgs, len(sc.metrics))
		}
		switch sc.kind {
		case kindJSAsync, kindJSSync, kindJSStored:
			if sc.storage != storageFile && sc.storage != storageMemory {
				t.Errorf("%s: storage %q", sc.slug, sc.storage)
			}
			if sc.storage == storageMemory && sc.sync != syncDefault {
				t.Errorf("%s: a memory row with a sync mode starts servers for nothing", sc.slug)
			}
			// File rows, whose figures depend on the sync policy, name it.
			want := map[syncMode]string{syncDefault: "default sync", syncAlways: "sync always on both", syncInterval: "sync every 2 m on both"}[sc.sync]
			if sc.storage == storageFile && !strings.Contains(sc.metrics[0].Name, want) {
				t.Errorf("%s: row %q does not say %q", sc.slug, sc.metrics[0].Name, want)
			}
		case kindJSReopen:
			if !sc.fresh || sc.storage != storageFile || sc.sync != syncDefault {
				t.Errorf("%s: the reopen row restarts a fresh default-sync server on a file stream: %+v", sc.slug, sc)
			}
		case kindLeafForward, kindLeafBacklog:
			if sc.fresh || sc.sync != syncDefault || sc.storage != "" || sc.compression == "" || sc.size < telemetryMinSize {
				t.Errorf("%s: leaf rows set only a compression and a telemetry size: %+v", sc.slug, sc)
			}
		case kindMQTT:
			if sc.fresh || sc.sync != syncDefault || sc.storage != "" || sc.size != mqttSize || (sc.qos != 0 && sc.qos != 1) ||
				!strings.Contains(sc.metrics[0].Name, "QoS "+strconv.Itoa(sc.qos)) {
				t.Errorf("%s: mqtt rows set only a QoS, named in the row: %+v", sc.slug, sc)
			}
			lat := sc.metrics
			if sc.rate == 0 {
				if lat[0].Unit != unitRate {
					t.Errorf("%s: metrics %+v, want rate first", sc.slug, sc.metrics)
				}
				lat = lat[1:]
			} else if !strings.Contains(sc.metrics[0].Name, "paced") {
				t.Errorf("%s: a paced row %q does not say so", sc.slug, sc.metrics[0].Name)
			}
			if len(lat) != 2 || lat[0].Unit != unitMicros || lat[1].Unit != unitMicros {
				t.Errorf("%s: metrics %+v, want [rate,] p50 µs, p99 µs", sc.slug, sc.metrics)
			}
			continue // the number of metrics depends on the pacing, checked above
		default:
			if sc.fresh || sc.sync != syncDefault || sc.storage != "" {
				t.Errorf("%s: core rows run on the shared default servers", sc.slug)
			}
		}
		wantMetrics := map[scenarioKind]int{kindPublish: 1, kindFanout: 1, kindRequest: 3, kindJSAsync: 1, kindJSSync: 1,
			kindLeafForward: 4, kindLeafBacklog: 3, kindLeafShaped: 3, kindMQTTListen: 3, kindMQTTIdle: 2, kindModbus: 5, kindJSReopen: 2}
		if sc.kind == kindJSStored {
			if !sc.fresh {
				t.Errorf("%s: stored-message RSS must be read on a fresh server", sc.slug)
			}
			want := 2
			if sc.consume > 0 {
				want = 3
			}
			if len(sc.metrics) != want || sc.metrics[1].Unit != unitMiB {
				t.Errorf("%s: metrics %+v, want rate, RSS[, consume rate]", sc.slug, sc.metrics)
			}
		} else if got := len(sc.metrics); got != wantMetrics[sc.kind] {
			t.Errorf("%s: %d metrics, want %d", sc.slug, got, wantMetrics[sc.kind])
		}
	}
}

func TestStreamName(t *testing.T) {
	if got := (scenario{slug: "jsasync2m"}).streamName(); got != "BENCH_JSASYNC2M" {
		t.Errorf("streamName = %q", got)
	}
}

func TestJSPublishArgs(t *testing.T) {
	async := scenario{slug: "jsmem", kind: kindJSStored, size: 16, msgs: 1000, storage: storageMemory}
	got := jsPublishArgs(async, "bench.jsmem.r0.s1", "/w/pub.csv")
	want := []string{"bench", "js", "pub", "async", "bench.jsmem.r0.s1", "--batch", "500",
		"--create", "--purge", "--storage", "memory", "--stream", "BENCH_JSMEM",
		"--clients", "1", "--msgs", "1000", "--size", "16", "--csv", "/w/pub.csv"}
	if !slices.Equal(got, want) {
		t.Errorf("async:\n got %q\nwant %q", got, want)
	}
	sync := scenario{slug: "jssyncfile", kind: kindJSSync, size: 16, msgs: 300, storage: storageFile}
	got = jsPublishArgs(sync, "s", "o.csv")
	if !slices.Equal(got[:5], []string{"bench", "js", "pub", "sync", "s"}) || slices.Contains(got, "--batch") ||
		!slices.Contains(got, "file") || !slices.Contains(got, "--purge") {
		t.Errorf("sync: %q", got)
	}
}

func TestDefaultWorkloadQuick(t *testing.T) {
	full, quick := defaultWorkload(false), defaultWorkload(true)
	if full.JSStored != 1_000_000 {
		t.Errorf("JSStored = %d, want the 1 M messages the issue asks for", full.JSStored)
	}
	if quick.JSStored*10 != full.JSStored || quick.JSSync*10 != full.JSSync || quick.PubMsgs*10 != full.PubMsgs ||
		quick.LeafMsgs*10 != full.LeafMsgs || quick.MQTTMsgs*10 != full.MQTTMsgs || quick.MQTTMsgsQoS1*10 != full.MQTTMsgsQoS1 ||
		quick.MQTTPaced*10 != full.MQTTPaced {
		t.Errorf("quick %+v is not a tenth of %+v", quick, full)
	}
	if quick.JSSize != full.JSSize || quick.ReqSize != full.ReqSize || quick.LeafSize != full.LeafSize {
		t.Error("quick changes message sizes")
	}
	if full.JSConsume > full.JSStored {
		t.Errorf("consume %d of %d stored", full.JSConsume, full.JSStored)
	}
}

func TestNatsArgs(t *testing.T) {
	got := natsArgs("nats://127.0.0.1:1", []string{"bench", "js", "consume"})
	if !slices.Equal(got, []string{"bench", "js", "consume", "--server", "nats://127.0.0.1:1", "--no-context", "--no-progress"}) {
		t.Errorf("bench: %q", got)
	}
	got = natsArgs("nats://127.0.0.1:1", []string{"stream", "rm", "X", "--force"})
	if slices.Contains(got, "--no-progress") || !slices.Contains(got, "--no-context") {
		t.Errorf("stream rm: %q (only bench takes --no-progress)", got)
	}
}

func TestScaledTimeout(t *testing.T) {
	for _, tc := range []struct {
		msgs int
		want time.Duration
	}{
		{0, time.Minute}, {3_000, time.Minute}, {250_000, time.Minute},
		{250_001, 2 * time.Minute}, {1_000_000, 4 * time.Minute}, {1_000_001, 5 * time.Minute},
	} {
		if got := scaledTimeout(time.Minute, tc.msgs); got != tc.want {
			t.Errorf("scaledTimeout(1m, %d) = %v, want %v", tc.msgs, got, tc.want)
		}
	}
}

func TestDifferenceRowsNameTheirSources(t *testing.T) {
	scs := scenarios(defaultWorkload(false))
	rows := map[string]scenario{}
	for _, sc := range scs {
		for _, mt := range sc.metrics {
			rows[mt.Name] = sc
		}
	}
	n := 0
	for _, sc := range scs {
		if sc.kind != kindDifference {
			continue
		}
		n++
		if len(sc.minus) != len(sc.metrics) || len(sc.metrics) == 0 {
			t.Fatalf("%s: %d metrics, %d differences", sc.slug, len(sc.metrics), len(sc.minus))
		}
		if sc.group() != groupMQTT || !sc.subjectOnly {
			t.Errorf("%s: group %q, subjectOnly %v; want mqtt, leafbox only", sc.slug, sc.group(), sc.subjectOnly)
		}
		for k, mt := range sc.metrics {
			a, okA := rows[sc.minus[k][0]]
			b, okB := rows[sc.minus[k][1]]
			if !okA || !okB || a.kind != kindMQTT || b.kind != kindMQTT {
				t.Errorf("%s: %q is %q − %q, not two measured mqtt rows", sc.slug, mt.Name, sc.minus[k][0], sc.minus[k][1])
				continue
			}
			// Like with like: the bridge path against Mosquitto alone,
			// same QoS, same pacing, same messages, same percentile.
			if a.mqttDirect || !b.mqttDirect || a.qos != sc.qos || b.qos != sc.qos || a.rate != mqttPacedRate || b.rate != mqttPacedRate || a.msgs != b.msgs {
				t.Errorf("%s: %q − %q compares %+v with %+v", sc.slug, sc.minus[k][0], sc.minus[k][1], a, b)
			}
			p := mt.Name[len(mt.Name)-3:]
			if !strings.HasSuffix(sc.minus[k][0], p) || !strings.HasSuffix(sc.minus[k][1], p) || mt.Unit != unitMicros {
				t.Errorf("%s: %q from %q and %q", sc.slug, mt.Name, sc.minus[k][0], sc.minus[k][1])
			}
			if !strings.Contains(mt.Name, "added by the bridge") || !strings.Contains(mt.Name, "QoS "+strconv.Itoa(sc.qos)) {
				t.Errorf("%s: row %q does not say what it is", sc.slug, mt.Name)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d difference scenarios, want QoS 0 and 1", n)
	}
}

func TestFillDifferences(t *testing.T) {
	mk := func(name string, subject, reference []float64, failed [2]string) metricResult {
		return metricResult{metric: metric{Name: name, Unit: unitMicros}, Values: [2][]float64{subject, reference}, Failed: failed}
	}
	diff := func(slug string, subjectOnly bool, from, minus string) scenario {
		return scenario{slug: slug, kind: kindDifference, subjectOnly: subjectOnly,
			metrics: []metric{{Name: slug, Unit: unitMicros}}, minus: [][2]string{{from, minus}}}
	}
	scs := []scenario{
		{slug: "a", kind: kindMQTT, metrics: []metric{{Name: "a"}, {Name: "a2"}}},
		{slug: "b", kind: kindMQTT, metrics: []metric{{Name: "b"}}},
		diff("a-b", true, "a", "b"),
		diff("a-b both", false, "a", "b"),
		diff("a2-b", false, "a2", "b"),
		diff("a-missing", false, "a", "missing"),
	}
	results := []metricResult{
		mk("a", []float64{500, 700, 600}, []float64{300}, [2]string{}),
		mk("a2", []float64{1, 2}, nil, [2]string{"", "boom"}),
		mk("b", []float64{200, 750, 100}, []float64{100}, [2]string{}),
		{metric: scs[2].metrics[0]}, {metric: scs[3].metrics[0]}, {metric: scs[4].metrics[0]}, {metric: scs[5].metrics[0]},
	}
	fillDifferences(results, scs)
	got := results[3]
	if !slices.Equal(got.Values[sideSubject], []float64{300, -50, 500}) || got.Values[sideReference] != nil || got.Failed != [2]string{} {
		t.Errorf("a − b, leafbox only: %+v", got)
	}
	if got := results[4]; !slices.Equal(got.Values[sideReference], []float64{200}) {
		t.Errorf("a − b on both sides: %+v", got)
	}
	got = results[5]
	if got.Values[sideSubject] != nil || !strings.Contains(got.Failed[sideSubject], "2 rounds") ||
		got.Failed[sideReference] != "from a failed row: boom" {
		t.Errorf("a2 − b: %+v, want the subject side failed for unequal rounds, the reference for a2's failure", got)
	}
	if got := results[6]; got.Values[0] != nil || got.Values[1] != nil || got.Failed != [2]string{} {
		t.Errorf("a − (a row not selected): %+v, want empty", got)
	}
}
