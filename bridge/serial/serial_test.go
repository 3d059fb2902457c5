package serial

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/serial/frame"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/nats-io/nats.go"
)

func mustNew(t *testing.T, cfg Config) *Bridge {
	t.Helper()
	b, err := New(cfg)
	require.NoError(t, err)
	return b
}

// TestLines: lines from the device arrive on the subject (LF and CR LF,
// split across writes); a command request is written to the port with a
// newline and answered.
func TestLines(t *testing.T) {
	tb := newTestBroker(t)
	link := byIDLink(t)
	dev := newDevice(t, link)
	lines := tb.subscribe(t, "dev.lines")
	b := mustNew(t, Config{Port: Port{Path: link, Baud: 115200}, Subject: "dev.lines", CommandSubject: "dev.cmd"})
	st := runBridge(t, b, tb)
	waitFor(t, st, "the port to open", connected)

	dev.write(t, "temp=21.5\r\nhum")
	dev.write(t, "=40\n")
	require.Equal(t, string(next(t, lines, "line 1").Data), "temp=21.5")
	require.Equal(t, string(next(t, lines, "line 2").Data), "hum=40")

	reply, err := tb.nc.Request("dev.cmd", []byte("LED ON"), 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, string(reply.Data), `{"ok":true}`)
	got, err := dev.r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, got, "LED ON\n")

	reply, err = tb.nc.Request("dev.cmd", []byte("two\nlines"), 10*time.Second)
	require.NoError(t, err)
	if !strings.Contains(string(reply.Data), "error") {
		t.Fatalf("a command with a newline was answered %q", reply.Data)
	}
	waitFor(t, st, "two frames counted in", func(s bridge.Snapshot) bool { return s.In == 2 })
	snap := st.Snapshot()
	require.Equal(t, snap.Out, uint64(1))
	require.Equal(t, snap.Drops[bridge.DropRejected], uint64(1))
	require.Equal(t, snap.Reconnects, uint64(0))
}

// TestJSONLines: valid JSON lines are published; an invalid one is
// counted as a bad frame and not published.
func TestJSONLines(t *testing.T) {
	tb := newTestBroker(t)
	link := byIDLink(t)
	dev := newDevice(t, link)
	msgs := tb.subscribe(t, "dev.json")
	st := runBridge(t, mustNew(t, Config{Port: Port{Path: link}, Framing: Framing{Kind: "json"}, Subject: "dev.json"}), tb)
	waitFor(t, st, "the port to open", connected)

	dev.write(t, "{\"t\":1}\n{\"t\":\n[2]\n")
	require.Equal(t, string(next(t, msgs, "first").Data), `{"t":1}`)
	require.Equal(t, string(next(t, msgs, "second").Data), `[2]`)
	none(t, msgs, "after the invalid line")
	waitFor(t, st, "two frames counted in", func(s bridge.Snapshot) bool { return s.In == 2 })
	snap := st.Snapshot()
	require.Equal(t, snap.BadFrames, uint64(1))
	require.Equal(t, snap.Drops[bridge.DropBadFrame], uint64(1))
}

// TestNMEA: a GGA sentence arrives raw on the subject and as a JSON fix
// on the fix subject; a sentence with a bad checksum is counted and not
// published.
func TestNMEA(t *testing.T) {
	tb := newTestBroker(t)
	link := byIDLink(t)
	dev := newDevice(t, link)
	raw := tb.subscribe(t, "gps.nmea")
	fixes := tb.subscribe(t, "gps.fix")
	st := runBridge(t, mustNew(t, Config{Port: Port{Path: link, Baud: 9600}, Framing: Framing{Kind: "nmea"},
		Subject: "gps.nmea", FixSubject: "gps.fix"}), tb)
	waitFor(t, st, "the port to open", connected)

	gga := "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
	dev.write(t, gga[:len(gga)-2]+"48\r\n") // bad checksum
	dev.write(t, gga+"\r\n")
	require.Equal(t, string(next(t, raw, "GGA").Data), gga)
	var fix frame.Fix
	require.NoError(t, json.Unmarshal(next(t, fixes, "fix").Data, &fix))
	if fix.Lat < 48.1172 || fix.Lat > 48.1174 || fix.Lon < 11.5166 || fix.Lon > 11.5167 ||
		fix.Quality != 1 || fix.Satellites == nil || *fix.Satellites != 8 || fix.Time != "12:35:19" {
		t.Fatalf("fix = %+v", fix)
	}
	none(t, raw, "after the good sentence")
	none(t, fixes, "after the good fix")
	require.Equal(t, st.Snapshot().BadFrames, uint64(1))
}

// TestStore: with Store, frames go into the local stream that captures
// the subject, each stored before the next is read.
func TestStore(t *testing.T) {
	tb := newTestBroker(t)
	tb.AddStream(t, jsapi.StreamConfig{Name: "DEV", Subjects: []string{"dev.>"}})
	link := byIDLink(t)
	dev := newDevice(t, link)
	st := runBridge(t, mustNew(t, Config{Port: Port{Path: link}, Subject: "dev.stored", Store: true}), tb)
	waitFor(t, st, "the port to open", connected)

	dev.write(t, "a\nb\nc\n")
	waitFor(t, st, "three stored frames", func(s bridge.Snapshot) bool { return s.In == 3 })
	msgs := tb.StoredMsgs(t, "DEV")
	require.Equal(t, len(msgs), 3)
	for i, want := range []string{"a", "b", "c"} {
		require.Equal(t, msgs[i].Subject+" "+string(msgs[i].Data), "dev.stored "+want)
	}
}

// TestStoreNoStream: without a stream for the subject, a stored frame is
// a rejected drop with the reason in the last error, not a core message.
func TestStoreNoStream(t *testing.T) {
	tb := newTestBroker(t)
	link := byIDLink(t)
	dev := newDevice(t, link)
	msgs := tb.subscribe(t, "nostream.x")
	st := runBridge(t, mustNew(t, Config{Port: Port{Path: link}, Subject: "nostream.x", Store: true, StoreWait: time.Second}), tb)
	waitFor(t, st, "the port to open", connected)
	dev.write(t, "lost\n")
	waitFor(t, st, "a rejected drop", func(s bridge.Snapshot) bool { return s.Drops[bridge.DropRejected] == 1 })
	require.Equal(t, st.Snapshot().In, uint64(0))
	// The subscriber saw the store request (a core publish with a reply).
	if m := next(t, msgs, "request"); m.Reply == "" {
		t.Fatal("a stored frame went out without a reply subject")
	}
}

// TestDeviceVanishes: the device is unplugged (pty closed, by-id symlink
// removed) with half a line in flight; Run returns, the bridge is
// disconnected and commands are dropped as not connected; when the device
// comes back under a new pty behind the same symlink, the bridge resumes
// by itself, a reconnect is counted and the half line is not published.
func TestDeviceVanishes(t *testing.T) {
	tb := newTestBroker(t)
	link := byIDLink(t)
	dev := newDevice(t, link)
	lines := tb.subscribe(t, "dev.lines")
	b := mustNew(t, Config{Port: Port{Path: link, ReadTimeout: 20 * time.Millisecond}, Subject: "dev.lines", CommandSubject: "dev.cmd"})
	st := runBridge(t, b, tb)
	waitFor(t, st, "the port to open", connected)
	dev.write(t, "before\n")
	require.Equal(t, string(next(t, lines, "line before").Data), "before")

	dev.write(t, "half a li")
	dev.drained(t)
	dev.unplug()
	require.NoError(t, os.Remove(link))
	waitFor(t, st, "the bridge to see the device gone", func(s bridge.Snapshot) bool {
		return s.State != bridge.StateConnected && s.LastError != ""
	})
	reply, err := tb.nc.Request("dev.cmd", []byte("x"), 10*time.Second)
	switch {
	case errors.Is(err, nats.ErrNoResponders): // between two Runs: no subscription
	case err != nil:
		t.Fatalf("a command while unplugged: %v", err)
	case !strings.Contains(string(reply.Data), "not connected"):
		t.Fatalf("a command while unplugged was answered %q", reply.Data)
	}

	dev2 := newDevice(t, link)
	waitFor(t, st, "the port to reopen", func(s bridge.Snapshot) bool {
		return s.State == bridge.StateConnected && s.Reconnects == 1
	})
	dev2.write(t, "ne\nafter\n")
	// "ne" alone is the tail of the old line cut by the unplug: it is
	// published as what it is, a line the new device sent; the old
	// device's half line is never glued to it.
	got := string(next(t, lines, "first line after").Data)
	if got == "half a line" {
		t.Fatalf("bytes from the unplugged device were published: %q", got)
	}
	require.Equal(t, got, "ne")
	require.Equal(t, string(next(t, lines, "second line after").Data), "after")

	reply, err = tb.nc.Request("dev.cmd", []byte("hello again"), 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, string(reply.Data), `{"ok":true}`)
	out, err := dev2.r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, out, "hello again\n")
}
