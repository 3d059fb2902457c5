package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// fakeConnector hands out buses it counts, per account.
type fakeConnector struct {
	mu     sync.Mutex
	open   map[string]int
	fail   string // an account Connect refuses
	closed chan string
}

func newFakeConnector() *fakeConnector {
	return &fakeConnector{open: map[string]int{}, closed: make(chan string, 64)}
}

func (c *fakeConnector) Connect(account string) (Bus, func(), error) {
	if c.fail != "" && account == c.fail {
		return nil, nil, errors.New("no such account")
	}
	c.mu.Lock()
	c.open[account]++
	c.mu.Unlock()
	var once sync.Once
	return nil, func() {
		once.Do(func() {
			c.mu.Lock()
			c.open[account]--
			c.mu.Unlock()
			c.closed <- account
		})
	}, nil
}

func (c *fakeConnector) opened(account string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[account]
}

// liveBridge connects at once and runs until stopped; it records its runs.
type liveBridge struct {
	cfg     string
	started chan struct{} // closed by the first Run
	stopped chan struct{} // closed when a Run returns
	once    sync.Once
}

func newLiveBridge(cfg string) *liveBridge {
	return &liveBridge{cfg: cfg, started: make(chan struct{}), stopped: make(chan struct{})}
}

func (b *liveBridge) Run(ctx context.Context, env Env) error {
	b.once.Do(func() { close(b.started) })
	env.Status.SetState(StateConnected)
	<-ctx.Done()
	close(b.stopped)
	return nil
}

// builtBridges records every bridge the specs built, by name.
type builtBridges struct {
	mu    sync.Mutex
	byKey map[string][]*liveBridge
}

func (bb *builtBridges) spec(kind, name, account, cfg string) Spec {
	return Spec{Kind: kind, Name: name, Account: account, Config: map[string]string{"cfg": cfg},
		New: func() (Bridge, error) {
			b := newLiveBridge(cfg)
			bb.mu.Lock()
			defer bb.mu.Unlock()
			if bb.byKey == nil {
				bb.byKey = map[string][]*liveBridge{}
			}
			bb.byKey[kind+"/"+name] = append(bb.byKey[kind+"/"+name], b)
			return b, nil
		}}
}

func (bb *builtBridges) all(k string) []*liveBridge {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	return append([]*liveBridge(nil), bb.byKey[k]...)
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: timed out", what)
	}
}

func isOpen(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

func waitConnected(t *testing.T, r *Registry, kind, name string) {
	t.Helper()
	st := r.Status(kind, name)
	if st == nil {
		t.Fatalf("%s %q not running", kind, name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, st.Wait(ctx, func(s Snapshot) bool { return s.State == StateConnected }), kind, " ", name, " connected")
}

func reportNames(rs []Report) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Kind+"/"+r.Name+"@"+r.Account)
	}
	return strings.Join(names, ",")
}

// TestRegistryApply: a reload starts the new bridges, stops the removed
// ones and restarts only the changed ones; the rest keep running.
func TestRegistryApply(t *testing.T) {
	conn := newFakeConnector()
	reg := NewRegistry(RegistryConfig{Connector: conn})
	var bb builtBridges
	ctx := t.Context()

	require.NoError(t, reg.Apply(ctx, []Spec{
		bb.spec("mqtt", "site", "", "a"),
		bb.spec("serial", "gps", "", "b"),
		bb.spec("modbus", "plc", "ops", "c"),
		bb.spec("serial", "scale", "", "d"),
	}), "first apply")
	for _, k := range [][2]string{{"mqtt", "site"}, {"serial", "gps"}, {"modbus", "plc"}, {"serial", "scale"}} {
		waitConnected(t, reg, k[0], k[1])
	}
	require.Equal(t, reportNames(reg.Statuses()), "mqtt/site@,serial/gps@,modbus/plc@ops,serial/scale@", "reports in configuration order")
	require.Equal(t, conn.opened(""), 3, "buses in the global account")
	require.Equal(t, conn.opened("ops"), 1, "buses in ops")
	reg.Status("mqtt", "site").CountIn(7) // a counter the reload must keep

	// site unchanged (an equal but distinct Config value), gps's config
	// changed, plc's account changed, scale removed, a new one added,
	// and the order is new.
	require.NoError(t, reg.Apply(ctx, []Spec{
		bb.spec("serial", "gps", "", "b2"),
		bb.spec("mqtt", "site", "", "a"),
		bb.spec("modbus", "plc", "", "c"),
		bb.spec("mqtt", "plant", "", "e"),
	}), "reload")
	waitConnected(t, reg, "serial", "gps")
	waitConnected(t, reg, "modbus", "plc")
	waitConnected(t, reg, "mqtt", "plant")

	site := bb.all("mqtt/site")
	require.Equal(t, len(site), 1, "unchanged bridge built")
	if !isOpen(site[0].stopped) {
		t.Fatal("the unchanged bridge was stopped")
	}
	for _, k := range []string{"serial/gps", "modbus/plc"} {
		built := bb.all(k)
		require.Equal(t, len(built), 2, k, " built")
		waitClosed(t, built[0].stopped, k+" old instance stopped")
		if !isOpen(built[1].stopped) {
			t.Fatalf("%s new instance stopped", k)
		}
	}
	require.Equal(t, bb.all("serial/gps")[1].cfg, "b2", "restarted with the new config")
	waitClosed(t, bb.all("serial/scale")[0].stopped, "removed bridge stopped")
	require.Equal(t, reportNames(reg.Statuses()), "serial/gps@,mqtt/site@,modbus/plc@,mqtt/plant@", "reports after the reload")
	require.Equal(t, reg.Statuses()[1].In, uint64(7), "the unchanged bridge's counters")
	require.Equal(t, reg.Statuses()[0].In, uint64(0), "the restarted bridge's counters")
	require.Equal(t, conn.opened(""), 4, "global buses after the reload")
	require.Equal(t, conn.opened("ops"), 0, "ops buses after the reload (closed with the bridge)")

	// The same specs again: nothing happens.
	require.NoError(t, reg.Apply(ctx, []Spec{
		bb.spec("serial", "gps", "", "b2"),
		bb.spec("mqtt", "site", "", "a"),
		bb.spec("modbus", "plc", "", "c"),
		bb.spec("mqtt", "plant", "", "e"),
	}), "same again")
	for _, k := range []string{"serial/gps", "mqtt/site", "modbus/plc", "mqtt/plant"} {
		built := bb.all(k)
		if !isOpen(built[len(built)-1].stopped) {
			t.Fatalf("%s stopped by an unchanged reload", k)
		}
		require.Equal(t, len(built) <= 2, true, k, " not built again")
	}

	require.NoError(t, reg.Close(ctx), "close")
	for _, k := range []string{"serial/gps", "mqtt/site", "modbus/plc", "mqtt/plant"} {
		built := bb.all(k)
		waitClosed(t, built[len(built)-1].stopped, k+" stopped by Close")
	}
	require.Equal(t, conn.opened(""), 0, "buses after Close")
	require.Equal(t, len(reg.Statuses()), 0, "reports after Close")
	require.ErrorIs(t, reg.Apply(ctx, nil), ErrClosed, "apply after close")
	require.NoError(t, reg.Close(ctx), "second close")
}

// TestRegistryApplyRefused: a bad configuration is refused whole, and the
// running bridges stay as they were.
func TestRegistryApplyRefused(t *testing.T) {
	conn := newFakeConnector()
	conn.fail = "nope"
	reg := NewRegistry(RegistryConfig{Connector: conn})
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	var bb builtBridges
	ctx := t.Context()
	require.NoError(t, reg.Apply(ctx, []Spec{bb.spec("mqtt", "site", "", "a")}), "first apply")
	waitConnected(t, reg, "mqtt", "site")

	failing := Spec{Kind: "serial", Name: "bad", New: func() (Bridge, error) { return nil, errors.New("no port configured") }}
	cases := []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"repeated", []Spec{bb.spec("serial", "x", "", "1"), bb.spec("serial", "x", "", "2")}, `serial "x" is listed twice`},
		{"no name", []Spec{{Kind: "serial", New: failing.New}}, "kind and name are required"},
		{"no New", []Spec{{Kind: "serial", Name: "n"}}, `serial "n": spec has no New`},
		{"New fails", []Spec{bb.spec("serial", "ok", "", "1"), failing}, `serial "bad": no port configured`},
		{"no account", []Spec{bb.spec("serial", "ok", "", "1"), bb.spec("modbus", "m", "nope", "1")}, `modbus "m": account "nope": no such account`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case also removes site and would change nothing else.
			err := reg.Apply(ctx, tc.specs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply: %v, want an error containing %q", err, tc.want)
			}
			require.Equal(t, reportNames(reg.Statuses()), "mqtt/site@", "running bridges")
			if !isOpen(bb.all("mqtt/site")[0].stopped) {
				t.Fatal("site stopped by a refused reload")
			}
			require.Equal(t, conn.opened(""), 1, "buses (those of the refused bridges closed)")
		})
	}
}

// stuckBridge ignores its context until released.
type stuckBridge struct{ release chan struct{} }

func (b stuckBridge) Run(_ context.Context, env Env) error {
	env.Status.SetState(StateConnected)
	<-b.release
	return nil
}

// TestRegistryCloseTimeout: a bridge that does not stop in time is named
// in Close's error; its bus closes once it returns after all.
func TestRegistryCloseTimeout(t *testing.T) {
	conn := newFakeConnector()
	reg := NewRegistry(RegistryConfig{Connector: conn})
	stuck := stuckBridge{release: make(chan struct{})}
	require.NoError(t, reg.Apply(t.Context(), []Spec{{Kind: "serial", Name: "stuck", New: func() (Bridge, error) { return stuck, nil }}}), "apply")
	waitConnected(t, reg, "serial", "stuck")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := reg.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `serial "stuck"`) {
		t.Fatalf("Close: %v, want the stuck bridge named with the deadline", err)
	}
	require.Equal(t, conn.opened(""), 1, "bus while the bridge still runs")
	close(stuck.release)
	select {
	case <-conn.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("bus not closed after the bridge returned")
	}
	require.Equal(t, conn.opened(""), 0, "bus after the bridge returned")
}

// TestRegistryConcurrentReports: reports are read while reloads start and
// stop bridges (run with -race).
func TestRegistryConcurrentReports(t *testing.T) {
	reg := NewRegistry(RegistryConfig{Connector: newFakeConnector()})
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	var bb builtBridges
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20 {
			cfg := strings.Repeat("x", i%3)
			if err := reg.Apply(t.Context(), []Spec{bb.spec("mqtt", "a", "", cfg), bb.spec("serial", "b", "", "b")}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			require.Equal(t, reportNames(reg.Statuses()), "mqtt/a@,serial/b@", "reports after the reloads")
			require.Equal(t, len(bb.all("serial/b")), 1, "the unchanged bridge built once")
			return
		default:
			for _, r := range reg.Statuses() {
				if r.Kind == "" || r.Name == "" {
					t.Fatalf("report without identity: %+v", r)
				}
			}
		}
	}
}

// devicesBridge is a liveBridge that lists devices.
type devicesBridge struct {
	*liveBridge
	devices []DeviceStatus
}

func (b devicesBridge) DeviceStatuses() []DeviceStatus { return b.devices }

// TestRegistryReportsDevices: a bridge that is a DeviceLister has its
// devices in its Report; the others have none.
func TestRegistryReportsDevices(t *testing.T) {
	reg := NewRegistry(RegistryConfig{Connector: newFakeConnector()})
	defer func() { require.NoError(t, reg.Close(context.Background()), "close") }()
	devices := []DeviceStatus{{Name: "pump", State: DeviceOK, Polls: 3}, {Name: "meter", State: DeviceFailing, Timeouts: 2, LastError: "no answer"}}
	lister := devicesBridge{liveBridge: newLiveBridge("plc"), devices: devices}
	require.NoError(t, reg.Apply(t.Context(), []Spec{
		{Kind: "modbus", Name: "plc", Config: "plc", New: func() (Bridge, error) { return lister, nil }},
		{Kind: "serial", Name: "gps", Config: "gps", New: func() (Bridge, error) { return newLiveBridge("gps"), nil }},
	}), "apply")
	reports := reg.Statuses()
	require.Equal(t, len(reports), 2, "reports")
	require.DeepEqual(t, reports[0].Devices, devices)
	if reports[1].Devices != nil {
		t.Fatalf("a bridge without devices reports %+v", reports[1].Devices)
	}
}
