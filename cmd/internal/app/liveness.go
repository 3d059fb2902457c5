package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/leafbox/leafbox/core/server"
)

// livenessAccount is the broker account the liveness round trip runs in:
// an account of its own, so that no client, uplink capture or hub link
// (which all live in configured accounts) ever sees the probes.
const livenessAccount = "$LEAFBOX"

// Liveness checks that a running App still does its work, for a service
// manager's watchdog: it is not the /healthz verdict (a link down or a
// stream that failed to load do not fail it, since restarting would not
// help), but what a restart would cure or must report. Make one with
// App.Liveness after Start; Close it after Shutdown.
type Liveness struct {
	a       *App
	conn    *server.Conn
	sub     *server.Subscription
	subject string
	sent    atomic.Uint64 // the last probe's sequence
	echoed  atomic.Uint64 // the last sequence the subscription received
}

// Liveness subscribes the round trip's subject and returns the checker.
func (a *App) Liveness() (*Liveness, error) {
	var token [8]byte
	_, _ = rand.Read(token[:]) // never fails (crypto/rand)
	l := &Liveness{a: a, conn: a.srv.InProcess(livenessAccount), subject: "_LEAFBOX.liveness." + hex.EncodeToString(token[:])}
	sub, err := l.conn.Subscribe(l.subject, "", func(m server.Msg) {
		if seq, err := strconv.ParseUint(string(m.Data), 10, 64); err == nil {
			l.echoed.Store(seq)
		}
	})
	if err != nil {
		l.conn.Close()
		return nil, fmt.Errorf("liveness: %w", err)
	}
	l.sub = sub
	return l, nil
}

// Check returns nil while the broker accepts connections (not shut down,
// not in lame duck), routes a message through its subscription table to an
// in-process subscriber and back, JetStream (when on) reports its streams,
// and the store directories take writes (the /healthz store probe, whose
// success is reused for 10s). It returns the first problem found.
//
// A wedged broker or stream makes Check block rather than fail: call it
// from a goroutine of its own with a deadline, one at a time, as
// systemd.Notifier.Watch does.
func (l *Liveness) Check() error {
	if err := l.a.srv.Ready(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	seq := l.sent.Add(1)
	if n := l.conn.Publish(l.subject, "", nil, strconv.AppendUint(nil, seq, 10)); n != 1 || l.echoed.Load() != seq {
		return fmt.Errorf("broker: the liveness probe was not routed back (delivered to %d subscribers)", n)
	}
	if l.a.js != nil {
		_ = l.a.js.Stats() // takes each stream's lock: blocks while one is wedged
	}
	if problems := l.a.probe.check(); len(problems) > 0 {
		return errors.New(problems[0].Error)
	}
	return nil
}

// Close removes the round trip's subscription.
func (l *Liveness) Close() {
	l.sub.Unsubscribe()
	l.conn.Close()
}
