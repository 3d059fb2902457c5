package leaf

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run the link inside a synctest bubble over in-memory pipes:
// time, the network and the local broker are inputs, so backoff and
// keepalive behaviour is checked in fake time with no sleeps in real time.

const pipeHubInfo = `INFO {"server_id":"PIPEHUB","server_name":"pipe","headers":true,"client_id":1,` +
	`"nonce":"n","compression":"off","info_on_connect":true,"leafnode_urls":[]}` + "\r\n"

const pipeConnectInfo = `INFO {"server_id":"PIPEHUB","connect_info":true,"remote_account":"$G"}` + "\r\n"

// pipeHub is a scripted hub behind Config.Dial.
type pipeHub struct {
	mu    sync.Mutex
	dials []dialRecord
	serve func(c net.Conn, r *bufio.Reader)
}

type dialRecord struct {
	at   time.Time
	addr string
}

func (h *pipeHub) dial(_ context.Context, _, addr string) (net.Conn, error) {
	ours, theirs := net.Pipe()
	h.mu.Lock()
	h.dials = append(h.dials, dialRecord{time.Now(), addr})
	h.mu.Unlock()
	go func() {
		defer theirs.Close()
		h.serve(theirs, bufio.NewReader(theirs))
	}()
	return ours, nil
}

func (h *pipeHub) records() []dialRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]dialRecord(nil), h.dials...)
}

// readUntil reads lines until one starts with prefix.
func readUntil(r *bufio.Reader, prefix string) (string, bool) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", false
		}
		if strings.HasPrefix(line, prefix) {
			return strings.TrimRight(line, "\r\n"), true
		}
	}
}

// pipeHandshake plays the hub's handshake: INFO, CONNECT, connect_info.
// It reports whether the link got that far.
func pipeHandshake(c net.Conn, r *bufio.Reader) bool {
	_, _ = c.Write([]byte(pipeHubInfo))
	if _, ok := readUntil(r, "CONNECT "); !ok {
		return false
	}
	_, err := c.Write([]byte(pipeConnectInfo))
	return err == nil
}

func newPipeLink(t *testing.T, hub *pipeHub, local Local, cfg Config) *Link {
	t.Helper()
	cfg.Dial = hub.dial
	if len(cfg.URLs) == 0 {
		cfg.URLs = []string{"nats-leaf://hub-a:7422", "nats-leaf://hub-b:7422"}
	}
	if local == nil {
		local = newFakeLocal()
	}
	l, err := New(cfg, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestBackoffAfterAuthViolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); ok {
				_, _ = c.Write([]byte("-ERR 'Authorization Violation'\r\n"))
			}
		}}
		start := time.Now()
		l := newPipeLink(t, hub, nil, Config{ReconnectMin: time.Second, ReconnectMax: 8 * time.Second})
		time.Sleep(time.Minute)
		st := l.Status()
		_ = l.Close()

		dials := hub.records()
		if len(dials) < 8 || len(dials) > 16 {
			t.Fatalf("%d connects in a minute", len(dials))
		}
		if !dials[0].at.Equal(start) {
			t.Fatalf("first connect after %v", dials[0].at.Sub(start))
		}
		for i := 1; i < len(dials); i++ {
			base := min(time.Second<<(i-1), 8*time.Second)
			gap := dials[i].at.Sub(dials[i-1].at)
			if gap < base/2 || gap > base {
				t.Errorf("gap %d is %v, want within [%v, %v]", i, gap, base/2, base)
			}
			if dials[i].addr == dials[i-1].addr {
				t.Errorf("connect %d did not fail over: %s twice", i, dials[i].addr)
			}
		}
		if !strings.Contains(st.LastError, "Authorization Violation") || st.State != StateConnecting || st.Connects != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestReconnectResetsAfterSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each connection registers, then the hub drops it after 10s.
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); !ok {
				return
			}
			_, _ = c.Write([]byte(pipeConnectInfo))
			// Read (and drop) for 10s, then hang up.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = readUntil(r, "never")
		}}
		l := newPipeLink(t, hub, nil, Config{ReconnectMin: time.Second, ReconnectMax: 8 * time.Second, PingInterval: time.Hour})
		time.Sleep(35 * time.Second)
		st := l.Status()
		_ = l.Close()
		dials := hub.records()
		// 10s up, then at most 1s (the first, jittered delay) down.
		for i := 1; i < len(dials); i++ {
			if gap := dials[i].at.Sub(dials[i-1].at); gap < 10*time.Second+500*time.Millisecond || gap > 11*time.Second {
				t.Errorf("gap %d is %v", i, gap)
			}
		}
		if len(dials) != 4 || st.Connects != 4 {
			t.Fatalf("%d connects, status %+v", len(dials), st)
		}
	})
}

func TestLoopErrorDelaysReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); !ok {
				return
			}
			_, _ = c.Write([]byte(pipeConnectInfo))
			lds, ok := readUntil(r, "LS+ $LDS.")
			if !ok {
				return
			}
			// Echo our loop-detection subject: the link sees a loop.
			_, _ = c.Write([]byte(lds + "\r\n"))
			_, _ = readUntil(r, "never")
		}}
		l := newPipeLink(t, hub, nil, Config{ReconnectMin: time.Second, PingInterval: time.Hour})
		time.Sleep(45 * time.Second)
		_ = l.Close()
		dials := hub.records()
		if len(dials) != 2 {
			t.Fatalf("%d connects in 45s", len(dials))
		}
		if gap := dials[1].at.Sub(dials[0].at); gap < loopDelay {
			t.Fatalf("reconnected %v after a loop", gap)
		}
	})
}

func TestStalePingsCloseTheLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); !ok {
				return
			}
			_, _ = c.Write([]byte(pipeConnectInfo))
			_, _ = readUntil(r, "never") // read but never answer PING
		}}
		l := newPipeLink(t, hub, nil, Config{PingInterval: 10 * time.Second, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		// The registration PING (at 0s) and a keepalive (at 10s) go
		// unanswered: the tick at 20s finds MaxPingsOut outstanding.
		time.Sleep(15 * time.Second)
		if st := l.Status(); st.State != StateConnected {
			t.Fatalf("closed early: %+v", st)
		}
		time.Sleep(10 * time.Second)
		st := l.Status()
		_ = l.Close()
		if st.State != StateConnecting || !strings.Contains(st.LastError, ErrStaleConnection.Error()) {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestSlowConsumerClosesTheLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		defer close(quit)
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); !ok {
				return
			}
			_, _ = c.Write([]byte(pipeConnectInfo + "LS+ data.>\r\n"))
			<-quit // never read again
		}}
		local := newFakeLocal()
		l := newPipeLink(t, hub, local, Config{MaxPending: 8 << 10, PingInterval: time.Hour, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		synctest.Wait()
		h := local.handler("data.>")
		if h == nil {
			t.Fatal("no local subscription for the hub's interest")
		}
		payload := make([]byte, 1024)
		for range 16 {
			h(Msg{Subject: []byte("data.x"), Data: payload})
		}
		synctest.Wait()
		st := l.Status()
		_ = l.Close()
		if st.SlowConsumers != 1 || !strings.Contains(st.LastError, ErrSlowConsumer.Error()) {
			t.Fatalf("status %+v", st)
		}
		if local.handler("data.>") != nil {
			t.Fatal("hub interest still subscribed locally after the link closed")
		}
	})
}

// TestWriteDeadlineIsSlowConsumer: a hub that stops reading, with a
// pending limit too large to trip, is cut off once a write misses
// WriteDeadline, and counted as a slow consumer, as nats-server counts it
// (the accepting side: TestWriteDeadlineSlowConsumerAccepting).
func TestWriteDeadlineIsSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		defer close(quit)
		// After the handshake the hub never reads again: the registration's
		// first write blocks.
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			if pipeHandshake(c, r) {
				<-quit
			}
		}}
		l := newPipeLink(t, hub, nil, Config{WriteDeadline: time.Second, PingInterval: time.Hour, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := l.Status()
		_ = l.Close()
		if st.SlowConsumers != 1 || !strings.Contains(st.LastError, ErrSlowConsumer.Error()) {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestQueueFilterPublisher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &pipeHub{serve: func(c net.Conn, r *bufio.Reader) {
			_, _ = c.Write([]byte(pipeHubInfo))
			if _, ok := readUntil(r, "CONNECT "); !ok {
				return
			}
			_, _ = c.Write([]byte(pipeConnectInfo +
				"LMSG jobs + _INBOX.r workers auditors 2\r\nj1\r\n" +
				"HMSG plain 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"))
			_, _ = readUntil(r, "never")
		}}
		local := newFakeLocal()
		l := newPipeLink(t, hub, local, Config{PingInterval: time.Hour})
		synctest.Wait()
		_ = l.Close()
		got := local.publishedLines()
		want := []string{"jobs jobs _INBOX.r [workers auditors] j1", "plain plain  [] hi"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("published:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
