package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// flushTimeout bounds the round trip that tells an uplink the hub has its
// reply interest.
const flushTimeout = 5 * time.Second

// outboxSyncInterval bounds how long a capture may wait for its fsync
// when its publisher sends no PING; a PING syncs at once (syncCaptures).
const outboxSyncInterval = time.Second

// uplink is one running uplink: its outbox stream, the in-process
// connection that captures and forwards, and the outbox over them.
type uplink struct {
	name   string
	link   *leaf.Link
	conn   Conn
	stream store.Stream
	dead   store.Stream // the dead-letter store
	ob     *outbox.Outbox
	sched  *outbox.Scheduler // shared by all uplinks
	probe  *hubTimeProbe     // nil without hub_domain
}

// UplinkStatus is an uplink's counters with the state of its link.
type UplinkStatus struct {
	outbox.Status
	// LinkState is the state of the leafnode link it forwards over, and
	// LinkSince when the link entered it.
	LinkState string
	LinkSince time.Time
	// Limits are the caps and usage shared by all uplinks.
	Limits outbox.SchedulerStatus
	// WireBytes is the bytes that crossed the uplink's link both ways,
	// on the socket (after compression and TLS), every connection since
	// start; WireBytesPerPayloadByte divides them by the payload bytes the
	// hub acknowledged of every uplink over that link (0 before the
	// first). It is the metered cost of a payload byte, the link's other
	// traffic (downlinks, interest, keepalives) included.
	WireBytes               int64
	WireBytesPerPayloadByte float64
}

// syncCaptures makes every capture so far durable: it fsyncs each outbox
// written since its last sync (outbox.Outbox.Sync). The broker runs it
// before answering a PING (Broker.OnPing), so a publisher's PONG means
// its captured messages are on disk, and a burst of captures shares one
// fsync instead of one each.
func syncCaptures(us []*uplink, log *slog.Logger) {
	for _, u := range us {
		if err := u.ob.Sync(); err != nil && !errors.Is(err, store.ErrClosed) {
			log.Error("uplink outbox sync failed", "subsystem", "uplink", "uplink", u.name, "err", err)
		}
	}
}

// openScheduler opens the scheduler shared by the uplinks.
func openScheduler(l LimitsConfig) (*outbox.Scheduler, error) {
	if err := vfs.OS.MkdirAll(l.StateDir, vfs.PermDir); err != nil {
		return nil, err
	}
	return outbox.OpenScheduler(outbox.SchedulerConfig{StateFile: l.StateFile, MaxRate: l.MaxRate, DailyBudget: l.DailyBudget})
}

// startUplinks opens every uplink's outbox, subscribes its captured
// subjects and its reply inbox, and starts forwarding over the link of
// its remote. On error it stops what it started. It runs before the links
// start, so the reply interest is announced with the link's first
// connection.
func (n *Node) startUplinks(clk *clock.Clock) ([]*uplink, error) {
	if len(n.cfg.Uplinks) == 0 {
		return nil, nil
	}
	if n.cfg.OpenStream == nil {
		return nil, errors.New("uplinks: node.Config.OpenStream is not set")
	}
	sched, err := openScheduler(n.cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("uplinks: %w", err)
	}
	var out []*uplink
	for i := range n.cfg.Uplinks {
		u, err := n.startUplink(&n.cfg.Uplinks[i], clk, sched)
		if err != nil {
			_ = stopUplinks(out, n.log)
			_ = sched.Close()
			return nil, fmt.Errorf("uplink %s: %w", n.cfg.Uplinks[i].Store.Name, err)
		}
		out = append(out, u)
	}
	return out, nil
}

func (n *Node) startUplink(uc *UplinkConfig, clk *clock.Clock, sched *outbox.Scheduler) (*uplink, error) {
	name := uc.Store.Name
	// max_age is the outbox's (outbox.Config.MaxAge), not the stream's.
	// Store does not wait for the fsync: syncCaptures runs before a
	// publisher's PONG, so its PONG means the message is durable.
	stream, err := n.cfg.OpenStream(uc.Dir, uc.Store, outboxSyncInterval)
	if err != nil {
		return nil, err
	}
	// Dead letters sync in Store: a message is on disk there before it
	// leaves the outbox. The same size limits as the outbox bound them.
	dead, err := n.cfg.OpenStream(uc.DeadLetterDir,
		store.Config{Name: name + "_deadletter", MaxMsgs: uc.Store.MaxMsgs, MaxBytes: uc.Store.MaxBytes, Discard: store.DiscardOld}, 0)
	if err != nil {
		_ = stream.Close()
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	r := n.remotes[uc.Remote]
	conn := n.broker.Connect(n.cfg.Remotes[uc.Remote].Link.Account) // no echo: its publishes never reach its own captures
	u := &uplink{name: name, link: r.link, conn: conn, stream: stream, dead: dead, sched: sched}
	ulog := n.log.With("subsystem", "uplink", "uplink", name)
	hub := linkHub{link: r.link}
	if uc.Outbox.HubDomain != "" {
		hub.probe, err = newHubTimeProbe(clk, conn, uc.Outbox.HubDomain, uc.Outbox.Stream, ulog)
		u.probe = hub.probe
	}
	if err == nil {
		oc := uc.Outbox
		oc.ServerName = n.cfg.ServerName
		oc.Logger = n.log.With("subsystem", "uplink") // the outbox adds uplink=<name>
		oc.Clock = clk
		oc.DeadLetter = dead
		oc.Scheduler = sched
		oc.Batch = true // fast batches where the hub stream allows them
		if uc.Store.Discard == store.DiscardOld {
			oc.DiskLow = diskLow(uc.Dir, uc.MinFreeDisk)
		}
		u.ob, err = outbox.New(stream, hub, oc)
	}
	if err == nil {
		_, err = conn.Subscribe(u.ob.InboxPrefix()+">", "", func(m leaf.Msg) {
			u.ob.HandleReply(string(m.Subject), m.Data)
		})
	}
	for _, s := range uc.Subjects {
		if err != nil {
			break
		}
		// Runs on the publisher's read goroutine, before its next PING
		// is answered (syncCaptures).
		_, err = conn.Subscribe(s, "", func(m leaf.Msg) {
			_ = u.ob.CaptureBytes(m.Subject, m.Header, m.Data)
		})
	}
	if err == nil {
		err = u.ob.Start(context.Background())
	}
	if err != nil {
		_ = u.stop(ulog)
		return nil, err
	}
	st := u.ob.Status()
	ulog.Info("uplink started", "dir", uc.Dir, "subjects", uc.Subjects,
		"hub_prefix", uc.Outbox.HubPrefix, "backlog_msgs", st.BacklogMsgs, "backlog_bytes", st.BacklogBytes,
		"msg_id_prefix", u.ob.IDPrefix())
	return u, nil
}

// stop stops forwarding and capturing and closes the outbox stream. Run it
// after the broker's clients are gone, so that no accepted message misses
// the outbox.
func (u *uplink) stop(log *slog.Logger) error {
	if u.ob != nil {
		if err := u.ob.Close(); err != nil {
			log.Warn("uplink state not saved", "error", err)
		}
		st := u.ob.Status()
		log.Info("uplink stopped", "captured", st.Captured, "stored", st.Stored, "forwarded", st.Forwarded,
			"acked", st.Acked, "dropped", st.Dropped, "backlog_msgs", st.BacklogMsgs, "retries", st.Retries)
	}
	if u.probe != nil {
		u.probe.stop()
	}
	u.conn.Close()
	return errors.Join(u.stream.Close(), u.dead.Close())
}

// stopUplinks stops us and their shared scheduler.
func stopUplinks(us []*uplink, log *slog.Logger) error {
	var errs []error
	for _, u := range us {
		if err := u.stop(log.With("subsystem", "uplink", "uplink", u.name)); err != nil {
			errs = append(errs, fmt.Errorf("uplink %s: %w", u.name, err))
		}
	}
	if len(us) > 0 {
		if err := us[0].sched.Close(); err != nil {
			errs = append(errs, fmt.Errorf("uplinks: %w", err))
		}
	}
	return errors.Join(errs...)
}

// status returns the uplink's counters with its link's state.
func (u *uplink) status() UplinkStatus {
	ls := u.link.Status()
	return UplinkStatus{Status: u.ob.Status(), LinkState: ls.State.String(), LinkSince: ls.StateSince, Limits: u.sched.Status(),
		WireBytes: ls.WireIn + ls.WireOut}
}

// linkHub is the path toward the hub an outbox or a downlink uses: its
// messages go over one remote's link, and its reply inbox, subscribed on
// its own connection, is local interest the link announces to the hub.
type linkHub struct {
	link  *leaf.Link
	probe *hubTimeProbe // asks the hub's time when ready; nil without hub_domain
}

// WaitReady implements outbox.Hub and downlink.Hub: the link is
// registered, and a PING round trip made sure the hub holds the reply
// interest and the link has the hub's interest.
func (h linkHub) WaitReady(ctx context.Context) error {
	if err := h.link.WaitConnected(ctx); err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := h.link.Flush(fctx); err != nil {
		return err
	}
	if h.probe != nil {
		h.probe.request()
	}
	return nil
}

// Publish implements outbox.Hub: the message goes over this remote's link
// only, not through the local broker, so that with several remotes it
// reaches just this hub, and local subscribers never see the hub subject.
// The link's errors become the outbox's: no interest is ambiguous (no
// responders), a message above the hub's max_payload or a subject the
// link may not send are permanent refusals.
func (h linkHub) Publish(subj, reply string, hdr, data []byte) error {
	err := h.link.Publish(subj, reply, hdr, data)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, leaf.ErrNoInterest):
		return fmt.Errorf("%w: %w", outbox.ErrNoResponders, err)
	case errors.Is(err, leaf.ErrMaxPayload):
		return outbox.Refused(outbox.ReasonTooLarge, err)
	case errors.Is(err, leaf.ErrNotPermitted):
		return outbox.Refused(outbox.ReasonPermission, err)
	}
	return err
}

// Lost implements downlink.LinkWatcher: the channel is closed when the
// link's connection up at the call drops.
func (h linkHub) Lost(ctx context.Context) <-chan struct{} {
	return h.link.Lost(ctx)
}
