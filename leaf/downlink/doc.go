// Package downlink is leafbox's path for commands from a nats-server hub:
// a durable pull consumer on a hub JetStream stream whose messages are
// published on local subjects, each acknowledged to the hub only after
// the local delivery succeeded. Commands sent while the gateway was
// offline wait in the hub stream and arrive when it comes back.
//
// # Use
//
//	dl, err := downlink.New(hub, local, downlink.Config{Name: "cmds", Stream: "CMDS", Domain: "hub",
//		Durable: "gw-7_cmds", FilterSubjects: []string{"cmd.site1.>"}, HubPrefix: "cmd.site1.", LocalPrefix: "cmd."})
//	// subscribe dl.InboxPrefix()+">" where the hub's answers arrive, calling dl.HandleMsg
//	err = dl.Start(ctx)
//	st := dl.Status()
//	err = dl.Close()
//
// The package knows neither the broker nor the leaf link: the caller
// supplies a Hub, the path toward the hub, and a Local, which publishes
// on the gateway. cmd/internal/app wires both.
//
// # Wire
//
// The consumer is created, or bound again when it exists, with
//
//	$JS.<domain>.API.CONSUMER.CREATE.<stream>.<durable>
//	{"stream_name":..,"config":{"durable_name":..,"ack_policy":"explicit","deliver_policy":"all",
//	 "max_deliver":-1,"ack_wait":..,"max_ack_pending":..,"filter_subject(s)":..}}
//
// and pulled with $JS.<domain>.API.CONSUMER.MSG.NEXT.<stream>.<durable> and
// {"batch":..,"expires":..,"idle_heartbeat":..}, the reply subject an
// inbox under InboxPrefix(), as nats.go's Fetch does. Both cross the leaf
// link because the hub announces interest in its domain's API. The hub
// sends the messages to the inbox with their $JS.ACK reply subject; status
// messages (100 Idle Heartbeat, 408 Request Timeout, 409 ...) end or keep
// the request. Acks are sent as requests ("+ACK" with a reply under
// InboxPrefix()), so the hub's empty answer confirms each one.
//
// # Delivery
//
// One goroutine handles messages one at a time in arrival order. For each
// it maps the subject (strip HubPrefix, add LocalPrefix), calls
// Local.Deliver, and acks on success. On failure it naks with a delay
// that grows with consecutive failures. Every message nak'ed is awaited:
// a later sequence is nak'ed too (same delay) while an earlier one is
// awaited, so the local order is the stream's even when the hub, its
// slot freed by an ack, sends a new message before the held ones. An
// awaited message that does not come back within twice its delay plus
// the ack wait (the hub stream dropped it) is no longer waited for; with
// Config.MaxDeliver, one that fails its last delivery is skipped at once.
//
// A message the hub sends again after it was delivered here is acked
// again, not delivered twice: the downlink remembers the deliveries whose
// ack the hub has not confirmed (the ack was lost with the link). With
// Config.MaxAckPending 1, the default, the hub has one message
// outstanding at a time and sends the stream in order, so the downlink
// also treats any sequence up to the highest delivered (or the consumer's
// ack floor) as delivered: that covers a hub that crashed before it
// persisted an ack. MaxAckPending above 1 is faster over slow links, but
// when the link drops with messages in transit the hub sends those after
// ack wait, behind later ones: each is still delivered once, but at most
// MaxAckPending of them per drop arrive after later messages of the
// stream. With MaxAckPending 1 the order is the stream's through any
// number of drops.
//
// # Failures
//
// A missing heartbeat (two intervals: how a blackholed link that still
// looks connected shows), an API error, a request the hub cannot
// receive, or, with a Hub that is a LinkWatcher, the drop of its
// connection ends the session: after a backoff the downlink waits for
// the hub, binds the consumer again and pulls anew. The backoff grows
// with failed sessions only, not with the waits for an unreachable hub,
// so a long outage does not delay the restart after it. With
// MaxAckPending 1, a new session that finds a message outstanding (sent
// into the dropped link) asks the hub to send it again at once with
// $JS.<domain>.API.CONSUMER.RESET.<stream>.<durable> and {} (back to the
// ack floor; nats-server 2.14 or later), instead of waiting the ack
// wait; the message's delivery count starts over, which MaxDeliver
// counts from. The consumer is durable, so neither a gateway restart nor
// a hub restart loses the position: what was acked is never sent again.
//
// # Waiting on the status
//
// Wait(ctx, cond) blocks until cond holds for a fresh Status, checked at
// once and after every change: each message handled, ack confirmed, pull
// and resend, and each change of the state or last error. It never polls.
//
// # Lock order
//
//	Downlink.mu → runstate.Tracker.mu
//
// Downlink.mu guards Start and Close; under it only the run state is set
// and the session's context cancelled. evMu guards the events HandleMsg
// queues from the broker's goroutines for the session; it is a leaf, as
// are the Tracker's mutex and its changes.Notifier's mutex. Everything else (the
// unconfirmed deliveries, the held sequences, the stash) belongs to the
// session goroutine alone and takes no lock; it calls Local.Deliver and
// the Hub holding none.
package downlink
