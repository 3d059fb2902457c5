package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// logLines collects the lines a slog handler writes (one Write per
// record) and lets a test wait for one.
type logLines struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // receives a value after each line
}

func newLogLines() *logLines { return &logLines{added: make(chan struct{}, 1)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, strings.TrimSuffix(string(p), "\n"))
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return len(p), nil
}

// all returns every line so far.
func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// matching returns the lines containing every one of wants.
func (l *logLines) matching(wants ...string) []string {
	var out []string
	for _, line := range l.all() {
		if containsAll(line, wants...) {
			out = append(out, line)
		}
	}
	return out
}

// await waits for a line containing every one of wants and returns it.
func (l *logLines) await(t *testing.T, wants ...string) string {
	t.Helper()
	deadline := time.NewTimer(servertest.Timeout)
	defer deadline.Stop()
	for {
		if m := l.matching(wants...); len(m) > 0 {
			return m[0]
		}
		select {
		case <-l.added:
		case <-deadline.C:
			t.Fatalf("no log line with %q within %v; log:\n%s", wants, servertest.Timeout, strings.Join(l.all(), "\n"))
		}
	}
}

func containsAll(s string, wants ...string) bool {
	for _, w := range wants {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// newLogger returns a DEBUG logger in format ("text" or "json") writing
// to a new logLines.
func newLogger(format string) (*slog.Logger, *logLines) {
	lines := newLogLines()
	opts := &slog.HandlerOptions{Level: slog.LevelDebug}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(lines, opts)), lines
	}
	return slog.New(slog.NewTextHandler(lines, opts)), lines
}

func TestLogClientConnectAndClose(t *testing.T) {
	logger, lines := newLogger("text")
	s := servertest.Start(t, server.Options{Logger: logger})
	nc := connect(t, s, nats.Name("sensor-7"))
	cid, err := nc.GetClientID()
	require.NoError(t, err)
	cidAttr := "cid=" + strconv.FormatUint(cid, 10) + " "

	created := lines.await(t, "msg=\"client connection created\"", cidAttr)
	connected := lines.await(t, "msg=\"client connected\"", cidAttr)
	nc.Close()
	closed := lines.await(t, "msg=\"client connection closed\"", cidAttr)
	for _, line := range []string{created, connected, closed} {
		if !containsAll(line, "level=DEBUG", "addr=127.0.0.1:") {
			t.Errorf("line lacks level=DEBUG or the client's address: %s", line)
		}
	}
	if !strings.Contains(connected, "name=sensor-7") || !strings.Contains(connected, "lang=go") {
		t.Errorf("connected line lacks the client's name or lang: %s", connected)
	}
	if !containsAll(closed, "name=sensor-7", "reason=") {
		t.Errorf("closed line lacks the name or the reason: %s", closed)
	}

	// The reason is the one /connz shows: an orderly close by the client,
	c := servertest.Dial(t, s)
	c.Connect(`{"name":"raw-1","verbose":false}`)
	c.Close()
	lines.await(t, `msg="client connection closed"`, "name=raw-1", `reason="Client Closed"`)
	// or a close by the server.
	c = servertest.Dial(t, s)
	c.Expect("INFO ")
	c.Send("BOGUS\r\n")
	c.ExpectClosed()
	lines.await(t, "msg=\"client connection closed\"", `reason="Parse Error"`)
}

func TestLogConnectionsOnlyAtDebug(t *testing.T) {
	lines := newLogLines()
	logger := slog.New(slog.NewTextHandler(lines, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := servertest.Start(t, server.Options{Logger: logger})
	nc := connect(t, s, nats.Name("quiet"))
	nc.Close()
	// Shutdown closes every connection and waits for their goroutines,
	// so every line they would log has been written.
	require.NoError(t, s.Shutdown(t.Context()))
	if m := append(lines.matching(`msg="client connection`), lines.matching(`msg="client connected"`)...); len(m) > 0 {
		t.Fatalf("connection lines at INFO: %q", m)
	}
}

// secretAuthConfig has one user with a password and one nkey user.
func secretAuthConfig(t *testing.T) (cfg *auth.Config, userSeed string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	return &auth.Config{Users: []auth.User{
		{Name: "bob", Password: "configured-Pa55word"},
		{Nkey: pub},
	}}, string(seed)
}

func TestLogAuthFailureWarnsWithoutSecrets(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			logger, lines := newLogger(format)
			cfg, seed := secretAuthConfig(t)
			s := servertest.Start(t, server.Options{Logger: logger, Auth: cfg})
			nkeyUser := cfg.Users[1].Nkey
			wrongKey, _ := nkeys.CreateUser()
			wrongSeed, _ := wrongKey.Seed()

			if err := dialErr(s, nats.UserInfo("bob", "presented-Wr0ngPass"), nats.Name("dev-1")); err == nil {
				t.Fatal("a wrong password connected")
			}
			if err := dialErr(s, nats.Nkey(nkeyUser, wrongKey.Sign)); err == nil {
				t.Fatal("a wrong signature connected")
			}
			// A successful login and its CONNECT line carry no secret either.
			require.NoError(t, dialErr(s, nats.UserInfo("bob", "configured-Pa55word")))
			require.NoError(t, dialErr(s, nats.Nkey(nkeyUser, func(nonce []byte) ([]byte, error) {
				kp, err := nkeys.FromSeed([]byte(seed))
				if err != nil {
					return nil, err
				}
				return kp.Sign(nonce)
			})))
			require.NoError(t, s.Shutdown(t.Context()))

			failed := lines.matching("authentication failed")
			if len(failed) != 2 {
				t.Fatalf("want 2 authentication failures logged, got %d; log:\n%s", len(failed), strings.Join(lines.all(), "\n"))
			}
			for i, wantUser := range []string{"bob", nkeyUser} {
				if format == "json" {
					var rec map[string]any
					require.NoError(t, json.Unmarshal([]byte(failed[i]), &rec))
					if rec["level"] != "WARN" || rec["user"] != wantUser || rec["cid"] == nil || rec["addr"] == nil {
						t.Errorf("failure %d: want level WARN, user %q, cid and addr: %s", i, wantUser, failed[i])
					}
					continue
				}
				if !containsAll(failed[i], "level=WARN", "user="+wantUser, "cid=", "addr=127.0.0.1:") {
					t.Errorf("failure %d: want level=WARN, user=%s, cid and addr: %s", i, wantUser, failed[i])
				}
			}
			if !strings.Contains(failed[0], "dev-1") {
				t.Errorf("failure lacks the client name: %s", failed[0])
			}
			out := strings.Join(lines.all(), "\n")
			for _, secret := range []string{"configured-Pa55word", "presented-Wr0ngPass", seed, string(wrongSeed)} {
				if strings.Contains(out, secret) {
					t.Fatalf("the log holds a secret %q:\n%s", secret, out)
				}
			}
		})
	}
}

func TestLogTokenFailureWithoutToken(t *testing.T) {
	logger, lines := newLogger("json")
	s := servertest.Start(t, server.Options{Logger: logger, Auth: &auth.Config{Token: "configured-T0ken"}})
	if err := dialErr(s, nats.Token("presented-T0ken")); err == nil {
		t.Fatal("a wrong token connected")
	}
	require.NoError(t, dialErr(s, nats.Token("configured-T0ken")))
	require.NoError(t, s.Shutdown(t.Context()))
	if len(lines.matching(`"level":"WARN"`, "authentication failed")) != 1 {
		t.Fatalf("want one WARN authentication failure; log:\n%s", strings.Join(lines.all(), "\n"))
	}
	out := strings.Join(lines.all(), "\n")
	for _, secret := range []string{"configured-T0ken", "presented-T0ken"} {
		if strings.Contains(out, secret) {
			t.Fatalf("the log holds the token %q:\n%s", secret, out)
		}
	}
}

func TestLogPermissionViolations(t *testing.T) {
	logger, lines := newLogger("text")
	s := servertest.Start(t, server.Options{Logger: logger, Auth: &auth.Config{Users: []auth.User{{
		Name: "meter", Password: "pw-Secret-1",
		Permissions: &auth.Permissions{
			Publish:   &auth.SubjectPermission{Allow: []string{"meter.>"}},
			Subscribe: &auth.SubjectPermission{Allow: []string{"cmd.>"}},
		},
	}}}})
	c := servertest.Dial(t, s)
	c.Connect(`{"user":"meter","pass":"pw-Secret-1","name":"m-12","verbose":false}`)
	c.Send("PUB valve.open 1\r\nx\r\n")
	c.Expect(`-ERR 'Permissions Violation for Publish to "valve.open"'`)
	c.Send("SUB cfg.> workers 1\r\n")
	c.Expect(`-ERR 'Permissions Violation for Subscription to "cfg.>" using queue "workers"'`)
	c.Send("PUB meter.x _R_.abc 1\r\nx\r\n")
	c.Expect(`-ERR 'Permissions Violation for Publish with Reply of "_R_.abc"'`)

	pub := lines.await(t, "permission violation", "op=publish", "subject=valve.open")
	sub := lines.await(t, "permission violation", "op=subscribe", "subject=cfg.>", "queue=workers")
	reply := lines.await(t, "permission violation", "op=publish", "subject=meter.x", "reply=_R_.abc")
	for _, line := range []string{pub, sub, reply} {
		if !containsAll(line, "level=WARN", "user=meter", "name=m-12", "cid=", "addr=127.0.0.1:") {
			t.Errorf("violation line lacks level, user, name, cid or addr: %s", line)
		}
		if strings.Contains(line, "pw-Secret-1") {
			t.Fatalf("violation line holds the password: %s", line)
		}
	}
}

func TestLogViolationsRateLimited(t *testing.T) {
	logger, lines := newLogger("text")
	s := servertest.Start(t, server.Options{Logger: logger, Auth: &auth.Config{Users: []auth.User{{
		Name: "noisy", Password: "pw",
		Permissions: &auth.Permissions{Publish: &auth.SubjectPermission{Deny: []string{">"}}},
	}}}})
	c := servertest.Dial(t, s)
	c.Connect(`{"user":"noisy","pass":"pw","verbose":false}`)
	const n = 500
	start := time.Now()
	var batch bytes.Buffer
	for range n {
		batch.WriteString("PUB denied 0\r\n\r\n")
	}
	c.Send(batch.String() + "PING\r\n")
	for range n {
		c.Expect("-ERR 'Permissions Violation")
	}
	c.Expect("PONG")
	elapsed := time.Since(start)
	got := len(lines.matching("permission violation"))
	// The burst, plus one line per second the test took.
	if limit := 10 + int(elapsed/time.Second) + 1; got < 10 || got > limit {
		t.Fatalf("%d violations in %v logged %d lines, want 10..%d", n, elapsed, got, limit)
	}
}

func TestLogCloseReasonReadError(t *testing.T) {
	logger, lines := newLogger("text")
	s := servertest.Start(t, server.Options{Logger: logger})
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	if !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("first line %q", line)
	}
	// A reset, not an orderly close: the server's read fails.
	require.NoError(t, conn.(*net.TCPConn).SetLinger(0))
	require.NoError(t, conn.Close())
	lines.await(t, `msg="client connection closed"`, `reason="Read Error"`)
}
