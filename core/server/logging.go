package server

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// Rate limits of the WARN lines clients cause: each kind may log
// warnBurst lines at once and then one per warnRefill.
const (
	warnBurst  = 10
	warnRefill = time.Second
)

// logLimiter is a token bucket for one kind of log line. Lines over the
// limit are counted, and the next line it lets through reports the count
// ("suppressed"), so nothing is hidden without a trace. It reads the time
// with time.Now, so tests control it with testing/synctest. Its methods
// are safe for concurrent use.
type logLimiter struct {
	burst int           // bucket size
	every time.Duration // one token comes back per every

	mu         sync.Mutex
	tokens     int
	last       time.Time // when tokens were last refilled; zero before the first line
	suppressed int       // lines dropped since the last one logged
}

func newLogLimiter(burst int, every time.Duration) *logLimiter {
	return &logLimiter{burst: burst, every: every}
}

// allow reports whether a line may be logged now and, if so, how many
// lines of its kind were suppressed since the previous one.
func (l *logLimiter) allow() (ok bool, suppressed int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens, l.last = l.burst, now
	}
	if n := int(now.Sub(l.last) / l.every); n > 0 {
		l.tokens = min(l.burst, l.tokens+n)
		l.last = l.last.Add(time.Duration(n) * l.every)
	}
	if l.tokens == 0 {
		l.suppressed++
		return false, 0
	}
	if l.tokens == l.burst {
		// A full bucket stops filling; refills count from now.
		l.last = now
	}
	l.tokens--
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// warnLimited logs msg at WARN with args unless lim holds it back; a line
// after suppressed ones carries their number as "suppressed". args is
// built only when the line is logged.
func (s *Server) warnLimited(lim *logLimiter, msg string, args func() []any) {
	if !s.log.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	ok, suppressed := lim.allow()
	if !ok {
		return
	}
	a := args()
	if suppressed > 0 {
		a = append(a, "suppressed", suppressed)
	}
	s.log.Warn(msg, a...)
}

// debugEnabled reports whether DEBUG lines are logged, so that callers
// build the attributes of connection lines only when they are.
func (s *Server) debugEnabled() bool {
	return s.log.Enabled(context.Background(), slog.LevelDebug)
}

// remoteAddr returns the client's address as host:port.
func (c *client) remoteAddr() string {
	if c.host == "" {
		return c.conn.RemoteAddr().String()
	}
	return net.JoinHostPort(c.host, strconv.Itoa(c.port))
}

// logCreated logs a new client connection, before its CONNECT.
func (c *client) logCreated() {
	if c.srv.debugEnabled() {
		c.srv.log.Debug("client connection created", "cid", c.cid, "addr", c.remoteAddr())
	}
}

// logConnected logs an accepted CONNECT: who the client is.
func (c *client) logConnected() {
	if !c.srv.debugEnabled() {
		return
	}
	c.mu.Lock()
	co := c.connectOpts
	acc := c.acc.name
	c.mu.Unlock()
	args := []any{"cid", c.cid, "addr", c.remoteAddr(), "name", co.Name, "lang", co.Lang, "version", co.Version, "account", acc}
	if id := c.ident.Load(); id != nil && id.User != "" {
		args = append(args, "user", id.User)
	}
	c.srv.log.Debug("client connected", args...)
}

// logClosed logs the end of a client connection and why it ended.
func (c *client) logClosed() {
	if !c.srv.debugEnabled() {
		return
	}
	c.mu.Lock()
	name, reason := c.connectOpts.Name, c.reason
	c.mu.Unlock()
	args := []any{"cid", c.cid, "addr", c.remoteAddr(), "name", name}
	if id := c.ident.Load(); id != nil && id.User != "" {
		args = append(args, "user", id.User)
	}
	args = append(args, "reason", reason.String())
	c.srv.log.Debug("client connection closed", args...)
}

// userArgs returns the log attributes naming the client and its user.
func (c *client) userArgs() []any {
	c.mu.Lock()
	name, acc := c.connectOpts.Name, c.acc
	c.mu.Unlock()
	args := []any{"cid", c.cid, "addr", c.remoteAddr(), "name", name}
	if id := c.ident.Load(); id != nil {
		args = append(args, "user", id.User, "account", id.Account)
	} else if acc != nil {
		args = append(args, "account", acc.name)
	}
	return args
}

// logPubViolation warns that the client published where it may not:
// to subj, or, when reply is set, with a reply subject it may not use.
func (c *client) logPubViolation(subj, reply []byte) {
	c.srv.warnLimited(c.srv.permWarns, "permission violation", func() []any {
		args := append(c.userArgs(), "op", "publish", "subject", string(subj))
		if reply != nil {
			args = append(args, "reply", string(reply))
		}
		return args
	})
}

// logSubViolation warns that the client subscribed where it may not.
func (c *client) logSubViolation(subj, queue string) {
	c.srv.warnLimited(c.srv.permWarns, "permission violation", func() []any {
		args := append(c.userArgs(), "op", "subscribe", "subject", subj)
		if queue != "" {
			args = append(args, "queue", queue)
		}
		return args
	})
}
