package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/storedir"
	"github.com/leafbox/leafbox/store/vfs"
)

// flushTimeout bounds the round trip that tells an uplink the hub has its
// reply interest.
const flushTimeout = 5 * time.Second

// uplinks checks the uplinks block.
func (v *validator) uplinks() {
	c := v.c
	v.uplinkLimits()
	if len(c.Uplinks) == 0 {
		return
	}
	if c.LeafNodes == nil || len(c.LeafNodes.Remotes) == 0 {
		v.errf("uplinks", "need a leafnodes remote to forward over")
	}
	if c.stateDir == "" {
		v.errf("uplinks", "no directory for the outboxes: set jetstream.store_dir or $STATE_DIRECTORY")
	}
	names := map[string]bool{}
	for i, u := range c.Uplinks {
		path := fmt.Sprintf("uplinks[%d]", i)
		switch {
		case u.Name == "":
			v.errf(path+".name", "is required")
		case jsapi.CheckName(u.Name) != nil:
			v.errf(path+".name", "%q is not a valid name: %v", u.Name, jsapi.CheckName(u.Name))
		case len(u.Name) > storedir.MaxUplinkNameLen:
			v.errf(path+".name", "%q is too long: at most %d bytes (it names the uplink's state file)", u.Name, storedir.MaxUplinkNameLen)
		case names[u.Name]:
			v.errf(path+".name", "%q is used twice", u.Name)
		}
		names[u.Name] = true
		if u.Remote != "" && c.remoteIndex(u.Remote) < 0 {
			v.errf(path+".remote", "no leafnodes remote is named %q", u.Remote)
		}
		if len(u.Subjects) == 0 {
			v.errf(path+".subjects", "needs at least one subject")
		}
		for j, s := range u.Subjects {
			at := fmt.Sprintf("%s.subjects[%d]", path, j)
			if !v.c.index.has(at) {
				at = path + ".subjects"
			}
			if !subject.Valid(s) {
				v.errf(at, "invalid subject %q", s)
			}
		}
		p := u.HubSubjectPrefix
		if p == "" || !strings.HasSuffix(p, ".") || !subject.ValidLiteral(p+"x") {
			v.errf(path+".hub_subject_prefix", "%q must be one or more literal tokens ending in '.', such as \"site1.\"", p)
		} else {
			// A hub subject that an uplink captures would be captured again.
			for _, s := range u.Subjects {
				for _, other := range c.Uplinks {
					for _, cs := range other.Subjects {
						if subject.Valid(s) && subject.Valid(cs) && subject.Overlap(p+s, cs) {
							v.errf(path+".hub_subject_prefix", "hub subject %q overlaps captured subject %q", p+s, cs)
						}
					}
				}
			}
		}
		if err := jsapi.CheckName(u.Stream); u.Stream != "" && err != nil {
			v.errf(path+".stream", "%q is not a stream name: %v", u.Stream, err)
		}
		if u.MaxBytes < 0 {
			v.errf(path+".max_bytes", "must not be negative")
		}
		if u.MinFreeDisk < 0 {
			v.errf(path+".min_free_disk", "must not be negative")
		}
		if u.MaxMsgs < 0 {
			v.errf(path+".max_msgs", "must not be negative")
		}
		if u.MaxAge < 0 {
			v.errf(path+".max_age", "must not be negative")
		}
		if u.DeadLetterAfter < 0 {
			v.errf(path+".dead_letter_after", "must not be negative")
		}
		switch {
		case u.HubDomain == "":
		case !jsapi.ValidName(u.HubDomain):
			v.errf(path+".hub_domain", "%q is not a JetStream domain: %v", u.HubDomain, jsapi.CheckName(u.HubDomain))
		case u.Stream == "":
			v.errf(path+".hub_domain", "needs stream: the hub's time is read from that stream's info")
		case c.JetStream != nil && c.JetStream.Enabled && c.JetStream.Domain == u.HubDomain:
			v.errf(path+".hub_domain", "%q is this gateway's own jetstream.domain", u.HubDomain)
		}
		if _, ok := discardPolicy(u.Discard); !ok {
			v.errf(path+".discard", "%q is not old or new", u.Discard)
		}
		v.uplinkSchedule(path, u)
	}
}

// discardPolicy maps an uplink's discard setting to the store's.
func discardPolicy(s string) (store.DiscardPolicy, bool) {
	switch strings.ToLower(s) {
	case "", "old":
		return store.DiscardOld, true
	case "new":
		return store.DiscardNew, true
	}
	return 0, false
}

// outboxDir is where uplink u keeps its outbox.
func (c *Config) outboxDir(u *UplinkConfig) string { return c.layout().Outbox(u.Name) }

// deadLetterDir is where uplink u keeps the messages the hub refused for
// good (<store_dir>/deadletter/<uplink>).
func (c *Config) deadLetterDir(u *UplinkConfig) string { return c.layout().DeadLetter(u.Name) }

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
func startForwarders(cfg *Config, srv *server.Server, ups []*uplink, clk *clock.Clock, log *slog.Logger) ([]*forwarder, error) {
	if len(cfg.Uplinks) == 0 {
		return nil, nil
	}
	sched, err := openScheduler(cfg)
	if err != nil {
		return nil, fmt.Errorf("uplinks: %w", err)
	}
	var out []*forwarder
	for i := range cfg.Uplinks {
		r := cfg.remoteIndex(cfg.Uplinks[i].Remote) // Validate checked it
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

func startForwarder(cfg *Config, u *UplinkConfig, srv *server.Server, account string, link *leaf.Link, clk *clock.Clock, sched *outbox.Scheduler, log *slog.Logger) (*forwarder, error) {
	discard, _ := discardPolicy(u.Discard) // Validate checked it
	stream, err := filestore.Open(vfs.OS, cfg.outboxDir(u), filestore.Config{
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
	dead, err := filestore.Open(vfs.OS, cfg.deadLetterDir(u), filestore.Config{
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
		oc := outbox.Config{
			Name:       u.Name,
			ServerName: srv.Name(),
			HubPrefix:  u.HubSubjectPrefix,
			Stream:     u.Stream,
			Logger:     log.With("subsystem", "uplink"), // the outbox adds uplink=<name>
			Clock:      clk,
			MaxAge:     time.Duration(u.MaxAge),

			DeadLetter:      dead,
			DeadLetterAfter: u.DeadLetterAfter,
			HubDomain:       u.HubDomain,
		}
		if discard == store.DiscardOld {
			oc.DiskLow = diskLow(cfg.outboxDir(u), int64(u.MinFreeDisk))
		}
		scheduleConfig(cfg, u, sched, &oc)
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
		// is answered (syncCaptures); CaptureBytes allocates at most once.
		_, err = conn.Subscribe(s, "", func(m server.Msg) {
			_ = f.ob.CaptureBytes(m.Subject, m.Header, m.Data)
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
	flog.Info("uplink started", "dir", cfg.outboxDir(u), "subjects", []string(u.Subjects),
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
