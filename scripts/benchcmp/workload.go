package main

import (
	"fmt"
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
			"leafbox is the gateway with an uplink capturing telemetry.> (outbox on file, forwarded as site1.telemetry.> with Nats-Msg-Id, removed on the hub's PubAck; hub_domain set as in deploy/examples/gateway-to-hub.yaml, so the hub's time vouches for the gateway's clock and each message carries its capture time as Leafbox-Time); "+
			"nats-server is the gateway in its own store-and-forward pattern: a leaf with JetStream domain %q and a file stream %s on telemetry.>, which %s on the hub sources by domain with a subject transform to site1.telemetry.>",
			hubDomain, hubStream, groupThousands(int64(w.LeafMsgs)), w.LeafSize, telemetryWindow, gatewayDomain, gatewayStream, hubStream),
		fmt.Sprintf("Uplink forward: the link is up first; the rate is messages ÷ time from the first publish until the hub's /jsz shows them all in the stream (polled every 10 ms); payload MB/s is that rate × %d B. "+
			"Wire bytes are what crossed the link both ways during the run, per message. The CPU rows are the CPU time (user + system, /proc/PID/stat) the gateway process and the hub process used during the run, per message; the publisher and the harness are not in them. The hub's leafnode listener has `compression: accept`, so each gateway's remote `compression` decides", w.LeafSize),
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
