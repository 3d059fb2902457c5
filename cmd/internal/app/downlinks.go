package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/store/jetstream"
	"github.com/leafbox/leafbox/store/jsapi"
)

// localPubAckTimeout bounds the wait for a local stream's PubAck when a
// downlink delivers into it.
const localPubAckTimeout = 5 * time.Second

// consumer is one running downlink: its in-process connection (hub inbox
// and local deliveries) and the downlink over it.
type consumer struct {
	name string
	link *leaf.Link
	conn *server.Conn
	dl   *downlink.Downlink
	// interest, on the first downlink only, is shared by all.
	interest *localInterest
}

// DownlinkStatus is a downlink's counters with the state of its link.
type DownlinkStatus struct {
	downlink.Status
	// LinkState is the state of the leafnode link it consumes over, and
	// LinkSince when the link entered it.
	LinkState string
	LinkSince time.Time
}

// startDownlinks starts every downlink over the link of its leafnode
// remote (ups, one per remote), delivering into the remote's local
// account. On error it stops what it started. It runs before the links
// start, so the inbox interest is announced with the link's first
// connection.
func startDownlinks(cfg *config.Config, srv *server.Server, js *jetstream.Engine, ups []*uplink, log *slog.Logger) ([]*consumer, error) {
	var out []*consumer
	for r, up := range ups {
		account := cfg.LeafNodes.Remotes[r].Account
		rjs := js
		if account != "" && account != auth.GlobalAccount {
			rjs = nil // the JetStream engine serves the global account only
		}
		var interest *localInterest
		for i := range cfg.Downlinks {
			if cfg.RemoteIndex(cfg.Downlinks[i].Remote) != r {
				continue
			}
			first := interest == nil
			if first {
				interest = watchLocalInterest(srv, account, up.local.conns)
			}
			c, err := startDownlink(srv, &cfg.Downlinks[i], account, rjs, interest, up.link, log)
			if err != nil {
				if first {
					interest.cancel()
				}
				stopDownlinks(out)
				return nil, fmt.Errorf("downlinks[%d]: %w", i, err)
			}
			if first {
				c.interest = interest // stopped with the remote's first downlink
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func startDownlink(srv *server.Server, d *config.DownlinkConfig, account string, js *jetstream.Engine, interest *localInterest,
	link *leaf.Link, log *slog.Logger) (*consumer, error) {
	conn := srv.InProcess(account)
	conn.SetNoEcho()
	c := &consumer{name: d.Name, link: link, conn: conn}
	local := &localDelivery{conn: conn, js: js, interest: interest, idPrefix: d.Name + "."}
	var err error
	c.dl, err = downlink.New(linkHub{link: link, conn: conn}, local, downlink.Config{
		Name:           d.Name,
		Stream:         d.Stream,
		Durable:        d.Durable,
		Domain:         d.HubDomain,
		FilterSubjects: d.FilterSubjects,
		HubPrefix:      d.HubSubjectPrefix,
		LocalPrefix:    d.LocalSubjectPrefix,
		MaxAckPending:  d.MaxAckPending,
		Batch:          d.Batch,
		AckWait:        time.Duration(d.AckWait),
		MaxDeliver:     d.MaxDeliver,
		Expires:        time.Duration(d.Expires),
		Logger:         log.With("subsystem", "downlink"),
	})
	if err == nil {
		_, err = conn.Subscribe(c.dl.InboxPrefix()+">", "", func(m server.Msg) {
			c.dl.HandleMsg(string(m.Subject), string(m.Reply), m.Header, m.Data)
		})
	}
	if err == nil {
		local.inbox = "_INBOX.DLL." + strings.TrimSuffix(strings.TrimPrefix(c.dl.InboxPrefix(), "_INBOX.DL."), ".") + "."
		_, err = conn.Subscribe(local.inbox+">", "", local.handleReply)
	}
	if err == nil {
		err = c.dl.Start(context.Background())
	}
	if err != nil {
		c.stop()
		return nil, err
	}
	log.Info("downlink started", "subsystem", "downlink", "downlink", d.Name, "stream", d.Stream,
		"domain", d.HubDomain, "durable", d.Durable, "filter_subjects", []string(d.FilterSubjects))
	return c, nil
}

// stop stops the downlink and closes its connection.
func (c *consumer) stop() {
	if c.dl != nil {
		_ = c.dl.Close()
	}
	c.conn.Close()
	if c.interest != nil {
		c.interest.cancel()
	}
}

// stopDownlinks stops every downlink of cs.
func stopDownlinks(cs []*consumer) {
	for _, c := range cs {
		c.stop()
	}
}

// status returns the downlink's counters with its link's state.
func (c *consumer) status() DownlinkStatus {
	ls := c.link.Status()
	return DownlinkStatus{Status: c.dl.Status(), LinkState: ls.State.String(), LinkSince: ls.StateSince}
}

// errNoReceiver means no local subscriber or stream took a message.
var errNoReceiver = errors.New("no local subscriber or stream for the subject")

// localDelivery publishes a downlink's messages on the gateway: into a
// local stream when one captures the subject (waiting for its PubAck,
// with the message's id as Nats-Msg-Id so that a redelivery is stored
// once), else to the subscribers, at least one of which must receive it.
type localDelivery struct {
	conn     *server.Conn
	js       *jetstream.Engine // nil without JetStream in the account
	interest *localInterest
	idPrefix string
	inbox    string // PubAck inbox prefix, ending in '.'

	next    atomic.Uint64
	mu      sync.Mutex
	waiters map[string]chan []byte
}

var _ downlink.Local = (*localDelivery)(nil)

// Deliver implements downlink.Local.
func (l *localDelivery) Deliver(ctx context.Context, m downlink.Msg) error {
	if !l.captured(m.Subject) {
		// The links' subscriptions for hub interest would take it too,
		// but they never send it on (deny_exports), so they do not count.
		if !l.interest.has(m.Subject) || l.conn.Publish(m.Subject, "", m.Header, m.Data) == 0 {
			return errNoReceiver
		}
		return nil
	}
	// Expectations the hub publisher set were for the hub stream; a
	// local stream would refuse the message for them every time.
	hdr := withoutExpectations(m.Header)
	if !proto.HasHeaderFold(hdr, "Nats-Msg-Id") {
		hdr = proto.AppendHeader(nil, hdr, "Nats-Msg-Id", l.idPrefix+m.ID)
	}
	reply := l.inbox + strconv.FormatUint(l.next.Add(1), 10)
	ch := make(chan []byte, 1)
	l.mu.Lock()
	if l.waiters == nil {
		l.waiters = map[string]chan []byte{}
	}
	l.waiters[reply] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiters, reply)
		l.mu.Unlock()
	}()
	if l.conn.Publish(m.Subject, reply, hdr, m.Data) == 0 {
		return errNoReceiver
	}
	timer := time.NewTimer(localPubAckTimeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no PubAck from the local stream within %v", localPubAckTimeout)
	case data := <-ch:
		ack, e, err := jsapi.DecodePubAck(data)
		if err != nil {
			return fmt.Errorf("invalid local PubAck %q", data)
		}
		if e != nil {
			return fmt.Errorf("local stream refused it: %d (%d) %s", e.Code, e.ErrCode, e.Description)
		}
		if ack.Stream == "" {
			return fmt.Errorf("invalid local PubAck %q", data)
		}
		return nil
	}
}

// handleReply takes a local stream's PubAck.
func (l *localDelivery) handleReply(m server.Msg) {
	l.mu.Lock()
	ch := l.waiters[string(m.Subject)]
	l.mu.Unlock()
	if ch != nil {
		select {
		case ch <- append([]byte(nil), m.Data...):
		default:
		}
	}
}

// captured reports whether a local stream stores messages on subj.
func (l *localDelivery) captured(subj string) bool {
	if l.js == nil {
		return false
	}
	for _, st := range l.js.Streams(false) {
		subjects := st.Config.Subjects
		if len(subjects) == 0 {
			subjects = []string{st.Name}
		}
		for _, s := range subjects {
			if subject.Match(s, subj) {
				return true
			}
		}
	}
	return false
}

// withoutExpectations returns the header block hdr without its
// Nats-Expected-* fields (any case); hdr itself when it has none.
func withoutExpectations(hdr []byte) []byte {
	return proto.DeleteHeaders(hdr, func(name []byte) bool { return proto.HeaderNameHasPrefix(name, "Nats-Expected-") })
}

// downlinkInfo maps a downlink's status to its /uplinkz entry.
func downlinkInfo(st DownlinkStatus) monitor.DownlinkInfo {
	di := monitor.DownlinkInfo{
		Name:        st.Name,
		State:       string(st.State),
		LinkState:   st.LinkState,
		Stream:      st.Stream,
		Durable:     st.Durable,
		Delivered:   st.Delivered,
		Acked:       st.Acked,
		Redelivered: st.Redelivered,
		Duplicates:  st.Duplicates,
		Failed:      st.Failed,
		Skipped:     st.Skipped,
		Resends:     st.Resends,
		Pending:     st.Pending,
		LastSeq:     st.LastSeq,
		LastError:   st.LastError,
	}
	if !st.LastErrorAt.IsZero() {
		at := st.LastErrorAt.UTC()
		di.LastErrorAt = &at
	}
	return di
}

// Downlinks implements monitor.DownlinkProvider: one entry per running
// downlink.
func (m appMonitor) Downlinks() []monitor.DownlinkInfo {
	if m.downlinkStatus == nil {
		return nil
	}
	sts := m.downlinkStatus()
	if len(sts) == 0 {
		return nil
	}
	out := make([]monitor.DownlinkInfo, len(sts))
	for i, st := range sts {
		out[i] = downlinkInfo(st)
	}
	return out
}

// DownlinkStatus returns the counters of every downlink, in configuration
// order; nil when there are none or the App is not running.
func (a *App) DownlinkStatus() []DownlinkStatus {
	a.fwdMu.Lock()
	cs := a.consumers
	a.fwdMu.Unlock()
	out := make([]DownlinkStatus, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.status())
	}
	return out
}

// stopDownlinks stops the downlinks, once.
func (a *App) stopDownlinks() {
	a.fwdMu.Lock()
	cs := a.consumers
	a.consumers = nil
	a.fwdMu.Unlock()
	stopDownlinks(cs)
}

// localInterest counts an account's subscriptions other than those the
// leafnode links make for hub interest, so that a downlink knows whether
// a subject has a local receiver.
type localInterest struct {
	leafs  *leafConns
	cancel func()

	mu   sync.Mutex
	subs map[string]int // subject pattern → subscriptions
}

// watchLocalInterest starts counting the subscriptions of account.
func watchLocalInterest(srv *server.Server, account string, leafs *leafConns) *localInterest {
	li := &localInterest{leafs: leafs, subs: map[string]int{}}
	li.mu.Lock()
	defer li.mu.Unlock()
	existing, cancel := srv.WatchInterest(account, li.apply)
	li.cancel = cancel
	for _, ev := range existing {
		li.applyLocked(ev)
	}
	return li
}

// apply runs under the broker's locks: it only updates the counts.
func (li *localInterest) apply(ev server.InterestEvent) {
	li.mu.Lock()
	li.applyLocked(ev)
	li.mu.Unlock()
}

func (li *localInterest) applyLocked(ev server.InterestEvent) {
	if li.leafs.has(ev.Origin) {
		return
	}
	switch {
	case ev.Added:
		li.subs[ev.Subject]++
	case li.subs[ev.Subject] > 1:
		li.subs[ev.Subject]--
	default:
		delete(li.subs, ev.Subject)
	}
}

// has reports whether a subscription other than a link's matches the
// literal subject subj.
func (li *localInterest) has(subj string) bool {
	li.mu.Lock()
	defer li.mu.Unlock()
	for pattern := range li.subs {
		if subject.Match(pattern, subj) {
			return true
		}
	}
	return false
}

// writeDownlinkMetrics writes the leafbox_downlink_* families, one sample
// per downlink labelled downlink="<name>". It writes nothing without
// downlinks.
func writeDownlinkMetrics(mw *monitor.MetricWriter, sts []DownlinkStatus) {
	if len(sts) == 0 {
		return
	}
	family := perItemFamily(mw, sts, "downlink", func(st DownlinkStatus) string { return st.Name })
	family("leafbox_downlink_delivered_total", monitor.Counter, "Hub messages delivered locally.",
		func(st DownlinkStatus) float64 { return float64(st.Delivered) })
	family("leafbox_downlink_acked_total", monitor.Counter, "Acks the hub confirmed.",
		func(st DownlinkStatus) float64 { return float64(st.Acked) })
	family("leafbox_downlink_redelivered_total", monitor.Counter, "Hub messages received more than once.",
		func(st DownlinkStatus) float64 { return float64(st.Redelivered) })
	family("leafbox_downlink_failed_total", monitor.Counter, "Local deliveries that failed and were left to the hub to resend.",
		func(st DownlinkStatus) float64 { return float64(st.Failed) })
	family("leafbox_downlink_resends_total", monitor.Counter, "Times the hub was asked to resend at once after a link loss.",
		func(st DownlinkStatus) float64 { return float64(st.Resends) })
	family("leafbox_downlink_pending_messages", monitor.Gauge, "Hub messages after the last one received, as the hub reported.",
		func(st DownlinkStatus) float64 { return float64(st.Pending) })
}

// Lost implements downlink.LinkWatcher: the channel is closed when the
// link's connection up at the call drops.
func (h linkHub) Lost(ctx context.Context) <-chan struct{} {
	return h.link.Lost(ctx)
}
