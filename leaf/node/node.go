package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// Node is the gateway's leaf runtime: the leafnode remotes with their
// links, the uplinks and downlinks over them, the leaf listener and the
// clock's trust. Build it with New, Start it after the broker and
// JetStream, Detach it before the broker shuts down and Close it after.
// Its methods are safe for concurrent use.
type Node struct {
	cfg      Config
	broker   Broker
	streams  Streams // nil without JetStream
	log      *slog.Logger
	leafs    *leafConns
	remotes  []*remote
	listener *leaf.Listener // nil without Config.Listener

	clockStop context.CancelFunc // nil unless the clock's loop runs
	clockDone chan struct{}

	mu        sync.Mutex
	uplinks   []*uplink          // while running
	downlinks []*runningDownlink // while running
}

// New builds the links of cfg's remotes (with the loop-prevention denies
// added) and its leaf listener over b; nothing connects or listens before
// Start. streams is the local JetStream engine of the global account, or
// nil. cfg has been validated.
func New(cfg Config, b Broker, streams Streams) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	operatorDeny := make([]bool, len(cfg.Remotes))
	for i, r := range cfg.Remotes {
		operatorDeny[i] = len(r.Link.DenyImports) > 0 || len(r.Link.DenyExports) > 0
	}
	cfg.Remotes = append([]RemoteConfig(nil), cfg.Remotes...)
	addLoopDenies(&cfg)
	n := &Node{cfg: cfg, broker: b, streams: streams, log: cfg.Logger, leafs: &leafConns{}}
	for i, r := range cfg.Remotes {
		rem, err := newRemote(i, r, operatorDeny[i], b, n.leafs, n)
		if err != nil {
			return nil, err
		}
		n.remotes = append(n.remotes, rem)
	}
	if lc := cfg.Listener; lc != nil {
		ac := lc.Accept
		ac.ServerID = cfg.ServerID
		l, err := leaf.NewListener(ac, &acceptLocal{broker: b}, n.log.With("subsystem", "leaf", "role", "hub"))
		if err != nil {
			return nil, fmt.Errorf("leaf listener: %w", err)
		}
		n.listener = l
	}
	return n, nil
}

// Start runs the clock's refresh loop on clk (which the uplinks stamp
// with and the hubs' time vouches for), opens the uplinks' outboxes and
// makes the broker sync them before each PONG, starts the downlinks, then
// the links (which connect in the background), and last the leaf
// listener. The uplinks and downlinks subscribe their inboxes before the
// links start, so that the first connection announces them. On error the
// caller runs Detach and Close, which stop what was started.
func (n *Node) Start(clk *clock.Clock) error {
	n.startClock(clk)
	ups, err := n.startUplinks(clk)
	if err != nil {
		return err
	}
	if len(ups) > 0 {
		n.mu.Lock()
		n.uplinks = ups
		n.mu.Unlock()
		n.broker.OnPing(func() { syncCaptures(ups, n.log) })
	}
	dls, err := n.startDownlinks()
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.downlinks = dls
	n.mu.Unlock()
	for i, r := range n.remotes {
		if err := r.link.Start(context.Background()); err != nil {
			return fmt.Errorf("leafnode remote %d: %w", i, err)
		}
		n.log.Info("leafnode remote connecting", "remote", i, "urls", r.varz.URLs, "account", r.varz.LocalAccount)
	}
	if n.listener != nil {
		if err := n.listener.Start(); err != nil {
			return fmt.Errorf("leaf listener: %w", err)
		}
		if n.cfg.Listener.Open {
			n.log.Warn("leafnode listener has no authorization: any leaf that reaches it may attach and exchange messages; set leafnodes.authorization",
				"addr", n.listener.Addr().String())
		}
	}
	return nil
}

// Detach stops the downlinks (while the links can still carry their last
// acks), then closes the leaf listener with its leafs and the links, all
// at once, and waits for them or for ctx: the hubs drop the gateway's
// interest before its clients go. Run it before the broker shuts down.
// It is idempotent.
func (n *Node) Detach(ctx context.Context) error {
	n.mu.Lock()
	dls := n.downlinks
	n.downlinks = nil
	n.mu.Unlock()
	stopDownlinks(dls)
	if n.listener != nil {
		_ = n.listener.Close()
	}
	return closeRemotes(ctx, n.remotes)
}

// Close stops the uplinks and closes their outboxes, then stops the
// clock's loop (the caller closes the clock). Run it after the broker is
// down, so that every message a client had accepted is in an outbox. It
// is idempotent.
func (n *Node) Close() error {
	n.mu.Lock()
	ups := n.uplinks
	n.uplinks = nil
	n.mu.Unlock()
	if len(ups) > 0 {
		n.broker.OnPing(nil)
	}
	err := stopUplinks(ups, n.log)
	n.stopClock()
	return err
}

// Link returns the link of remote i (in Config.Remotes order), or nil.
func (n *Node) Link(i int) *leaf.Link {
	if i < 0 || i >= len(n.remotes) {
		return nil
	}
	return n.remotes[i].link
}

// LinkConfig returns the configuration the link of remote i was built
// with: the operator's deny lists followed by the loop-prevention ones.
func (n *Node) LinkConfig(i int) leaf.Config {
	lc := n.cfg.Remotes[i].Link
	lc.ServerID = n.cfg.ServerID
	return lc
}

// Listener returns the leaf listener, or nil without one.
func (n *Node) Listener() *leaf.Listener { return n.listener }

// ListenerAddr returns the leaf listener's address, or nil when there is
// none or it is not started.
func (n *Node) ListenerAddr() net.Addr {
	if n.listener == nil {
		return nil
	}
	return n.listener.Addr()
}

// Outbox returns the outbox of running uplink i (in Config.Uplinks
// order), or nil.
func (n *Node) Outbox(i int) *outbox.Outbox {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.uplinks) {
		return nil
	}
	return n.uplinks[i].ob
}

// UplinkStatus returns the counters of every running uplink, in
// configuration order.
func (n *Node) UplinkStatus() []UplinkStatus {
	n.mu.Lock()
	ups := n.uplinks
	n.mu.Unlock()
	out := make([]UplinkStatus, 0, len(ups))
	payload := map[*leaf.Link]uint64{} // acknowledged payload bytes per link
	for _, u := range ups {
		st := u.status()
		payload[u.link] += st.AckedPayloadBytes
		out = append(out, st)
	}
	for i, u := range ups {
		if p := payload[u.link]; p > 0 {
			out[i].WireBytesPerPayloadByte = float64(out[i].WireBytes) / float64(p)
		}
	}
	return out
}

// DownlinkStatus returns the counters of every running downlink, in
// configuration order.
func (n *Node) DownlinkStatus() []DownlinkStatus {
	n.mu.Lock()
	dls := n.downlinks
	n.mu.Unlock()
	out := make([]DownlinkStatus, 0, len(dls))
	for _, d := range dls {
		out = append(out, d.status())
	}
	return out
}

// runningUplinks returns the running uplinks, in configuration order.
func (n *Node) runningUplinks() []*uplink {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.uplinks
}
