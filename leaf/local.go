package leaf

// Local is the local broker as a link sees it. The link declares it so that
// it need not import the server; cmd/internal/app adapts *server.Server to
// it. One Local may serve every link of a server.
type Local interface {
	// Connect returns a new in-process connection bound to account ("" is
	// the global account) that never receives its own publishes (no echo).
	// A link opens one per hub connection and closes it when that
	// connection ends.
	Connect(account string) (LocalConn, error)

	// WatchInterest calls fn for every subscription added to or removed
	// from account from now on, and returns the subscriptions that exist
	// when watching starts, with no change missed or reported twice
	// between the two. fn may run with the broker's locks held: it must
	// not block or call back into Local. cancel stops the calls; after it
	// returns fn is not called again.
	WatchInterest(account string, fn func(Interest)) (existing []Interest, cancel func())
}

// Interest is one subscription added to or removed from the local account.
type Interest struct {
	Subject string // may hold wildcards
	Queue   string // queue group, "" for a plain subscription
	Added   bool   // false for a removal
	// Leaf marks a subscription made through a LocalConn that Connect
	// returned, by this link or another: interest learned from a hub. It
	// is never announced to a hub.
	Leaf bool
}

// Msg is a message delivered to a LocalConn subscription. Its slices are
// borrowed from the publisher: valid only while the handler runs, and
// read-only. Header is a complete NATS header block, or nil.
type Msg struct {
	Subject []byte
	// Route is the subject the local broker routed the message by; it
	// differs from Subject only for JetStream deliveries (the deliver
	// subject or pull inbox, while Subject is the stored message's
	// subject). nil means Subject. The link forwards by Route.
	Route  []byte
	Reply  []byte
	Header []byte
	Data   []byte
}

// LocalConn is an in-process connection of the local broker, safe for
// concurrent use.
type LocalConn interface {
	// Subscribe registers h for local messages matching subject, which may
	// hold wildcards. h runs on the publisher's goroutine and must not
	// block: the link copies the message into its outbound buffer.
	Subscribe(subject string, h func(Msg)) (Subscription, error)

	// Publish delivers a message from the hub to the local subscribers:
	// routed by route, shown to subscribers as shown (they differ only for
	// JetStream push deliveries), to every matching plain subscription and
	// one member of each matching queue group. The slices are borrowed
	// for the duration of the call.
	Publish(route, shown, reply, hdr, data []byte)

	// Close removes every subscription of the connection.
	Close()
}

// QueueFilterPublisher is an optional LocalConn ability that gives hub
// messages nats-server's queue semantics. When a LocalConn has it, the
// link uses it for every message from the hub.
type QueueFilterPublisher interface {
	// PublishQueues delivers like Publish, except that queue groups
	// receive the message only when named in queues: one member of each
	// listed group. With no queues listed, no queue subscriber receives
	// it (the hub has already chosen where queue delivery happens).
	PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte)
}

// Subscription is a LocalConn subscription.
type Subscription interface {
	// Unsubscribe removes the subscription; it is idempotent.
	Unsubscribe()
}
