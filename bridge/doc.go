// Package bridge connects devices that do not speak NATS (MQTT brokers,
// serial ports, Modbus slaves) to the subject space.
//
// A bridge is a Bridge: Run connects to its device side, moves messages
// between it and the broker through the Bus it is given, and returns when
// the device side fails or its context ends. A Runner runs one bridge,
// restarting it with jittered backoff after a failure, and keeps its
// Status; a Registry holds the running bridges of a configuration and
// applies a new one by starting, stopping or restarting only the bridges
// that changed.
//
// A bridge reaches the broker only through Bus, which this package
// declares and the composition root implements over the server's
// in-process client; no bridge imports the server, JetStream or the leaf
// runtime. Bridges under bridge/ import this package, core/subject (the
// MQTT topic mapping lives there, shared with the MQTT listener),
// core/proto (header blocks) and store/jsapi (PubAck decoding), and their
// device library.
//
// # Delivery
//
// Inbound (device → NATS), per route: a core publish (Bus.Publish), or
// Store, which publishes into a local JetStream stream and returns once
// the stream's PubAck says it is stored; only then does the bridge
// acknowledge the device side (an MQTT QoS 1/2 PUBACK, say), so a crash
// between the two loses nothing. Outbound (NATS → device): Bus.Subscribe,
// whose handler must not block (queue, and count DropQueueFull when the
// queue is full), or Consume, a durable pull consumer on a local stream:
// Consumer.Next hands the messages over in order, and the bridge
// acknowledges each (Delivery.Ack) only after the device accepted it, or
// naks it (Delivery.Nak) when the device is not connected; what Run left
// unsettled is nak'ed when the Consumer closes, so the next Run gets it
// first. Count a message in Status.Out once it is settled.
//
// The conformance suite in bridge/bridgetest checks all of this against
// a real broker and JetStream engine; every bridge runs it.
//
// # Running
//
//	reg := bridge.NewRegistry(bridge.RegistryConfig{Connector: conn, Logger: log})
//	err := reg.Apply(ctx, specs)   // start; on SIGHUP: Apply(ctx, newSpecs)
//	reports := reg.Statuses()      // /bridgez, /metrics
//	err = reg.Close(ctx)           // before the broker and JetStream close
//
// A Runner calls Bridge.Run with an Env (the bridge's own Bus from the
// Connector, its Status, a logger naming it). When Run fails it records
// the error, sets StateDisconnected and waits a backoff before the next
// Run: Backoff.Min (100 ms) doubling to Backoff.Max (30 s), each wait
// spread over [d/2, d) by jitter; a connection that stayed up
// Backoff.Stable (10 s) starts over from Min. A panic in Run is a failure
// like any other; so is a Run that returns nil unasked. Close cancels
// Run's context and waits for it; the state is then StateStopped.
//
// Registry.Apply identifies bridges by Kind and Name: it builds every new
// or changed bridge first (so a bad spec changes nothing), stops the
// removed and changed ones (closing their Bus), then starts the new ones.
// A bridge whose Account and Config are reflect.DeepEqual to the running
// one's is left untouched, connection and counters included.
//
// # Counters
//
// Every bridge counts through the Status it is given: messages in (device
// → NATS) and out, bad frames, reconnects, drops by reason (DropReasons),
// the last error and when it happened. /bridgez, /metrics and `leafbox
// bridge status` show them. Reconnects follow from the state:
// SetState(StateConnected) after an earlier connection counts one, so a
// bridge only reports its state. Status.Wait awaits a condition on the
// counters without polling (tests and the conformance suite use it).
// A bridge with devices of its own (Modbus slaves) is also a
// DeviceLister: Registry.Statuses adds each device's DeviceStatus (state,
// polls, timeouts, exceptions, the last exception) to its Report.
//
// # Lock order
//
//	Registry.applyMu → Registry.mu → a DeviceLister's own locks
//	Runner.mu, Status.mu (and its changes.mu) and Consumer.mu are leaves.
//
// applyMu serialises Apply and Close, which start and stop bridges while
// holding it; mu guards the running set for moments only, so Statuses
// never waits for a reload. No lock is held while a bridge runs.
package bridge
