// Package bridgetest is the conformance suite every bridge runs, and a
// real broker to run it on.
//
// # Broker
//
// NewBroker starts a core/server on 127.0.0.1 (port 0) with a JetStream
// engine storing file streams in t.TempDir() (a publish is acknowledged
// once on disk), stopped in t.Cleanup. It is a bridge.Connector: each
// bridge gets an in-process client of its own without echo, as in
// leafbox; Broker.Bus gives the test its own side. AddStream,
// PurgeStream, StreamState, StoredMsgs and ConsumerInfo go through the
// JetStream API; WaitInterest waits on the server's interest events.
//
// # Suite
//
// A bridge's test implements Harness: Open(t, routes) builds the bridge
// for the Routes the suite asks for (InSubject, OutSubject, the InStream
// and OutStream streams) and the Device it talks to, which the test
// controls: Send from the device, Receive what it got, Drop and Restore
// it, Stall and Resume it. Then
//
//	bridgetest.Run(t, myHarness{})
//
// runs each case in a subtest with a Broker of its own and the bridge
// under a bridge.Runner (backoff 10 ms to 200 ms):
//
//   - OpenClose: the bridge connects (StateConnected, no error), subscribes
//     Out, and stops cleanly: StateStopped, no error recorded, no
//     subscription left (nor, for an IdleWaiter device, a connection).
//   - Inbound, Outbound: 20 messages each way, in order, counted in In and
//     Out.
//   - Reconnect: a dropped device is noticed (state leaves connected, an
//     error is recorded); once restored the bridge reconnects (Reconnects
//     ≥ 1) and messages flow both ways again.
//   - Backpressure: a stalled device does not block the broker: 2000
//     messages published at it complete and another subscriber gets every
//     one; each is delivered or counted dropped, and those delivered
//     arrive in order after Resume.
//   - OutboundFromStream: messages of a durable consumer reach the device
//     in order, acknowledged only after the device took them (the ack
//     floor follows Out); one sent to a stalled device and lost with the
//     connection comes again, and those stored while the device was away
//     arrive in order when it is back, none lost (at least once).
//   - StoreBeforeAck: with StoreIn, the device's message is in the stream
//     when the device gets its acknowledgement; one the stream refuses
//     (full, discard new) is not acknowledged, the refusal is reported
//     (Status.SetError), and it is stored and acknowledged once the
//     stream has room. A device protocol without acknowledgements instead
//     sees the refusal counted as a DropRejected drop.
//   - CleanStop: stopped with traffic flowing both ways, the bridge
//     returns promptly, records no error and lets go of its subscription.
//
// A device whose bridge carries values rather than payloads as they are
// (Modbus: numbers in registers, published as JSON, written by JSON
// requests) also implements Mapper, and the suite maps what it publishes
// on Out and reads on In through it. A Harness implements Inapplicable to
// say a case does not apply to its bridge; the suite logs the reason and
// the case passes without running. It is for behaviour the bridge's
// protocol does not have, never for a missing feature.
//
// The package's own test runs the suite against a tiny TCP line bridge,
// and proves each case fails a bridge with the fault it is there to catch
// (a blocking subscription handler, an ack before storing, an ack before
// the device took the message, a Run that ignores its context, a drop
// that goes unnoticed, a subscription that outlives Run), each in a child
// process.
package bridgetest
