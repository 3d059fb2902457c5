package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/store/jsapi"
)

// appTestBridge answers requests on bt.<name> through its Bus and, when
// stopped, checks that the broker still answers (the bridges stop first).
type appTestBridge struct {
	name    string
	stopped chan error // what the broker answered at stop
}

func (b *appTestBridge) Run(ctx context.Context, env bridge.Env) error {
	unsub, err := env.Bus.Subscribe("bt."+b.name, "", func(m bridge.Msg) {
		_ = env.Bus.Publish(string(m.Reply), "", nil, append([]byte(b.name+":"), m.Data...))
	})
	if err != nil {
		return err
	}
	defer unsub()
	env.Status.SetState(bridge.StateConnected)
	env.Status.CountDrop(bridge.DropTooLarge)
	<-ctx.Done()
	rctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	reply, err := env.Bus.Request(rctx, "svc.alive", nil, nil)
	if err == nil && string(reply.Data) != "yes" {
		err = errors.New("the broker's service no longer answers")
	}
	b.stopped <- err
	return nil
}

// testBridges replaces the configured kinds with one "test" kind whose
// specs the test sets, and records the bridges built.
type testBridges struct {
	mu    sync.Mutex
	names []string // the specs bridgeSpecs returns
	built map[string][]*appTestBridge
}

func useTestBridges(t *testing.T, names ...string) *testBridges {
	tb := &testBridges{names: names, built: map[string][]*appTestBridge{}}
	saved := bridgeKinds
	bridgeKinds = []func(*Config) ([]bridge.Spec, error){tb.specs}
	t.Cleanup(func() { bridgeKinds = saved })
	return tb
}

func (tb *testBridges) set(names ...string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.names = names
}

func (tb *testBridges) specs(*Config) ([]bridge.Spec, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var specs []bridge.Spec
	for _, name := range tb.names {
		specs = append(specs, bridge.Spec{Kind: "test", Name: name, Config: name, New: func() (bridge.Bridge, error) {
			b := &appTestBridge{name: name, stopped: make(chan error, 1)}
			tb.mu.Lock()
			tb.built[name] = append(tb.built[name], b)
			tb.mu.Unlock()
			return b, nil
		}})
	}
	return specs, nil
}

func (tb *testBridges) instances(name string) []*appTestBridge {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]*appTestBridge(nil), tb.built[name]...)
}

func awaitBridgeConnected(t *testing.T, a *App, name string) {
	t.Helper()
	st := a.bridges.Status("test", name)
	if st == nil {
		t.Fatalf("bridge %s not running", name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	require.NoError(t, st.Wait(ctx, func(s bridge.Snapshot) bool { return s.State == bridge.StateConnected }))
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body)
}

// TestAppBridges: the bridges start with the App and reach the broker
// through their Bus (publish, subscribe, request, store); /bridgez and
// /metrics report them; a reload touches only the bridges that changed;
// Shutdown stops them while the broker still runs.
func TestAppBridges(t *testing.T) {
	tb := useTestBridges(t, "a", "b")
	a := startApp(t, "http_port: -1", Flags{})
	awaitBridgeConnected(t, a, "a")
	awaitBridgeConnected(t, a, "b")

	// The broker's side: a service the bridges ask when they stop.
	svc := a.srv.InProcess("")
	defer svc.Close()
	_, err := svc.Subscribe("svc.alive", "", func(m server.Msg) { svc.Publish(string(m.Reply), "", nil, []byte("yes")) })
	require.NoError(t, err)

	// A bridge's Bus: requests answered, "no responders" as a 503, and a
	// bridge's own publishes not echoed to it.
	bus, closeBus, err := bridgeConnector{a.srv}.Connect("")
	require.NoError(t, err)
	defer closeBus()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	reply, err := bus.Request(ctx, "bt.a", nil, []byte("ping"))
	require.NoError(t, err)
	require.Equal(t, string(reply.Data), "a:ping")
	// Concurrent requests on one Bus each get their own answer.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			want := "a:" + strconv.Itoa(i)
			r, err := bus.Request(ctx, "bt.a", nil, []byte(strconv.Itoa(i)))
			if err != nil || string(r.Data) != want {
				t.Errorf("request %d: %q, %v; want %q", i, r.Data, err, want)
			}
		})
	}
	wg.Wait()
	reply, err = bus.Request(ctx, "nobody.here", nil, nil)
	require.NoError(t, err)
	code, _ := proto.ParseStatus(reply.Header)
	require.Equal(t, code, 503)
	echoed := make(chan struct{}, 1)
	unsub, err := bus.Subscribe("echo.x", "", func(bridge.Msg) { echoed <- struct{}{} })
	require.NoError(t, err)
	require.NoError(t, bus.Publish("echo.x", "", nil, nil))
	select {
	case <-echoed:
		t.Fatal("a bridge received its own publish")
	default:
	}
	unsub()
	if err := bus.Publish("bad subject", "", nil, nil); !errors.Is(err, server.ErrInvalidSubject) {
		t.Fatalf("publish on an invalid subject: %v", err)
	}
	// Store reaches the JetStream engine started before the bridges.
	body, _ := json.Marshal(jsapi.StreamCreateRequest{StreamConfig: jsapi.StreamConfig{Name: "DEV", Subjects: []string{"dev.>"}}})
	reply, err = bus.Request(ctx, "$JS.API.STREAM.CREATE.DEV", nil, body)
	require.NoError(t, err)
	var created jsapi.StreamCreateResponse
	apiErr, err := jsapi.DecodeReply(reply.Data, &created)
	require.NoError(t, err)
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	stream, seq, err := bridge.Store(ctx, bus, "dev.temp", nil, []byte("21.5"))
	require.NoError(t, err)
	require.Equal(t, stream, "DEV")
	require.Equal(t, seq, uint64(1))

	base := "http://" + a.MonitorAddr().String()
	var bz monitor.Bridgez
	require.NoError(t, json.Unmarshal([]byte(httpGet(t, base+monitor.BridgezPath)), &bz))
	require.Equal(t, bz.NumBridges, 2)
	require.Equal(t, bz.Bridges[0].Name+","+bz.Bridges[1].Name, "a,b")
	require.Equal(t, bz.Bridges[0].Kind, "test")
	require.Equal(t, bz.Bridges[0].State, "connected")
	require.Equal(t, len(bz.Bridges[0].Drops), len(bridge.DropReasons))
	require.Equal(t, bz.Bridges[0].Drops["too_large"], uint64(1))
	require.Equal(t, bz.Bridges[0].Drops["queue_full"], uint64(0))
	metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`leafbox_bridge_connected{kind="test",name="a"} 1`,
		`leafbox_bridge_dropped_total{kind="test",name="b",reason="too_large"} 1`,
		`leafbox_bridge_dropped_total{kind="test",name="b",reason="rejected"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, metrics)
		}
	}

	// SIGHUP: a stays, b goes, c comes.
	tb.set("a", "c")
	require.NoError(t, a.Reload(loopbackConfig(t, "http_port: -1", tempEnv(t))))
	awaitBridgeConnected(t, a, "c")
	require.NoError(t, <-tb.instances("b")[0].stopped)
	require.Equal(t, len(tb.instances("a")), 1)
	select {
	case err := <-tb.instances("a")[0].stopped:
		t.Fatalf("the unchanged bridge was stopped by the reload (%v)", err)
	default:
	}
	require.Equal(t, a.bridges.Status("test", "b") == nil, true)

	// Shutdown stops the bridges first: the broker still answers them.
	sctx, scancel := context.WithTimeout(context.Background(), testTimeout)
	defer scancel()
	require.NoError(t, a.Shutdown(sctx))
	for _, name := range []string{"a", "c"} {
		require.NoError(t, <-tb.instances(name)[0].stopped)
	}
}

// TestAppBridgeSpecsFail: a bridge that cannot be built fails Build, and
// a reload to one fails with the bridges as they were.
func TestAppBridgeSpecsFail(t *testing.T) {
	saved := bridgeKinds
	t.Cleanup(func() { bridgeKinds = saved })
	bridgeKinds = []func(*Config) ([]bridge.Spec, error){func(*Config) ([]bridge.Spec, error) {
		return nil, errors.New("bridges.mqtt[0].url: no such host")
	}}
	c := loopbackConfig(t, "http_port: -1", tempEnv(t))
	_, err := Build(c, Flags{})
	if err == nil || !strings.Contains(err.Error(), "no such host") {
		t.Fatalf("Build: %v, want the bridge's error", err)
	}

	tb := useTestBridges(t, "a")
	a := startApp(t, "http_port: -1", Flags{})
	awaitBridgeConnected(t, a, "a")
	bridgeKinds = []func(*Config) ([]bridge.Spec, error){tb.specs, func(*Config) ([]bridge.Spec, error) {
		return []bridge.Spec{{Kind: "test", Name: "a", New: func() (bridge.Bridge, error) { return nil, errors.New("dup") }}}, nil
	}}
	if err := a.Reload(loopbackConfig(t, "http_port: -1", tempEnv(t))); err == nil || !strings.Contains(err.Error(), `bridges: bridge: test "a" is listed twice`) {
		t.Fatalf("Reload: %v, want the repeated bridge named", err)
	}
	awaitBridgeConnected(t, a, "a")
	require.Equal(t, len(tb.instances("a")), 1)
}

// TestAppBridgesLameDuck: LameDuck stops the bridges first too, while the
// broker still answers them.
func TestAppBridgesLameDuck(t *testing.T) {
	tb := useTestBridges(t, "a")
	a := startApp(t, "http_port: -1\nlame_duck_duration: 1s\nlame_duck_grace_period: 10ms", Flags{})
	awaitBridgeConnected(t, a, "a")
	svc := a.srv.InProcess("")
	defer svc.Close()
	_, err := svc.Subscribe("svc.alive", "", func(m server.Msg) { svc.Publish(string(m.Reply), "", nil, []byte("yes")) })
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, a.LameDuck(ctx))
	require.NoError(t, <-tb.instances("a")[0].stopped)
	require.Equal(t, len(a.bridges.Statuses()), 0)
}

// TestBridgeInfosDevices: a report's devices reach /bridgez's BridgeInfo
// with every field, the error time in UTC and only when there is one; a
// bridge without devices has none.
func TestBridgeInfosDevices(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	snap := bridge.Snapshot{Drops: make([]uint64, len(bridge.DropReasons))}
	infos := bridgeInfos([]bridge.Report{
		{Kind: "modbus", Name: "plc", Snapshot: snap, Devices: []bridge.DeviceStatus{
			{Name: "pump", State: bridge.DeviceOK, Polls: 4, MissedPolls: 2, Writes: 1},
			{Name: "meter", State: bridge.DeviceFailing, Timeouts: 3, Exceptions: 2, BadFrames: 1,
				LastError: "no answer", LastErrorAt: at, LastException: "illegal data address"},
		}},
		{Kind: "serial", Name: "gps", Snapshot: snap},
	})
	require.Equal(t, len(infos), 2, "infos")
	utc := at.UTC()
	require.DeepEqual(t, infos[0].Devices, []monitor.BridgeDevice{
		{Name: "pump", State: "ok", Polls: 4, MissedPolls: 2, Writes: 1},
		{Name: "meter", State: "failing", Timeouts: 3, Exceptions: 2, BadFrames: 1,
			LastError: "no answer", LastErrorAt: &utc, LastException: "illegal data address"},
	})
	if infos[1].Devices != nil {
		t.Fatalf("a bridge without devices: %+v", infos[1].Devices)
	}
}
