package leaf

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
)

// session is one connection to a hub, from the dial to its end: the
// shared connection core plus what the solicited side adds. The session
// goroutine (Link.run) does the handshake and then reads; the writer
// goroutine is the only code that writes once the handshake is done.
// Local publishers append to the outbound buffer under mu.
type session struct {
	*connection
	link   *Link
	cfg    *Config
	remote remote

	// Owned by the session goroutine.
	hubSubs map[string]Subscription // local subscriptions per hub subject
	delay   time.Duration           // reconnect delay asked for by the hub

	// Set by the handshake, read-only afterwards.
	hubInfo       proto.Info
	remoteAccount string
	local         LocalConn
	hub           *hubInterest // changed by the session goroutine only

	perms atomic.Pointer[perms]

	numSubs atomic.Int64
}

func newSession(l *Link, r remote, conn net.Conn, started time.Time) *session {
	s := &session{
		connection: newConnection(conn, l.linkSettings(), started),
		link:       l,
		cfg:        &l.cfg,
		remote:     r,
		hubSubs:    make(map[string]Subscription),
		hub:        newHubInterest(),
	}
	// A new RTT is part of the link's status: wake its waiters.
	s.onRTT = func() {
		l.mu.Lock()
		l.notifyLocked()
		l.mu.Unlock()
	}
	return s
}

// handle processes one operation from the hub.
func (s *session) handle(op *proto.Op) error {
	if s.handleKeepalive(op) {
		return nil
	}
	switch op.Kind {
	case proto.OpLeafMsg:
		s.deliver(op)
	case proto.OpLeafSub:
		return s.hubSubscribe(op)
	case proto.OpLeafUnsub:
		s.hubUnsubscribe(op)
	case proto.OpInfo:
		var info proto.Info
		if err := json.Unmarshal(op.Arg, &info); err != nil {
			return fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
		}
		s.link.learnURLs(info.LeafNodeURLs, s.remote)
		if info.Import != nil || info.Export != nil {
			s.perms.Store(newPerms(s.cfg, info.Import, info.Export))
		}
	case proto.OpErr:
		text := string(op.Arg)
		s.link.log.Warn("leaf: hub error", "url", s.remote.redacted(), "error", text)
		s.link.setError(&HubError{Text: text})
		s.link.notePubViolation(text)
		if d := errorDelay(text); d > 0 {
			s.delay = d
		}
		if strings.Contains(text, loopText) {
			return ErrLoopDetected
		}
	case proto.OpOK:
	default:
		return fmt.Errorf("%w: unexpected %v", ErrProtocol, op.Kind)
	}
	return nil
}

// hubSubscribe handles LS+: the hub's interest, which local messages are
// forwarded to. The first entry on a subject subscribes locally.
func (s *session) hubSubscribe(op *proto.Op) error {
	subj := string(op.Subject)
	if subj == s.link.lds {
		// Our own loop-detection subject came back: tell the hub, close,
		// and wait before reconnecting, as nats-server does.
		s.delay = loopDelay
		text := fmt.Sprintf("Loop detected for leafnode account=%q. Delaying attempt to reconnect for %v", s.link.accountName(), loopDelay)
		s.link.log.Error("leaf: "+text, "url", s.remote.redacted())
		s.finish(proto.AppendErr(nil, text), ErrLoopDetected)
		return nil
	}
	if !s.perms.Load().canPublishPattern(subj) {
		return nil // we could never send there; nats-server's spoke ignores it
	}
	queue := string(op.Queue)
	first, err := s.hub.add(subj, queue, op.Weight)
	if err != nil {
		s.link.log.Warn("leaf: ignoring invalid hub interest", "subject", subj, "queue", queue)
		return nil
	}
	s.numSubs.Store(int64(s.hub.len()))
	if !first || strings.HasPrefix(subj, ldsPrefix) {
		return nil
	}
	sub, err := s.local.Subscribe(subj, func(m Msg) { s.forward(subj, m) })
	if err != nil {
		s.link.log.Warn("leaf: cannot subscribe locally for hub interest", "subject", subj, "error", err)
		return nil
	}
	s.hubSubs[subj] = sub
	return nil
}

// hubUnsubscribe handles LS-. The last entry on a subject unsubscribes
// locally.
func (s *session) hubUnsubscribe(op *proto.Op) {
	subj := string(op.Subject)
	last := s.hub.remove(subj, string(op.Queue))
	s.numSubs.Store(int64(s.hub.len()))
	if !last {
		return
	}
	if sub, ok := s.hubSubs[subj]; ok {
		delete(s.hubSubs, subj)
		sub.Unsubscribe()
	}
}
