package monitor

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DefaultConnListSize is the default limit of /connz.
const DefaultConnListSize = 1024

// globalAccount is the account of connections that name none. nats-server
// leaves it out of /connz, and so does the monitor.
const globalAccount = "$G"

// Connz is the /connz document: one page of connections.
type Connz struct {
	ID       string     `json:"server_id"`       // ID is the server's id.
	Now      time.Time  `json:"now"`             // Now is the time of the snapshot.
	NumConns int        `json:"num_connections"` // NumConns is the number of connections on this page.
	Total    int        `json:"total"`           // Total is the number of connections that passed the filters.
	Offset   int        `json:"offset"`          // Offset is the index of the page's first connection.
	Limit    int        `json:"limit"`           // Limit is the page size.
	Conns    []ConnInfo `json:"connections"`     // Conns is the page; never null.
}

// ConnInfo describes one connection in /connz.
type ConnInfo struct {
	Cid            uint64        `json:"cid"`                                 // Cid is the connection id.
	Kind           string        `json:"kind,omitempty"`                      // Kind is "Client" or "Leafnode".
	Type           string        `json:"type,omitempty"`                      // Type is "nats" for plain clients.
	IP             string        `json:"ip"`                                  // IP is the peer's address.
	Port           int           `json:"port"`                                // Port is the peer's port.
	Start          time.Time     `json:"start"`                               // Start is when the connection was accepted.
	LastActivity   time.Time     `json:"last_activity"`                       // LastActivity is when it last moved a message.
	Stop           *time.Time    `json:"stop,omitempty"`                      // Stop is when it closed; nil while open.
	Reason         string        `json:"reason,omitempty"`                    // Reason says why it closed.
	RTT            string        `json:"rtt,omitempty"`                       // RTT is the round-trip time as a Go duration string.
	Uptime         string        `json:"uptime"`                              // Uptime is how long it was or has been open.
	Idle           string        `json:"idle"`                                // Idle is how long it had been inactive.
	Pending        int           `json:"pending_bytes"`                       // Pending is the number of bytes queued for the peer.
	InMsgs         int64         `json:"in_msgs"`                             // InMsgs counts messages received.
	OutMsgs        int64         `json:"out_msgs"`                            // OutMsgs counts messages sent.
	InBytes        int64         `json:"in_bytes"`                            // InBytes counts payload bytes received.
	OutBytes       int64         `json:"out_bytes"`                           // OutBytes counts payload bytes sent.
	Stalls         int64         `json:"stalls,omitempty"`                    // Stalls counts producer stalls.
	NumSubs        uint32        `json:"subscriptions"`                       // NumSubs is the number of subscriptions.
	Name           string        `json:"name,omitempty"`                      // Name is the client's name.
	Lang           string        `json:"lang,omitempty"`                      // Lang is the client library's language.
	Version        string        `json:"version,omitempty"`                   // Version is the client library's version.
	TLSVersion     string        `json:"tls_version,omitempty"`               // TLSVersion is the negotiated TLS version.
	TLSCipher      string        `json:"tls_cipher_suite,omitempty"`          // TLSCipher is the negotiated cipher suite.
	TLSPeerCerts   []TLSPeerCert `json:"tls_peer_certs,omitempty"`            // TLSPeerCerts describes client certificates (auth=true).
	TLSFirst       bool          `json:"tls_first,omitempty"`                 // TLSFirst reports a TLS handshake before INFO.
	AuthorizedUser string        `json:"authorized_user,omitempty"`           // AuthorizedUser is the user (auth=true).
	Account        string        `json:"account,omitempty"`                   // Account is the account unless global (auth=true).
	Subs           []string      `json:"subscriptions_list,omitempty"`        // Subs lists subscribed subjects (subs=true).
	SubsDetail     []SubDetail   `json:"subscriptions_list_detail,omitempty"` // SubsDetail describes subscriptions (subs=detail).
}

// TLSPeerCert describes one certificate a TLS peer presented.
type TLSPeerCert struct {
	Subject          string `json:"subject,omitempty"`     // Subject is the certificate's subject.
	SubjectPKISha256 string `json:"spki_sha256,omitempty"` // SubjectPKISha256 is the hex SHA-256 of the public key info.
	CertSha256       string `json:"cert_sha256,omitempty"` // CertSha256 is the hex SHA-256 of the certificate.
}

// SortOpt orders /connz. Sorting by cid, start, uptime and reason is
// ascending; every other order is descending. Ties are broken by ascending
// cid.
type SortOpt string

// The /connz sort options, spelled as the sort query parameter takes them.
const (
	ByCid      SortOpt = "cid"        // ByCid orders by connection id.
	ByStart    SortOpt = "start"      // ByStart orders by start time, which is cid order.
	BySubs     SortOpt = "subs"       // BySubs orders by number of subscriptions.
	ByPending  SortOpt = "pending"    // ByPending orders by bytes queued.
	ByOutMsgs  SortOpt = "msgs_to"    // ByOutMsgs orders by messages sent.
	ByInMsgs   SortOpt = "msgs_from"  // ByInMsgs orders by messages received.
	ByOutBytes SortOpt = "bytes_to"   // ByOutBytes orders by bytes sent.
	ByInBytes  SortOpt = "bytes_from" // ByInBytes orders by bytes received.
	ByLast     SortOpt = "last"       // ByLast orders by last activity, latest first.
	ByIdle     SortOpt = "idle"       // ByIdle orders by idle time, longest first.
	ByUptime   SortOpt = "uptime"     // ByUptime orders by uptime, shortest first.
	ByStop     SortOpt = "stop"       // ByStop orders closed connections by stop time, latest first.
	ByReason   SortOpt = "reason"     // ByReason orders closed connections by reason.
	ByRTT      SortOpt = "rtt"        // ByRTT orders by round-trip time, slowest first.
)

// Valid reports whether s is a known sort option or empty (cid order).
func (s SortOpt) Valid() bool {
	switch s {
	case "", ByCid, ByStart, BySubs, ByPending, ByOutMsgs, ByInMsgs, ByOutBytes,
		ByInBytes, ByLast, ByIdle, ByUptime, ByStop, ByReason, ByRTT:
		return true
	}
	return false
}

// ConnzOptions select, order and page /connz.
type ConnzOptions struct {
	Sort                SortOpt   // Sort orders the result (query sort).
	Username            bool      // Username reports authorized_user and account (query auth).
	Subscriptions       bool      // Subscriptions lists subjects (query subs=true).
	SubscriptionsDetail bool      // SubscriptionsDetail lists details (query subs=detail).
	Offset              int       // Offset skips that many connections (query offset).
	Limit               int       // Limit bounds the page; 0 means DefaultConnListSize (query limit).
	CID                 uint64    // CID selects one connection (query cid).
	State               ConnState // State selects open, closed or all connections (query state).
	User                string    // User selects connections of one user (query user).
	Account             string    // Account selects connections of one account (query acc).
}

// normalize applies the defaults and rejects combinations nats-server
// rejects, with its error texts.
func (o *ConnzOptions) normalize() error {
	if o.Sort == "" {
		o.Sort = ByCid
	}
	if !o.Sort.Valid() {
		return fmt.Errorf("invalid sorting option: %s", o.Sort)
	}
	if o.Sort == ByStop && o.State != ConnClosed {
		return errors.New("sort by stop only valid on closed connections")
	}
	if o.Sort == ByReason && o.State != ConnClosed {
		return errors.New("sort by reason only valid on closed connections")
	}
	o.Offset = max(o.Offset, 0)
	if o.Limit <= 0 {
		o.Limit = DefaultConnListSize
	}
	if o.CID > 0 {
		o.Limit = 1
	}
	return nil
}

// selects reports whether s passes o's state, cid, account and user filters.
// The user and account filters apply whether or not auth is requested, as
// in nats-server.
func (o *ConnzOptions) selects(s *ConnSnapshot) bool {
	closed := !s.Stop.IsZero()
	switch {
	case o.State == ConnOpen && closed, o.State == ConnClosed && !closed:
		return false
	case o.CID != 0 && s.Cid != o.CID:
		return false
	case o.Account != "" && s.Account != o.Account:
		return false
	case o.User != "" && s.User != o.User:
		return false
	}
	return true
}

// buildConnz filters snaps by o, sorts and pages them, and shapes the page.
// o must be normalized. snaps is only read.
func buildConnz(id string, now time.Time, o ConnzOptions, snaps []ConnSnapshot) *Connz {
	sel := make([]*ConnSnapshot, 0, len(snaps))
	for i := range snaps {
		if o.selects(&snaps[i]) {
			sel = append(sel, &snaps[i])
		}
	}
	sortConns(sel, o.Sort, now)

	lo := min(o.Offset, len(sel))
	hi := lo + min(o.Limit, len(sel)-lo)
	cz := &Connz{
		ID:     id,
		Now:    now.UTC(),
		Total:  len(sel),
		Offset: o.Offset,
		Limit:  o.Limit,
		Conns:  make([]ConnInfo, 0, hi-lo),
	}
	for _, s := range sel[lo:hi] {
		cz.Conns = append(cz.Conns, newConnInfo(s, now, o))
	}
	cz.NumConns = len(cz.Conns)
	return cz
}

// refTime is the instant a connection's uptime and idle time are measured
// at: its stop time once closed, now while open.
func refTime(s *ConnSnapshot, now time.Time) time.Time {
	if s.Stop.IsZero() {
		return now
	}
	return s.Stop
}

// sortConns orders sel by opt; equal keys keep ascending cid order.
func sortConns(sel []*ConnSnapshot, opt SortOpt, now time.Time) {
	slices.SortFunc(sel, func(a, b *ConnSnapshot) int { return cmp.Compare(a.Cid, b.Cid) })
	var key func(a, b *ConnSnapshot) int
	switch opt {
	case BySubs:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.NumSubs, a.NumSubs) }
	case ByPending:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.Pending, a.Pending) }
	case ByOutMsgs:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.OutMsgs, a.OutMsgs) }
	case ByInMsgs:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.InMsgs, a.InMsgs) }
	case ByOutBytes:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.OutBytes, a.OutBytes) }
	case ByInBytes:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.InBytes, a.InBytes) }
	case ByLast:
		key = func(a, b *ConnSnapshot) int { return b.LastActivity.Compare(a.LastActivity) }
	case ByIdle:
		key = func(a, b *ConnSnapshot) int {
			return cmp.Compare(refTime(b, now).Sub(b.LastActivity), refTime(a, now).Sub(a.LastActivity))
		}
	case ByUptime:
		key = func(a, b *ConnSnapshot) int {
			return cmp.Compare(refTime(a, now).Sub(a.Start), refTime(b, now).Sub(b.Start))
		}
	case ByStop:
		key = func(a, b *ConnSnapshot) int { return b.Stop.Compare(a.Stop) }
	case ByReason:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(a.Reason, b.Reason) }
	case ByRTT:
		key = func(a, b *ConnSnapshot) int { return cmp.Compare(b.RTT, a.RTT) }
	default: // ByCid, ByStart: done above.
		return
	}
	slices.SortStableFunc(sel, key)
}

// newConnInfo shapes one snapshot as /connz reports it.
func newConnInfo(s *ConnSnapshot, now time.Time, o ConnzOptions) ConnInfo {
	ref := refTime(s, now)
	ci := ConnInfo{
		Cid:          s.Cid,
		Kind:         s.Kind,
		Type:         s.Type,
		IP:           s.IP,
		Port:         s.Port,
		Start:        s.Start,
		LastActivity: s.LastActivity,
		Reason:       s.Reason,
		RTT:          formatRTT(s.RTT),
		Uptime:       formatUptime(ref.Sub(s.Start)),
		Idle:         formatUptime(ref.Sub(s.LastActivity)),
		Pending:      s.Pending,
		InMsgs:       s.InMsgs,
		OutMsgs:      s.OutMsgs,
		InBytes:      s.InBytes,
		OutBytes:     s.OutBytes,
		Stalls:       s.Stalls,
		NumSubs:      uint32(max(s.NumSubs, 0)),
		Name:         s.Name,
		Lang:         s.Lang,
		Version:      s.Version,
		TLSVersion:   s.TLSVersion,
		TLSCipher:    s.TLSCipher,
		TLSFirst:     s.TLSFirst,
	}
	if ci.Kind == "" {
		ci.Kind = "Client"
	}
	if ci.Type == "" && ci.Kind == "Client" {
		ci.Type = "nats"
	}
	if ci.NumSubs == 0 {
		ci.NumSubs = uint32(len(s.Subs))
	}
	if !s.Stop.IsZero() {
		stop := s.Stop
		ci.Stop = &stop
	}
	if len(s.Subs) > 0 && (o.Subscriptions || o.SubscriptionsDetail) {
		// Sort a copy: the provider may share s.Subs between requests.
		subs := slices.Clone(s.Subs)
		sortSubs(subs)
		if o.SubscriptionsDetail {
			for i := range subs {
				// nats-server names no account inside a connection.
				subs[i].Account = ""
			}
			ci.SubsDetail = subs
		} else {
			ci.Subs = make([]string, len(subs))
			for i := range subs {
				ci.Subs[i] = subs[i].Subject
			}
		}
	}
	if o.Username {
		ci.AuthorizedUser = s.User
		if s.Account != globalAccount {
			ci.Account = s.Account
		}
		ci.TLSPeerCerts = s.TLSPeerCerts
	}
	return ci
}

// formatRTT formats a round-trip time as nats-server does: truncated to
// microseconds between one microsecond and one millisecond.
func formatRTT(rtt time.Duration) string {
	if rtt > time.Microsecond && rtt < time.Millisecond {
		rtt = rtt.Truncate(time.Microsecond)
	}
	return rtt.String()
}
