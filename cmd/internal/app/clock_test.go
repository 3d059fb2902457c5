package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// TestBuildRefusesBadClockState: an unreadable state file stops the
// gateway with a clear error and is left as it is (moved from the old
// layout's place into state/).
func TestBuildRefusesBadClockState(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "clock.json", "{garbage")
	path := filepath.Join(dir, "state", "clock.json")
	c := mustParse(t, "http_port: 0\njetstream: {store_dir: '"+dir+"'}\n")
	c.SetDefaults(Env{StateDirectory: dir})
	require.NoError(t, c.Validate())
	_, err := Build(c, Flags{})
	require.ErrorContains(t, err, "clock: state file "+path)
	if strings.Contains(err.Error(), "clock: clock:") {
		t.Fatalf("prefix doubled: %v", err)
	}
	b, _ := os.ReadFile(path)
	require.DeepEqual(t, string(b), "{garbage")
}

// TestUplinkClock runs a gateway whose clock reads 1970, with an uplink
// toward a real nats-server hub whose JetStream domain is "hub": the
// gateway reads the hub's time from the stream info and trusts it, every
// forwarded message carries the capture stamp with the hub-vouched time,
// /healthz and /uplinkz report the clock, nothing expires by max_age, and
// the last known-good time is saved at shutdown.
func TestUplinkClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-clock"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}})

	stateDir := t.TempDir()
	c := loopbackConfig(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, hub_domain: hub, max_age: 1h}]\n", Env{StateDirectory: stateDir})
	require.NoError(t, c.Validate())
	a := startAt1970(t, c)
	mon := "http://" + a.MonitorAddr().String()

	// The hub's time arrives once the uplink is ready.
	before := time.Now()
	awaitCond(t, ctx, "the hub time is observed", func() (bool, string) {
		st := a.clock.Status()
		return !st.HubTime.IsZero(), fmt.Sprintf("clock %+v", st)
	})
	if ht := a.clock.Status().HubTime; ht.Before(before.Add(-time.Minute)) || ht.After(time.Now().Add(time.Minute)) {
		t.Fatalf("hub time %v, local %v", ht, time.Now())
	}
	var hz monitor.Healthz
	getJSON(t, mon+"/healthz", &hz)
	if hz.Status != "ok" || hz.Clock == nil || !hz.Clock.Trusted || hz.Clock.Source != "hub" || hz.Clock.BootID == "" ||
		hz.Clock.HubTime.IsZero() || hz.Clock.OffsetSeconds < float64(before.Unix()-60) {
		t.Fatalf("/healthz %+v clock %+v", hz, hz.Clock)
	}
	t.Logf("clock trusted from the hub: offset %.0f s from the local 1970 clock", hz.Clock.OffsetSeconds)
	var uz monitor.Uplinkz
	getJSON(t, mon+"/uplinkz", &uz)
	if uz.Clock == nil || !uz.Clock.Trusted {
		t.Fatalf("/uplinkz clock %+v", uz.Clock)
	}

	gw := natsConnect(t, "nats://"+a.Addr().String())
	for i := range 3 {
		require.NoError(t, gw.Publish("telemetry.t", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, gw.Flush())
	awaitStreamMsgs(t, ctx, stream, 3, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	var last time.Time
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		if m.Subject != "site1.telemetry.t" || string(m.Data) != strconv.Itoa(int(seq-1)) {
			t.Fatalf("hub seq %d: %q %q", seq, m.Subject, m.Data)
		}
		// Trusted: the wall-clock time only, no boot id or monotonic stamp.
		if v := m.Header.Get(outbox.HeaderBootID) + m.Header.Get(outbox.HeaderMono); v != "" {
			t.Fatalf("hub seq %d carries an untrusted stamp %q", seq, v)
		}
		wall, err := time.Parse(time.RFC3339Nano, m.Header.Get(outbox.HeaderTime))
		if err != nil || wall.Before(before.Add(-time.Minute)) || wall.Before(last) {
			t.Fatalf("hub seq %d: %s %q after %v (%v)", seq, outbox.HeaderTime, m.Header.Get(outbox.HeaderTime), last, err)
		}
		last = wall
	}

	awaitUplinkAcked(t, ctx, a, 3)
	if d := a.UplinkStatus()[0].Dropped; len(d) != 0 {
		t.Fatalf("dropped %v", d)
	}
	sctx, scancel := context.WithTimeout(ctx, testTimeout)
	require.NoError(t, a.Shutdown(sctx))
	scancel()
	b, err := os.ReadFile(filepath.Join(stateDir, "state", "clock.json"))
	require.NoError(t, err)
	if !strings.Contains(string(b), `"last_known_good":"`+time.Now().UTC().Format("2006-01-02")) {
		t.Fatalf("clock state %s", b)
	}
}

// TestUplinkClockTrustsTheHubOnceItsStreamExists: a gateway that joins
// before the hub stream its uplink names exists gets an error for its
// first hub time request; it asks again with backoff, and trusts the
// hub's clock once the stream is created, while the link stays up.
func TestUplinkClockTrustsTheHubOnceItsStreamExists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-late-stream"}, "hub",
		jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})

	c := loopbackConfig(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, hub_domain: hub}]\n", Env{StateDirectory: t.TempDir()})
	require.NoError(t, c.Validate())
	a := startAt1970(t, c)
	awaitCond(t, ctx, "the uplink's link is connected", func() (bool, string) {
		st := a.UplinkStatus()[0]
		return st.LinkState == "connected", fmt.Sprintf("uplink %+v", st)
	})
	// The hub answers "stream not found" for SITE: no time from it.
	if st := a.clock.Status(); st.Trusted || !st.HubTime.IsZero() {
		t.Fatalf("clock trusted before the hub stream exists: %+v", st)
	}
	_, err := hjs.CreateStream(ctx, batchedHub(jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}}))
	require.NoError(t, err)
	awaitCond(t, ctx, "the clock trusts the hub's time", func() (bool, string) {
		st := a.clock.Status()
		return st.Trusted && st.Source == clock.SourceHub, fmt.Sprintf("clock %+v", st)
	})
}

// startAt1970 builds and starts the gateway of c (shut down in t.Cleanup)
// with a clock that boots at 1970 and that NTP never syncs: only the hub
// can vouch for the time. Monotonic time is the machine's.
func startAt1970(t *testing.T, c *config.Config) *App {
	t.Helper()
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	epoch := time.Unix(0, 0)
	started := time.Now()
	a.clock, err = clock.Open(clock.Config{
		StatePath: c.ClockStatePath(),
		Now:       func() time.Time { return epoch.Add(time.Since(started)) },
		Synced:    func() bool { return false },
	})
	require.NoError(t, err)
	if st := a.clock.Status(); st.Trusted {
		t.Fatalf("clock at 1970 trusted: %+v", st)
	}
	require.NoError(t, a.Start())
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), testTimeout)
		defer scancel()
		_ = a.Shutdown(sctx)
	})
	return a
}
