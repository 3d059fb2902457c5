package node

import "github.com/leafbox/leafbox/leaf"

// Broker is the local broker as the node sees it. The node declares it so
// that it need not import the server; cmd/internal/app adapts
// *server.Server to it.
type Broker interface {
	// Connect returns a new in-process connection bound to account ("" is
	// the global account) that never receives its own publishes (no echo).
	Connect(account string) Conn

	// ConnectCombined is Connect for an attached leaf: every message that
	// the connection's subscriptions take reaches deliver once, on the
	// publisher's goroutine, with whether a plain subscription took it
	// and the queue groups in which one of its members was chosen.
	// Subscribe on it takes no handler. m's slices and queues are
	// borrowed for the call.
	ConnectCombined(account string, deliver func(m leaf.Msg, plain bool, queues []string)) Conn

	// WatchInterest calls fn for every subscription added to or removed
	// from account from now on, and returns those that exist when
	// watching starts, with no change missed or reported twice between
	// the two. Each change carries the Conn (returned by Connect or
	// ConnectCombined) that made it, or nil. fn may run with the broker's
	// locks held: it must not block or call back into the Broker. After
	// cancel returns fn is not called again.
	WatchInterest(account string, fn func(InterestEvent)) (existing []InterestEvent, cancel func())

	// OnPing sets fn to run before the broker answers any client's PING,
	// after everything the client published before it was routed (nil
	// removes it). The node makes the uplinks' captures durable there:
	// a publisher's PONG means its captured messages are on disk.
	OnPing(fn func())
}

// InterestEvent is one subscription added to or removed from an account.
type InterestEvent struct {
	Subject string // may hold wildcards
	Queue   string // "" for a plain subscription
	Added   bool   // false for a removal
	// Origin is the Conn whose subscription changed, nil for one that the
	// Broker did not hand out (a client's).
	Origin Conn
}

// Conn is an in-process connection of the Broker, safe for concurrent use.
type Conn interface {
	// Subscribe registers h for messages matching subject (wildcards
	// allowed), in queue group queue unless it is "". h runs on the
	// publisher's goroutine with borrowed slices (valid only while it
	// runs) and must not block. On a ConnectCombined connection h is nil.
	Subscribe(subject, queue string, h func(leaf.Msg)) (leaf.Subscription, error)

	// Publish routes a message by subject and returns how many
	// subscriptions received it. hdr is a complete header block or nil.
	Publish(subject, reply string, hdr, data []byte) int

	// PublishAs delivers a message from a hub: routed by route, shown to
	// subscribers as shown. The slices are borrowed for the call.
	PublishAs(route, shown, reply, hdr, data []byte)

	// PublishQueues is PublishAs where queue groups receive the message
	// only when named in queues (leaf.QueueFilterPublisher).
	PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte)

	// Close removes every subscription of the connection.
	Close()
}

// Streams is the local JetStream engine as the node sees it;
// cmd/internal/app passes *jetstream.Engine.
type Streams interface {
	// CapturingStream returns the name of the stream that stores what is
	// published on the literal subject subj, and whether one does.
	CapturingStream(subj string) (name string, ok bool)
}
