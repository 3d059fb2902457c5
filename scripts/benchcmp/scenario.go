package main

import (
	"fmt"
	"strings"
	"time"
)

// scenarioKind selects how a scenario drives the server.
type scenarioKind int

const (
	kindPublish     scenarioKind = iota // nats bench pub alone
	kindFanout                          // nats bench sub, then nats bench pub
	kindRequest                         // nats bench service serve, then request
	kindJSAsync                         // nats bench js pub async into an empty stream
	kindJSSync                          // nats bench js pub sync into an empty stream
	kindJSStored                        // async publish into a fresh server, steady RSS, then pull consume
	kindJSReopen                        // async publish into a fresh server, restart it, time the open, steady RSS
	kindLeafForward                     // telemetry on a linked gateway until the hub stream holds it all
	kindLeafBacklog                     // telemetry on a cut-off gateway, then the drain once linked
	kindLeafShaped                      // kindLeafForward through a link shaped to a round trip and bandwidth
	kindMQTT                            // an MQTT publisher, a NATS subscriber; see mqtt.go
	kindMQTTListen                      // MQTT publishers, an MQTT subscriber on one broker; see mqttlisten.go
	kindMQTTIdle                        // idle MQTT connections' rate and memory; see mqttlisten.go
	kindModbus                          // a Modbus RTU slave on a pty polled by leafbox; see modbus.go
	kindDifference                      // nothing measured: each row is one row minus another, round by round (see fillDifferences)
)

// Storage types of a JetStream stream, as nats bench js --storage takes them.
const (
	storageFile   = "file"
	storageMemory = "memory"
)

// Table positions of the rows (metric.Order); rows with equal Order keep
// the order in which they are made.
const (
	orderCore = iota * 10
	orderJSAsync
	orderJSSync
	orderJSConsume
	orderLeaf
	orderMQTT
	orderMQTTListen
	orderModbus
	orderMemory
)

// scenario is one workload that yields one or more table rows.
type scenario struct {
	slug    string // slug names the scenario in subjects, stream and file names.
	kind    scenarioKind
	size    int // size is the payload in bytes.
	subs    int // subs is the number of subscribing clients (kindFanout).
	msgs    int
	consume int      // consume is how many stored messages the pull consumer reads (kindJSStored); 0 skips it.
	grp     string   // grp is the -only group when it is not the kind's.
	storage string   // storage is storageFile or storageMemory (JetStream kinds).
	sync    syncMode // sync is the JetStream sync mode of both servers.
	fresh   bool     // fresh runs each side on a server started for the run alone.
	cipher  string   // cipher encrypts the store of both (fresh) servers: jetstream cipher and benchKey.

	compression string    // compression is the gateway's leafnode compression (leaf kinds).
	link        linkShape // link shapes the proxied link (kindLeafShaped).
	qos         int       // qos is the MQTT QoS of the publisher and the bridge's route (kindMQTT).
	rate        int64     // rate paces the MQTT publisher in messages a second; 0 sends as fast as it can (kindMQTT).
	subjectOnly bool      // subjectOnly runs on leafbox alone: nats-server has no counterpart (its column reads n/a).
	mqttPubs    int       // mqttPubs is the number of MQTT publishers (kindMQTTListen).
	mqttRef     string    // mqttRef is the reference broker, refMosquitto or refNATS (mqttlisten kinds).
	mqttDirect  bool      // mqttDirect subscribes an MQTT client to the broker instead (kindMQTT): Mosquitto alone on the leafbox side.
	metrics     []metric  // metrics are the rows the scenario fills, in the order measure returns them.
	// minus names, for each of metrics (kindDifference), the row it is
	// taken from and the row subtracted from it: metrics[k] is
	// minus[k][0] − minus[k][1] in each round.
	minus [][2]string
}

// Scenario groups, as -only names them.
const (
	groupCore  = "core"  // core NATS rows
	groupJS    = "js"    // JetStream rows
	groupStore = "store" // file store: RSS with many stored messages, pull consume
	groupLeaf  = "leaf"  // store-and-forward toward a hub
	groupMQTT  = "mqtt"  // MQTT → subject
	// groupMQTTListen is leafbox's MQTT listener against Mosquitto and nats-server's.
	groupMQTTListen = "mqttlisten"
	groupModbus     = "modbus" // Modbus poll cycle
)

// groups lists every scenario group in table order.
var groups = []string{groupCore, groupJS, groupStore, groupLeaf, groupMQTT, groupMQTTListen, groupModbus}

// group returns the group -only selects sc by.
func (sc scenario) group() string {
	if sc.grp != "" {
		return sc.grp
	}
	switch sc.kind {
	case kindPublish, kindFanout, kindRequest:
		return groupCore
	case kindLeafForward, kindLeafBacklog, kindLeafShaped:
		return groupLeaf
	case kindMQTT:
		return groupMQTT
	case kindMQTTListen, kindMQTTIdle:
		return groupMQTTListen
	case kindModbus:
		return groupModbus
	}
	return groupJS
}

// streamName returns the JetStream stream the scenario publishes into.
func (sc scenario) streamName() string { return "BENCH_" + strings.ToUpper(sc.slug) }

// scenarios returns the benchmark scenarios; their metrics' Order puts the
// rows in table order.
func scenarios(w workload) []scenario {
	rate := func(name string, order int) metric {
		return metric{Name: name, Unit: unitRate, Better: higherIsBetter, Order: order}
	}
	rss := func(name string, order int) metric {
		return metric{Name: name, Unit: unitMiB, Better: lowerIsBetter, Order: order}
	}
	js := func(mode, storage string) string {
		return fmt.Sprintf("JetStream %s publish %d B, %s", mode, w.JSSize, storage)
	}
	stored := fmt.Sprintf("RSS with %s stored %d B msgs", groupThousands(int64(w.JSStored)), w.JSSize)
	list := []scenario{
		{slug: "pub16", kind: kindPublish, size: 16, msgs: w.PubMsgs, metrics: []metric{rate("publish-only 16 B", orderCore)}},
		{slug: "pub1k", kind: kindPublish, size: 1024, msgs: w.PubMsgs, metrics: []metric{rate("publish-only 1 KiB", orderCore)}},
		{slug: "fan1", kind: kindFanout, size: 16, subs: 1, msgs: w.SubMsgs, metrics: []metric{rate("1 publisher → 1 subscriber 16 B", orderCore)}},
		{slug: "fan4", kind: kindFanout, size: 16, subs: 4, msgs: w.SubMsgs, metrics: []metric{rate("1 publisher → 4 subscribers 16 B", orderCore)}},
		{slug: "req", kind: kindRequest, size: w.ReqSize, subs: 1, msgs: w.Requests, metrics: []metric{
			{Name: "request-reply", Unit: unitRequests, Better: higherIsBetter, Order: orderCore},
			{Name: "request-reply p50 latency", Unit: unitMicros, Better: lowerIsBetter, Order: orderCore},
			{Name: "request-reply p99 latency", Unit: unitMicros, Better: lowerIsBetter, Order: orderCore},
		}},

		{slug: "jsmem", kind: kindJSStored, size: w.JSSize, msgs: w.JSStored, storage: storageMemory, fresh: true, metrics: []metric{
			rate(js("async", "memory"), orderJSAsync),
			rss(stored+", memory", orderMemory+2),
		}},
		{slug: "jsfile", kind: kindJSStored, size: w.JSSize, msgs: w.JSStored, consume: w.JSConsume, storage: storageFile, fresh: true, metrics: []metric{
			rate(js("async", "file, default sync"), orderJSAsync),
			rss(stored+", file", orderMemory+1),
			rate(fmt.Sprintf("JetStream pull consume %d B, file, default sync", w.JSSize), orderJSConsume),
		}},
		{slug: "storefile", grp: groupStore, kind: kindJSStored, size: w.StoreSize, msgs: w.StoreMsgs, consume: w.StoreConsume, storage: storageFile, fresh: true, metrics: []metric{
			rate(fmt.Sprintf("file store: async publish %d B, default sync", w.StoreSize), orderJSAsync+1),
			rss(fmt.Sprintf("file store: RSS with %s stored %d B msgs", groupThousands(int64(w.StoreMsgs)), w.StoreSize), orderMemory+1),
			rate(fmt.Sprintf("file store: pull consume %d B, durable, explicit acks", w.StoreSize), orderJSConsume),
		}},
		{slug: "storecrypt", grp: groupStore, kind: kindJSStored, size: w.StoreSize, msgs: w.StoreMsgs, consume: w.StoreConsume, storage: storageFile, fresh: true, cipher: "chachapoly", metrics: []metric{
			rate(fmt.Sprintf("file store: async publish %d B, default sync, encrypted (chachapoly)", w.StoreSize), orderJSAsync+1),
			rss(fmt.Sprintf("file store: RSS with %s stored %d B msgs, encrypted (chachapoly)", groupThousands(int64(w.StoreMsgs)), w.StoreSize), orderMemory+1),
			rate(fmt.Sprintf("file store: pull consume %d B, durable, explicit acks, encrypted (chachapoly)", w.StoreSize), orderJSConsume),
		}},
		{slug: "storereopen", grp: groupStore, kind: kindJSReopen, size: w.StoreSize, msgs: w.StoreReopen, storage: storageFile, fresh: true, metrics: []metric{
			{Name: fmt.Sprintf("file store: start-up with %s stored %d B msgs", groupThousands(int64(w.StoreReopen)), w.StoreSize), Unit: unitMillis, Better: lowerIsBetter, Order: orderMemory + 1},
			rss(fmt.Sprintf("file store: RSS after opening %s stored %d B msgs", groupThousands(int64(w.StoreReopen)), w.StoreSize), orderMemory+1),
		}},
		{slug: "jsasyncalways", kind: kindJSAsync, size: w.JSSize, msgs: w.JSAsyncAlways, storage: storageFile, sync: syncAlways, metrics: []metric{
			rate(js("async", "file, sync always on both"), orderJSAsync),
		}},
		{slug: "jsasync2m", kind: kindJSAsync, size: w.JSSize, msgs: w.JSAsync, storage: storageFile, sync: syncInterval, metrics: []metric{
			rate(js("async", "file, sync every 2 m on both"), orderJSAsync),
		}},
		{slug: "jssyncmem", kind: kindJSSync, size: w.JSSize, msgs: w.JSSyncMemory, storage: storageMemory, metrics: []metric{
			rate(js("sync", "memory"), orderJSSync),
		}},
		{slug: "jssyncfile", kind: kindJSSync, size: w.JSSize, msgs: w.JSSync, storage: storageFile, metrics: []metric{
			rate(js("sync", "file, default sync"), orderJSSync),
		}},
		{slug: "jssyncalways", kind: kindJSSync, size: w.JSSize, msgs: w.JSSync, storage: storageFile, sync: syncAlways, metrics: []metric{
			rate(js("sync", "file, sync always on both"), orderJSSync),
		}},
		{slug: "jssync2m", kind: kindJSSync, size: w.JSSize, msgs: w.JSSync, storage: storageFile, sync: syncInterval, metrics: []metric{
			rate(js("sync", "file, sync every 2 m on both"), orderJSSync),
		}},

		leafForward(w, compressOff),
		leafForward(w, compressFast),
		{slug: "leafbacklog", kind: kindLeafBacklog, size: w.LeafSize, msgs: w.LeafMsgs, compression: compressAuto, metrics: []metric{
			rate(fmt.Sprintf("uplink backlog drain %d B, from link up", w.LeafSize), orderLeaf+2),
			{Name: "uplink backlog, link up → first message in hub stream", Unit: unitMillis, Better: lowerIsBetter, Order: orderLeaf + 2},
			rss(fmt.Sprintf("gateway RSS holding a backlog of %s", groupThousands(int64(w.LeafMsgs))), orderLeaf+2),
		}},

		mqttScenario(w.MQTTMsgs, 0, 0),
		mqttScenario(w.MQTTMsgsQoS1, 1, 0),
		mqttScenario(w.MQTTPaced, 0, mqttPacedRate),
		mqttScenario(w.MQTTPaced, 1, mqttPacedRate),
		mqttCeilingScenario(w.MQTTMsgs, 0),
		mqttCeilingScenario(w.MQTTMsgsQoS1, 1),
		mqttPacedCeilingScenario(w.MQTTPaced, 0),
		mqttPacedCeilingScenario(w.MQTTPaced, 1),
		mqttAddedScenario(0),
		mqttAddedScenario(1),
		mqttListenScenario(w.MQTTMsgs, 0, 1, refMosquitto),
		mqttListenScenario(w.MQTTMsgs, 0, 16, refMosquitto),
		mqttListenScenario(w.MQTTMsgsQoS1, 1, 1, refMosquitto),
		mqttListenScenario(w.MQTTMsgsQoS1, 1, 16, refMosquitto),
		mqttIdleScenario(w.MQTTIdle, refMosquitto),
		mqttListenScenario(w.MQTTMsgs, 0, 1, refNATS),
		mqttListenScenario(w.MQTTMsgs, 0, 16, refNATS),
		mqttListenScenario(w.MQTTMsgsQoS1, 1, 1, refNATS),
		mqttListenScenario(w.MQTTMsgsQoS1, 1, 16, refNATS),
		mqttIdleScenario(w.MQTTIdle, refNATS),
		modbusScenario(),
	}
	for _, compression := range []string{compressOff, compressAuto} {
		for _, mbit := range []float64{10, 1} {
			for _, rtt := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 600 * time.Millisecond} {
				list = append(list, shapedScenario(w, rtt, mbit, compression))
			}
		}
	}
	return list
}

// leafForward returns the forward scenario with the gateway's link
// compression set to mode.
func leafForward(w workload, mode string) scenario {
	return scenario{slug: "leaffwd-" + strings.ReplaceAll(mode, "_", ""), kind: kindLeafForward, size: w.LeafSize, msgs: w.LeafMsgs,
		compression: mode, metrics: []metric{
			{Name: fmt.Sprintf("uplink forward %d B, compression %s", w.LeafSize, mode), Unit: unitRate, Better: higherIsBetter, Order: orderLeaf},
			{Name: fmt.Sprintf("uplink wire bytes per message, compression %s", mode), Unit: unitBytes, Better: lowerIsBetter, Order: orderLeaf + 1},
			{Name: fmt.Sprintf("uplink forward, gateway CPU per message, compression %s", mode), Unit: unitMicros, Better: lowerIsBetter, Order: orderLeaf + 1},
			{Name: fmt.Sprintf("uplink forward, hub CPU per message, compression %s", mode), Unit: unitMicros, Better: lowerIsBetter, Order: orderLeaf + 1},
		}}
}

// mqttScenario returns the MQTT → subject scenario of msgs messages at
// the given QoS, sent as fast as the publisher goes when rate is 0 (rows:
// throughput, latency p50, p99) or rate a second (rows: latency p50, p99).
func mqttScenario(msgs, qos int, rate int64) scenario {
	name := fmt.Sprintf("MQTT → subject %d B, QoS %d", mqttSize, qos)
	slug := fmt.Sprintf("mqtt-qos%d", qos)
	var metrics []metric
	if rate == 0 {
		metrics = append(metrics, metric{Name: name, Unit: unitRate, Better: higherIsBetter, Order: orderMQTT})
	} else {
		name += fmt.Sprintf(", paced %s msgs/s", groupThousands(rate))
		slug += "-paced"
	}
	metrics = append(metrics,
		metric{Name: name + ", latency p50", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT},
		metric{Name: name + ", latency p99", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT})
	return scenario{slug: slug, kind: kindMQTT, size: mqttSize, msgs: msgs, qos: qos, rate: rate, metrics: metrics}
}

// mqttCeilingScenario returns the scenario measuring the bridge path's
// ceiling: the same publisher, a plain MQTT subscriber on bench/# of
// Mosquitto alone (the leafbox column) or of nats-server's MQTT listener.
func mqttCeilingScenario(msgs, qos int) scenario {
	name := fmt.Sprintf("MQTT → MQTT subscriber %d B, QoS %d (leafbox column: Mosquitto alone, the bridge path's ceiling)", mqttSize, qos)
	return scenario{slug: fmt.Sprintf("mqtt-direct-qos%d", qos), kind: kindMQTT, size: mqttSize, msgs: msgs, qos: qos, mqttDirect: true,
		metrics: []metric{
			{Name: name, Unit: unitRate, Better: higherIsBetter, Order: orderMQTT + 1},
			{Name: name + ", latency p50", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT + 1},
			{Name: name + ", latency p99", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT + 1},
		}}
}

// mqttPacedCeilingScenario returns the paced counterpart of
// mqttCeilingScenario: the paced mqtt rows' load, read by a plain MQTT
// subscriber of Mosquitto alone (the leafbox column) or of nats-server's
// MQTT listener: the latency any path through that broker starts from.
func mqttPacedCeilingScenario(msgs, qos int) scenario {
	name := mqttPacedCeilingName(qos)
	return scenario{slug: fmt.Sprintf("mqtt-direct-qos%d-paced", qos), kind: kindMQTT, size: mqttSize, msgs: msgs, qos: qos, rate: mqttPacedRate, mqttDirect: true,
		metrics: []metric{
			{Name: name + ", latency p50", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT + 1},
			{Name: name + ", latency p99", Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT + 1},
		}}
}

// mqttPacedCeilingName is the name of the paced ceiling rows of qos,
// without the percentile.
func mqttPacedCeilingName(qos int) string {
	return fmt.Sprintf("MQTT → MQTT subscriber %d B, QoS %d, paced %s msgs/s (leafbox column: Mosquitto alone, the bridge path's ceiling)",
		mqttSize, qos, groupThousands(mqttPacedRate))
}

// mqttAddedScenario returns the rows of the latency the bridge adds at
// qos: in each round, the paced bridge path's p50 and p99 (publisher →
// Mosquitto → bridge → NATS subscriber) minus the paced Mosquitto-alone
// p50 and p99 (publisher → Mosquitto → MQTT subscriber). It measures
// nothing itself; nats-server has no bridge, so its column reads n/a.
func mqttAddedScenario(qos int) scenario {
	bridged := mqttScenario(0, qos, mqttPacedRate).metrics
	ceiling := mqttPacedCeilingName(qos)
	name := fmt.Sprintf("MQTT → subject %d B, QoS %d, paced %s msgs/s, added by the bridge (bridge path − Mosquitto alone, same round)",
		mqttSize, qos, groupThousands(mqttPacedRate))
	sc := scenario{slug: fmt.Sprintf("mqtt-added-qos%d", qos), kind: kindDifference, grp: groupMQTT, qos: qos, rate: mqttPacedRate, subjectOnly: true}
	for k, p := range []string{"p50", "p99"} {
		sc.metrics = append(sc.metrics, metric{Name: name + ", latency " + p, Unit: unitMicros, Better: lowerIsBetter, Order: orderMQTT + 2})
		sc.minus = append(sc.minus, [2]string{bridged[k].Name, ceiling + ", latency " + p})
	}
	return sc
}

// fillDifferences fills the rows of the kindDifference scenarios in scs
// from the other rows of results (in runRounds' layout: scs' metrics in
// order): round by round and side by side, the first named row's value
// minus the second's. A side where either row failed, or where they
// passed different rounds, fails with the reason; a side where either
// was not selected, or the reference side of a subjectOnly scenario,
// stays empty (n/a).
func fillDifferences(results []metricResult, scs []scenario) {
	byName := make(map[string]*metricResult, len(results))
	for i := range results {
		byName[results[i].Name] = &results[i]
	}
	i := 0
	for _, sc := range scs {
		rows := results[i : i+len(sc.metrics)]
		i += len(sc.metrics)
		if sc.kind != kindDifference {
			continue
		}
		for k := range rows {
			a, b := byName[sc.minus[k][0]], byName[sc.minus[k][1]]
			for side := range 2 {
				rows[k].Values[side] = nil
				switch {
				case a == nil || b == nil || (sc.subjectOnly && side == sideReference):
					continue
				case a.Failed[side] != "":
					rows[k].Failed[side] = "from a failed row: " + a.Failed[side]
				case b.Failed[side] != "":
					rows[k].Failed[side] = "from a failed row: " + b.Failed[side]
				case len(a.Values[side]) != len(b.Values[side]):
					rows[k].Failed[side] = fmt.Sprintf("%d rounds of %q against %d of %q", len(a.Values[side]), a.Name, len(b.Values[side]), b.Name)
				default:
					for r, v := range a.Values[side] {
						rows[k].Values[side] = append(rows[k].Values[side], v-b.Values[side][r])
					}
				}
			}
		}
	}
}

// selectGroups returns the scenarios of the given groups, in order.
func selectGroups(scs []scenario, only map[string]bool) []scenario {
	var out []scenario
	for _, sc := range scs {
		if only[sc.group()] {
			out = append(out, sc)
		}
	}
	return out
}
