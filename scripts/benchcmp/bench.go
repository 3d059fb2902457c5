package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// workload sets the message counts and sizes of every row.
type workload struct {
	PubMsgs  int // PubMsgs is messages per publish-only run.
	SubMsgs  int // SubMsgs is messages per publisher→subscriber run (each subscriber receives all).
	Requests int // Requests is sequential requests per request-reply run.
	ReqSize  int // ReqSize is the request payload in bytes.

	JSSize        int // JSSize is the payload of every JetStream message in bytes.
	JSStored      int // JSStored is messages published into a fresh stream before its RSS is read.
	JSConsume     int // JSConsume is how many of the stored file messages the pull consumer reads.
	JSAsync       int // JSAsync is messages per async publish run on shared servers.
	JSAsyncAlways int // JSAsyncAlways is messages per async publish run with sync always on both.
	JSSync        int // JSSync is messages per sync publish run on file storage.
	JSSyncMemory  int // JSSyncMemory is messages per sync publish run on memory storage.

	StoreSize    int // StoreSize is the payload of the file store rows in bytes.
	StoreMsgs    int // StoreMsgs is messages published into a fresh file stream before its RSS is read.
	StoreConsume int // StoreConsume is how many of them the pull consumer reads.
	StoreReopen  int // StoreReopen is messages in the file stream the restarted server opens.

	LeafMsgs int // LeafMsgs is telemetry messages per leaf run (forward and backlog).
	LeafSize int // LeafSize is the telemetry payload in bytes.

	MQTTMsgs     int // MQTTMsgs is messages per mqtt run at QoS 0, as fast as the publisher goes.
	MQTTMsgsQoS1 int // MQTTMsgsQoS1 is messages per mqtt run at QoS 1, as fast as the window lets it.
	MQTTPaced    int // MQTTPaced is messages per paced mqtt run (mqttPacedRate a second).
	MQTTIdle     int // MQTTIdle is the idle MQTT connections of the mqttlisten memory row.
}

// defaultWorkload is sized so a five-round run takes about 12 minutes on
// two cores; quick divides the counts by ten.
//
// The slow cells set the sizes: nats-server with sync_interval: always
// fsyncs every message of an async publisher (about 1,000 msgs/s on a
// virtual disk), and a sync publisher waits for one fsync per message on
// leafbox's default (about 1,200 msgs/s there).
func defaultWorkload(quick bool) workload {
	w := workload{PubMsgs: 1_000_000, SubMsgs: 1_000_000, Requests: 20_000, ReqSize: 128,
		JSSize: 16, JSStored: 1_000_000, JSConsume: 100_000, JSAsync: 100_000, JSAsyncAlways: 5_000,
		JSSync: 3_000, JSSyncMemory: 10_000, StoreSize: 128, StoreMsgs: 1_000_000, StoreConsume: 500_000, StoreReopen: 10_000_000, LeafMsgs: 50_000, LeafSize: telemetryMinSize,
		MQTTMsgs: 50_000, MQTTMsgsQoS1: 20_000, MQTTPaced: 2_000, MQTTIdle: mqttIdleConns}
	if quick {
		for _, n := range []*int{&w.PubMsgs, &w.SubMsgs, &w.Requests, &w.JSStored, &w.JSConsume,
			&w.JSAsync, &w.JSAsyncAlways, &w.JSSync, &w.JSSyncMemory, &w.StoreMsgs, &w.StoreConsume, &w.StoreReopen, &w.LeafMsgs, &w.MQTTMsgs, &w.MQTTMsgsQoS1, &w.MQTTPaced} {
			*n /= 10
		}
	}
	return w
}

// describe returns the workload lines of the report for the groups in
// only.
func (w workload) describe(only map[string]bool) []string {
	var lines []string
	if only[groupCore] {
		lines = append(lines, w.describeCore()...)
	}
	if only[groupJS] {
		lines = append(lines, w.describeJS()...)
	}
	if only[groupStore] {
		lines = append(lines, w.describeStore(), w.describeReopen())
	}
	if only[groupLeaf] {
		lines = append(lines, w.describeLeaf()...)
	}
	if only[groupMQTT] {
		lines = append(lines, w.describeMQTT()...)
	}
	if only[groupMQTTListen] {
		lines = append(lines, w.describeMQTTListen()...)
	}
	if only[groupModbus] {
		lines = append(lines, fmt.Sprintf("Modbus poll cycle (leafbox only; nats-server has no counterpart): the harness plays an RTU slave on a pty with %d holding registers whose values all change at every read; "+
			"leafbox's Modbus bridge (115200 baud) polls them every %v and publishes each on its own subject; %d polls. Jitter is each poll's start (the slave reading the request) after its own slot on the bridge's %v grid "+
			"(the nearest slot at or before it; the grid's phase is the one that makes the polls' total lateness least); grid slots missed are the slots between the first and the last poll that had no poll "+
			"(the bridge skips the slots a poll overran), as a share of all of them; "+
			"cycle time is from the request to the poll's last value at a NATS subscriber. Goal: jitter under 5 ms", modbusRegisters, modbusInterval, modbusCycles, modbusInterval))
	}
	if only[groupCore] || only[groupJS] {
		lines = append(lines, "RSS: idle is VmRSS after start-up and one client handshake; peak is VmHWM after the last round; both are the default-sync servers that also ran the core rows and the shared default-sync JetStream rows")
	}
	return lines
}

// describeStore returns the workload line of the file store rows.
func (w workload) describeStore() string {
	return fmt.Sprintf("File store: each round starts a new server of each kind with its default sync; `nats bench js pub async --batch 500 --storage file` writes %s messages of %d B into a new stream; "+
		"VmRSS, read once steady, is the \"RSS with %s stored %d B msgs\" row; then `nats bench js consume` (a durable pull consumer, explicit acks, 500 outstanding) reads the first %s of them for the pull consume row; "+
		"the \"encrypted (chachapoly)\" rows repeat this on servers whose jetstream configuration sets `cipher: chachapoly` and a key (nats-server's jetstream block, leafbox's jetstream.cipher and jetstream.key)",
		groupThousands(int64(w.StoreMsgs)), w.StoreSize, groupThousands(int64(w.StoreMsgs)), w.StoreSize, groupThousands(int64(w.StoreConsume)))
}

// describeReopen returns the workload line of the file store's reopen
// rows.
func (w workload) describeReopen() string {
	return fmt.Sprintf("File store reopen: each round starts a new server of each kind with its default sync; `nats bench js pub async --batch 500 --storage file` writes %s messages of %d B into a new stream; "+
		"the server is stopped (SIGTERM) and started again on the same store. Start-up is the time from the start to the first answer of `$JS.API.STREAM.INFO` that shows every message "+
		"(polled every %v); the RSS row is VmRSS once steady after that",
		groupThousands(int64(w.StoreReopen)), w.StoreSize, reopenPoll)
}

// describeLeaf returns the workload lines of the leaf rows.
func (w workload) describeLeaf() []string {
	return []string{
		fmt.Sprintf("Uplink: each run starts a hub (nats-server, JetStream domain %q, a file stream %s on site1.>) and a gateway joined to it through a byte-counting TCP relay in the harness; "+
			"a raw-protocol client publishes %s JSON telemetry messages of %d B on telemetry.site1.dev000–dev099 to the gateway (a PING after every %d, waiting for the PONG). "+
			"leafbox is the gateway with an uplink capturing telemetry.> (outbox on file, forwarded as site1.telemetry.> with Nats-Msg-Id, removed on the hub's PubAck); "+
			"nats-server is the gateway in its own store-and-forward pattern: a leaf with JetStream domain %q and a file stream %s on telemetry.>, which %s on the hub sources by domain with a subject transform to site1.telemetry.>",
			hubDomain, hubStream, groupThousands(int64(w.LeafMsgs)), w.LeafSize, telemetryWindow, gatewayDomain, gatewayStream, hubStream),
		fmt.Sprintf("Uplink forward: the link is up first; the rate is messages ÷ time from the first publish until the hub's /jsz shows them all in the stream (polled every 10 ms); payload MB/s is that rate × %d B. "+
			"Wire bytes are what crossed the link both ways during the run, per message. The hub's leafnode listener has `compression: accept`, so each gateway's remote `compression` decides", w.LeafSize),
		"Uplink backlog: the gateway starts while the relay refuses it; the messages are published, the gateway's VmRSS is read once steady, then the relay lets the gateway's next reconnect through. " +
			"The drain rate is messages ÷ time from that connection until the hub stream holds them all; the latency row is the part until the first one is there. " +
			"The gateway runs the default compression, s2_auto, which picks its level by RTT: none on loopback. " +
			"On nats-server, the hub's stream source sent its consumer-create request while the link was down and waits 30 s for the answer before it retries (and backs off 10 s per failure), which the latency row shows",
		describeShaped(),
	}
}

// describeMQTT returns the workload lines of the mqtt rows.
func (w workload) describeMQTT() []string {
	return []string{
		fmt.Sprintf("MQTT → subject: each run starts its own servers; one MQTT 3.1.1 client (paho.mqtt.golang) publishes messages of %d B on %s, each carrying its sequence number and send time, "+
			"%s at QoS 0 and %s at QoS 1 (at most %d awaiting PUBACK), and a raw-protocol NATS subscriber on %s receives them. "+
			"leafbox: the client publishes to a Mosquitto (%s, started by the harness on loopback) and leafbox's MQTT bridge (MQTT 5, `inbound: {from: %s, qos: same as the row}`, no store) subscribes there and publishes on the subjects, so the path includes Mosquitto, which is the bridge's design; "+
			"nats-server: the client publishes to nats-server's own MQTT listener (JetStream on, as it requires). "+
			"Throughput is messages ÷ time from the first send to the last receive; latency is receive − send per message (p50, p99). Before the measured messages, probes on %s until one arrives prove the path is in place. A lost message fails the row",
			mqttSize, mqttTopic, groupThousands(int64(w.MQTTMsgs)), groupThousands(int64(w.MQTTMsgsQoS1)), mqttWindow, mqttSubject, mqttMosquitto, mqttFilter, mqttProbe),
		fmt.Sprintf("MQTT latency: in the unpaced rows the publisher sends as fast as it can, so their latency is mostly the time a message waits in queues (at QoS 1 about %d messages ÷ the rate). "+
			"The paced rows send %s messages at %s msgs/s (one every %v), well below either side's throughput: their latency is the time the path adds to one message",
			mqttWindow, groupThousands(int64(w.MQTTPaced)), groupThousands(mqttPacedRate), time.Second/mqttPacedRate),
		"MQTT → MQTT subscriber (the ceiling rows): the same publisher and messages, received by a plain MQTT 3.1.1 subscriber of " + mqttFilter + " (raw protocol, PUBACKs batched) instead of the NATS one; " +
			"leafbox's column is Mosquitto alone, no leafbox: what the bridge path could reach at best, as the bridge is one more hop behind Mosquitto; nats-server's column is its MQTT listener delivering to an MQTT subscriber; " +
			"the paced ceiling rows do the same with the paced rows' load, so their latency is what the path through the broker alone takes",
		fmt.Sprintf("Added by the bridge (leafbox only): the paced bridge path's latency p50 (p99) minus the paced Mosquitto-alone p50 (p99) of the same round, the same %s messages at %s msgs/s in both runs: "+
			"the time leafbox's bridge and its NATS delivery add to a message over Mosquitto delivering it to a plain subscriber. "+
			"It is a difference of percentiles of two runs, not a percentile of per-message differences (no message crosses both paths), so it can be negative when the two runs' noise differs; "+
			"each cell is the median over rounds of that difference. nats-server has no bridge: its column reads n/a, and its listener's own path is the paced MQTT → subject rows' nats-server column. Goal: p99 under 1 ms at QoS 0",
			groupThousands(int64(w.MQTTPaced)), groupThousands(mqttPacedRate)),
	}
}

// describeCore returns the workload lines of the core NATS rows.
func (w workload) describeCore() []string {
	return []string{
		fmt.Sprintf("Publish-only: %s messages from 1 `nats bench pub` client, no subscribers; the publisher's rate",
			groupThousands(int64(w.PubMsgs))),
		fmt.Sprintf("Pub→sub: %s messages of 16 B from 1 publisher, each subscriber receives all; the subscribers' rate (for 1→4 the sum over the longest subscriber's window)",
			groupThousands(int64(w.SubMsgs))),
		fmt.Sprintf("Request-reply: %s sequential requests of %d B from 1 `nats bench service request` client to 1 `nats bench service serve` responder; rate and latency percentiles as natscli measures them",
			groupThousands(int64(w.Requests)), w.ReqSize),
	}
}

// describeJS returns the workload lines of the JetStream rows.
func (w workload) describeJS() []string {
	return []string{
		fmt.Sprintf("JetStream: every server runs JetStream in a new store directory of its own; 1 client publishes messages of %d B into an R1 stream that `nats bench js pub --create --purge` makes empty for the run. "+
			"Async publish keeps 500 PubAcks outstanding (`nats bench js pub async --batch 500`), sync publish waits for each (`nats bench js pub sync`). "+
			"Async on file with sync every 2 m on both: %s messages, with sync always on both: %s; sync: %s on file, %s on memory; these run on servers shared by all rounds, and the harness deletes the stream after each run",
			w.JSSize, groupThousands(int64(w.JSAsync)), groupThousands(int64(w.JSAsyncAlways)),
			groupThousands(int64(w.JSSync)), groupThousands(int64(w.JSSyncMemory))),
		fmt.Sprintf("Stored messages: each run starts a new server of each kind with its default sync; the async publisher writes %s messages into a new stream, and its rate is the async row \"memory\" or \"file, default sync\". "+
			"Then VmRSS, read once steady (%d readings %v apart within %.0f %%, at most %v), is the \"RSS with %s stored\" row; on file `nats bench js consume` (a durable pull consumer, explicit acks, 500 outstanding) then reads the first %s of them for the pull consume row",
			groupThousands(int64(w.JSStored)), rssWindow, rssPoll, rssTolerance*100, rssTimeout,
			groupThousands(int64(w.JSStored)), groupThousands(int64(w.JSConsume))),
	}
}

// syncNote explains the sync policies under the table.
const syncNote = "JetStream sync policy. leafbox's default fsyncs a file stream before every PubAck, with group commit (publishes waiting together share one fsync); " +
	"nats-server's default fsyncs every 2 minutes, so it acks messages a power cut can still lose. Rows marked \"default sync\" run each server on its own default and so compare different durability. " +
	"For like with like, \"sync always on both\" runs both servers with `sync_interval: always` from a configuration file (the nats-server row fsyncs every message, without group commit), " +
	"and \"sync every 2 m on both\" runs both with `sync_interval: 2m`. Memory rows do not depend on it."

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

// measurer runs scenarios against servers.
type measurer struct {
	nats    *natsCLI
	workDir string               // workDir receives one directory per run for natscli's CSV.
	logf    func(string, ...any) // logf reports progress.
	notes   []string             // notes are problems outside the figures, for the report.
}

// runRounds runs every scenario on both sides, rounds times. Within a
// round each scenario runs on one side and then the other, and the side
// that goes first alternates by round. It returns one result per metric,
// in scenario order, and a one-line description of each failure.
//
// A scenario that fails on a side (including its server failing to start)
// is not run on that side again, so one broken row costs at most one
// timeout per side. A server that dies during a run, or ctx ending, stops
// the rounds with an error.
func (m *measurer) runRounds(ctx context.Context, f *fleet, scs []scenario, rounds int) ([]metricResult, []string, error) {
	var results []metricResult
	var failures []string
	first := make([]int, len(scs)) // first[i] is the index of scs[i]'s first metric in results
	for i, sc := range scs {
		first[i] = len(results)
		for _, mt := range sc.metrics {
			results = append(results, metricResult{metric: mt})
		}
	}
	for round := range rounds {
		order := [2]int{sideSubject, sideReference}
		if round%2 == 1 {
			order = [2]int{sideReference, sideSubject}
		}
		for i, sc := range scs {
			if sc.kind == kindDifference {
				continue // filled from the other rows once the rounds are done
			}
			rows := results[first[i] : first[i]+len(sc.metrics)]
			for _, side := range order {
				if rows[0].Failed[side] != "" || (sc.subjectOnly && side == sideReference) {
					continue
				}
				fail := func(label string, err error) {
					msg := fmt.Sprintf("%s on %s, round %d: %v", sc.metrics[0].Name, label, round+1, err)
					m.logf("FAILED %s", msg)
					failures = append(failures, firstLine(msg)) // the output tail went to the log
					for k := range rows {
						rows[k].Failed[side] = firstLine(err.Error())
					}
				}
				record := func(label string, values []float64) {
					parts := make([]string, len(values))
					for k, v := range values {
						rows[k].Values[side] = append(rows[k].Values[side], v)
						parts[k] = formatValue(v, rows[k].Unit) + " " + rows[k].Unit.String()
					}
					m.logf("round %d/%d %-44s %-26s %s", round+1, rounds, sc.metrics[0].Name, label, strings.Join(parts, ", "))
				}
				if g := sc.group(); g == groupLeaf || g == groupMQTT || g == groupMQTTListen || g == groupModbus {
					// A leaf, mqtt or modbus run starts and stops its own servers.
					measure := m.measureLeaf
					switch g {
					case groupMQTT:
						measure = m.measureMQTT
					case groupMQTTListen:
						measure = m.measureMQTTListen
					case groupModbus:
						measure = m.measureModbus
					}
					values, err := measure(ctx, f, sc, side)
					if ctx.Err() != nil {
						return nil, nil, ctx.Err()
					}
					if err != nil {
						fail(f.labels[side], err)
						continue
					}
					record(f.labels[side], values)
					continue
				}
				s, release, err := m.server(ctx, f, sc, side)
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if err != nil {
					fail(serverLabel(f.labels[side], sc.sync), err)
					continue
				}
				subject := fmt.Sprintf("bench.%s.r%d.s%d", sc.slug, round, side)
				subszOK := s.subszErr == nil
				values, err := m.measure(ctx, s, sc, subject)
				if subszOK && s.subszErr != nil {
					note := fmt.Sprintf("Monitoring: %s's /subsz failed (%v), so the harness counted subscribers from /connz?subs=1 to know when they were ready.",
						s.label, firstLine(s.subszErr.Error()))
					m.logf("%s", note)
					m.notes = append(m.notes, note)
				}
				dead := s.alive()
				release()
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if dead != nil {
					return nil, nil, fmt.Errorf("benchcmp: round %d, %s: %w", round+1, sc.metrics[0].Name, dead)
				}
				if err != nil {
					fail(s.label, err)
					continue
				}
				record(s.label, values)
			}
		}
	}
	fillDifferences(results, scs)
	return results, failures, nil
}

// server returns the server sc runs on for side, and a function to call
// when the run is over: a fresh server for scenarios that want one, the
// side's shared server for sc's sync mode otherwise.
func (m *measurer) server(ctx context.Context, f *fleet, sc scenario, side int) (*server, func(), error) {
	if sc.fresh {
		s, err := f.freshServer(ctx, side, sc.sync, sc.cipher)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { f.stopFresh(s) }, nil
	}
	s, err := f.sharedServer(ctx, side, sc.sync)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {}, nil
}

// measure runs sc once against srv and returns one value per sc.metrics.
// subject must be unique to this run, so that readiness checks count only
// this run's subscriptions.
func (m *measurer) measure(ctx context.Context, srv *server, sc scenario, subject string) ([]float64, error) {
	url := "nats://" + srv.clientAddr
	if err := waitQuiet(ctx, srv.monitorURL); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(m.workDir, sc.slug+"-")
	if err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	size := strconv.Itoa(sc.size)
	msgs := strconv.Itoa(sc.msgs)

	switch sc.kind {
	case kindPublish:
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.run(ctx, url, "bench", "pub", subject,
			"--clients", "1", "--msgs", msgs, "--size", size, "--csv", out); err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindFanout:
		out := filepath.Join(dir, "sub.csv")
		sub, err := m.nats.start(ctx, url, "bench", "sub", subject,
			"--clients", strconv.Itoa(sc.subs), "--msgs", msgs, "--size", size, "--csv", out)
		if err != nil {
			return nil, err
		}
		defer sub.stop() // a no-op once it has finished
		if err := waitSubscribed(ctx, srv, subject, sc.subs, sub.done); err != nil {
			return nil, fmt.Errorf("%s: %w%s", sub.name, err, sub.outputTail())
		}
		if _, err := m.nats.run(ctx, url, "bench", "pub", subject,
			"--clients", "1", "--msgs", msgs, "--size", size); err != nil {
			return nil, err
		}
		if err := sub.wait(); err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindRequest:
		out := filepath.Join(dir, "request.csv")
		serve, err := m.nats.start(ctx, url, "bench", "service", "serve", subject, "--clients", "1")
		if err != nil {
			return nil, err
		}
		defer serve.stop()
		if err := waitSubscribed(ctx, srv, subject, 1, serve.done); err != nil {
			return nil, fmt.Errorf("%s: %w%s", serve.name, err, serve.outputTail())
		}
		if _, err := m.nats.run(ctx, url, "bench", "service", "request", subject,
			"--clients", "1", "--msgs", msgs, "--size", size, "--csv", out); err != nil {
			return nil, err
		}
		rows, err := readCSV(out)
		if err != nil {
			return nil, err
		}
		rps, err := aggregateRate(rows)
		if err != nil {
			return nil, err
		}
		p50, p99, err := worstLatency(rows)
		if err != nil {
			return nil, err
		}
		return []float64{rps, p50, p99}, nil

	case kindJSAsync, kindJSSync:
		out := filepath.Join(dir, "pub.csv")
		_, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...)
		// Delete the stream even after a failure: a memory stream left
		// behind would weigh on every later row.
		if rmErr := m.deleteStream(ctx, url, sc.streamName()); err == nil && rmErr != nil {
			err = rmErr
		}
		if err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindJSStored:
		// The server is fresh and is stopped after the run, store and all,
		// so the stream needs no deleting.
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...); err != nil {
			return nil, err
		}
		values, err := rateFrom(out)
		if err != nil {
			return nil, err
		}
		rss, err := m.steadyMiB(ctx, srv)
		if err != nil {
			return nil, err
		}
		values = append(values, rss)
		if sc.consume == 0 {
			return values, nil
		}
		out = filepath.Join(dir, "consume.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.consume), url, "bench", "js", "consume", "--stream", sc.streamName(),
			"--clients", "1", "--msgs", strconv.Itoa(sc.consume), "--batch", "500", "--csv", out); err != nil {
			return nil, err
		}
		consumed, err := rateFrom(out)
		if err != nil {
			return nil, err
		}
		return append(values, consumed...), nil

	case kindJSReopen:
		// The server is fresh: restarting it keeps its store, and the
		// fleet removes that after the run.
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...); err != nil {
			return nil, err
		}
		start, err := srv.restart(ctx, startTimeout+scaledTimeout(m.nats.timeout, sc.msgs))
		if err != nil {
			return nil, err
		}
		opened, err := waitStreamMsgs(ctx, srv, sc.streamName(), uint64(sc.msgs), scaledTimeout(m.nats.timeout, sc.msgs))
		if err != nil {
			return nil, err
		}
		rss, err := m.steadyMiB(ctx, srv)
		if err != nil {
			return nil, err
		}
		return []float64{float64(opened.Sub(start)) / float64(time.Millisecond), rss}, nil
	}
	return nil, fmt.Errorf("benchcmp: unknown scenario kind %d", sc.kind)
}

// steadyMiB reads the server's VmRSS once steady, in MiB, noting in the
// log when it was still moving at rssTimeout.
func (m *measurer) steadyMiB(ctx context.Context, srv *server) (float64, error) {
	rss, steady, err := steadyRSS(ctx, srv)
	if err != nil {
		return 0, err
	}
	if !steady {
		m.logf("%s: RSS still moving after %v; took the last reading", srv.label, rssTimeout)
	}
	return mib(rss), nil
}

// jsPublishArgs returns the natscli arguments of a JetStream publish run
// for sc: one client publishing sc.msgs messages of sc.size bytes on
// subject into sc's stream, which it creates (or updates) and purges
// first, writing its figures to the CSV file out. kindJSSync publishes
// synchronously, the other kinds asynchronously with 500 PubAcks
// outstanding.
func jsPublishArgs(sc scenario, subject, out string) []string {
	args := []string{"bench", "js", "pub", "async", subject, "--batch", "500"}
	if sc.kind == kindJSSync {
		args = []string{"bench", "js", "pub", "sync", subject}
	}
	args = append(args, "--create", "--purge", "--storage", sc.storage, "--stream", sc.streamName(),
		"--clients", "1", "--msgs", strconv.Itoa(sc.msgs), "--size", strconv.Itoa(sc.size), "--csv", out)
	if sc.kind == kindJSReopen {
		// natscli's 1 GB default holds about 5,000,000 such messages.
		args = append(args, "--maxbytes", "8GB")
	}
	return args
}

// jsTimeoutMsgs is how many JetStream messages one -timeout covers: a
// run of more gets a multiple of it, since JetStream rates are a few
// tens of thousands of messages per second where core rates are millions.
const jsTimeoutMsgs = 250_000

// scaledTimeout returns the limit on a JetStream run of msgs messages:
// base for up to jsTimeoutMsgs, one more base for each further
// jsTimeoutMsgs or part of it.
func scaledTimeout(base time.Duration, msgs int) time.Duration {
	n := max(1, (msgs+jsTimeoutMsgs-1)/jsTimeoutMsgs)
	return base * time.Duration(n)
}

// deleteStream deletes a JetStream stream with `nats stream rm --force`.
func (m *measurer) deleteStream(ctx context.Context, url, name string) error {
	_, err := m.nats.run(ctx, url, "stream", "rm", name, "--force")
	return err
}

// Bounds of the wait for a steady resident set.
const (
	rssPoll      = 250 * time.Millisecond // between readings
	rssWindow    = 5                      // readings that must agree
	rssTolerance = 0.01                   // how far they may spread, as a fraction of the largest
	rssTimeout   = 10 * time.Second       // when to give up and take the last reading
)

// steadyRSS reads the server's VmRSS every rssPoll until the last
// rssWindow readings agree within rssTolerance, and returns the last
// reading in bytes. steady is false when rssTimeout passed first.
func steadyRSS(ctx context.Context, s *server) (rss int64, steady bool, err error) {
	deadline := time.Now().Add(rssTimeout)
	var readings []int64
	for {
		if err := s.alive(); err != nil {
			return 0, false, err
		}
		v, err := readStatusKB(s.pid(), "VmRSS")
		if err != nil {
			return 0, false, err
		}
		readings = append(readings, v)
		if rssSteady(readings, rssWindow, rssTolerance) {
			return v, true, nil
		}
		if time.Now().After(deadline) {
			return v, false, nil
		}
		if err := pause(ctx, rssPoll); err != nil {
			return 0, false, err
		}
	}
}

// readCSV parses the natscli CSV file at path.
func readCSV(path string) ([]clientStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: natscli wrote no csv: %w", err)
	}
	defer f.Close()
	rows, err := parseBenchCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return rows, nil
}

// rateFrom returns the aggregate rate recorded in the CSV file at path.
func rateFrom(path string) ([]float64, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	r, err := aggregateRate(rows)
	if err != nil {
		return nil, err
	}
	return []float64{r}, nil
}
