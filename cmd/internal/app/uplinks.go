package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// flushTimeout bounds the round trip that tells an uplink the hub has its
// reply interest.
const flushTimeout = 5 * time.Second

// forwarder is one running uplink: its outbox stream, the in-process
// connection that captures and forwards, and the outbox over them.
type forwarder struct {
	name   string
	link   *leaf.Link
	conn   *server.Conn
	stream *filestore.Stream
	dead   *filestore.Stream // the dead-letter store
	ob     *outbox.Outbox
	sched  *outbox.Scheduler // shared by all forwarders
}

// outboxSyncInterval bounds how long a capture may wait for its fsync
// when its publisher sends no PING; a PING syncs at once (syncCaptures).
const outboxSyncInterval = time.Second

// syncCaptures makes every capture so far durable: it fsyncs each outbox
// written since its last sync (outbox.Outbox.Sync). The server runs it
// before answering a PING, so a publisher's PONG means its captured
// messages are on disk, and a burst of captures shares one fsync instead
// of one each.
func syncCaptures(fs []*forwarder, log *slog.Logger) {
	for _, f := range fs {
		if err := f.ob.Sync(); err != nil && !errors.Is(err, store.ErrClosed) {
			log.Error("uplink outbox sync failed", "subsystem", "uplink", "uplink", f.name, "err", err)
		}
	}
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
}

// startForwarders opens every uplink's outbox, subscribes its captured
// subjects and its reply inbox, and starts forwarding over the link of
// its leafnode remote (ups, one per remote). On error it stops what it
// started. It runs before the links start, so the reply interest is
// announced with the link's first connection.
func startForwarders(cfg *config.Config, srv *server.Server, ups []*uplink, clk *clock.Clock, log *slog.Logger) ([]*forwarder, error) {
	if len(cfg.Uplinks) == 0 {
		return nil, nil
	}
	sched, err := openScheduler(cfg)
	if err != nil {
		return nil, fmt.Errorf("uplinks: %w", err)
	}
	var out []*forwarder
	for i := range cfg.Uplinks {
		r := cfg.RemoteIndex(cfg.Uplinks[i].Remote) // Validate checked it
		account := cfg.LeafNodes.Remotes[r].Account
		f, err := startForwarder(cfg, &cfg.Uplinks[i], srv, account, ups[r].link, clk, sched, log)
		if err != nil {
			stopForwarders(out, log)
			_ = sched.Close()
			return nil, fmt.Errorf("uplinks[%d]: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func startForwarder(cfg *config.Config, u *config.UplinkConfig, srv *server.Server, account string, link *leaf.Link, clk *clock.Clock, sched *outbox.Scheduler, log *slog.Logger) (*forwarder, error) {
	discard, _ := u.DiscardPolicy() // Validate checked it
	stream, err := filestore.Open(vfs.OS, cfg.OutboxDir(u), filestore.Config{
		Config: store.Config{
			Name:     u.Name,
			MaxMsgs:  u.MaxMsgs,
			MaxBytes: int64(u.MaxBytes),
			Discard:  discard, // max_age is the outbox's: see outbox.Config.MaxAge

		},
		// Store does not wait for the fsync: syncCaptures runs before
		// a publisher's PONG, so its PONG means the message is durable.
		SyncInterval: outboxSyncInterval,
	})
	if err != nil {
		return nil, err
	}
	// Dead letters sync in Store: a message is on disk there before it
	// leaves the outbox. The same size limits as the outbox bound them.
	dead, err := filestore.Open(vfs.OS, cfg.DeadLetterDir(u), filestore.Config{
		Config: store.Config{Name: u.Name + "_deadletter", MaxMsgs: u.MaxMsgs, MaxBytes: int64(u.MaxBytes), Discard: store.DiscardOld},
	})
	if err != nil {
		_ = stream.Close()
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	conn := srv.InProcess(account)
	conn.SetNoEcho() // the forwarder's publishes never reach its own captures
	f := &forwarder{name: u.Name, link: link, conn: conn, stream: stream, dead: dead, sched: sched}
	flog := log.With("subsystem", "uplink", "uplink", u.Name)
	hub := linkHub{link: link, conn: conn}
	if u.HubDomain != "" {
		hub.probe, err = newHubTimeProbe(clk, conn, u.HubDomain, u.Stream, flog)
	}
	if err == nil {
		oc := outboxConfig(cfg, u)
		oc.ServerName = srv.Name()
		oc.Logger = log.With("subsystem", "uplink") // the outbox adds uplink=<name>
		oc.Clock = clk
		oc.DeadLetter = dead
		oc.Scheduler = sched
		if discard == store.DiscardOld {
			oc.DiskLow = diskLow(cfg.OutboxDir(u), int64(u.MinFreeDisk))
		}
		f.ob, err = outbox.New(stream, hub, oc)
	}
	if err == nil {
		_, err = conn.Subscribe(f.ob.InboxPrefix()+">", "", func(m server.Msg) {
			f.ob.HandleReply(string(m.Subject), m.Data)
		})
	}
	for _, s := range u.Subjects {
		if err != nil {
			break
		}
		// Runs on the publisher's read goroutine, before its next PING
		// is answered (syncCaptures).
		_, err = conn.Subscribe(s, "", func(m server.Msg) {
			_ = f.ob.Capture(string(m.Subject), m.Header, m.Data)
		})
	}
	if err == nil {
		err = f.ob.Start(context.Background())
	}
	if err != nil {
		f.stop(flog)
		return nil, err
	}
	st := f.ob.Status()
	flog.Info("uplink started", "dir", cfg.OutboxDir(u), "subjects", []string(u.Subjects),
		"hub_prefix", u.HubSubjectPrefix, "backlog_msgs", st.BacklogMsgs, "backlog_bytes", st.BacklogBytes,
		"msg_id_prefix", f.ob.IDPrefix())
	return f, nil
}

// stop stops forwarding and capturing and closes the outbox stream. Run it
// after the broker's clients are gone, so that no accepted message misses
// the outbox.
func (f *forwarder) stop(log *slog.Logger) error {
	if f.ob != nil {
		if err := f.ob.Close(); err != nil {
			log.Warn("uplink state not saved", "error", err)
		}
		st := f.ob.Status()
		log.Info("uplink stopped", "captured", st.Captured, "stored", st.Stored, "forwarded", st.Forwarded,
			"acked", st.Acked, "dropped", st.Dropped, "backlog_msgs", st.BacklogMsgs, "retries", st.Retries)
	}
	f.conn.Close()
	return errors.Join(f.stream.Close(), f.dead.Close())
}

// stopForwarders stops fs and returns the first error.
func stopForwarders(fs []*forwarder, log *slog.Logger) error {
	var errs []error
	for _, f := range fs {
		if err := f.stop(log.With("subsystem", "uplink", "uplink", f.name)); err != nil {
			errs = append(errs, fmt.Errorf("uplink %s: %w", f.name, err))
		}
	}
	if len(fs) > 0 {
		if err := fs[0].sched.Close(); err != nil {
			errs = append(errs, fmt.Errorf("uplinks: %w", err))
		}
	}
	return errors.Join(errs...)
}

// status returns the forwarder's counters with its link's state.
func (f *forwarder) status() UplinkStatus {
	ls := f.link.Status()
	return UplinkStatus{Status: f.ob.Status(), LinkState: ls.State.String(), LinkSince: ls.StateSince, Limits: f.sched.Status()}
}

// linkHub is the path toward the hub an outbox uses: publishes through the
// broker reach the link's forwarding subscriptions for the hub's
// interest, and the reply inbox, subscribed on the same connection, is
// local interest the link announces to the hub.
type linkHub struct {
	link  *leaf.Link
	conn  *server.Conn
	probe *hubTimeProbe // asks the hub's time when ready; nil without hub_domain
}

// WaitReady implements outbox.Hub: the link is registered, and a PING
// round trip made sure the hub holds the reply interest and the link has
// the hub's interest.
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
