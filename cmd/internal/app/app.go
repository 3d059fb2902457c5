package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/store/jetstream"
	"github.com/leafbox/leafbox/store/storedir"
)

// abortTimeout bounds stopping what a failed Start had started.
const abortTimeout = 10 * time.Second

// Flags are run-time settings that come only from the command line.
type Flags struct {
	// PortsFileDir, when set, is where Start writes the ports file
	// (PortsFileName) and Shutdown removes it.
	PortsFileDir string
	// Logger receives the application's and the broker's logs; nil
	// discards them. Configuration values are never logged, so secrets in
	// them cannot leak into logs.
	Logger *slog.Logger
	// Version, Commit and BuildDate are leafbox's build, reported in /varz
	// (leafbox_version, git_commit, build_date).
	Version, Commit, BuildDate string
	// Prepare finishes a fleet bundle's configuration as the
	// configuration file was (the command line's overrides, defaults,
	// validation); nil: SetDefaults with the OS's environment and
	// Validate (fleet.go).
	Prepare PrepareConfig
}

// App is a running leafbox: the broker, JetStream, the leaf runtime
// (leaf/node: the leafnode links to hubs, uplinks, downlinks, the leaf
// listener) and the monitoring HTTP server. Build it, Start it, then
// Shutdown or LameDuck it; Reload applies a new configuration in between. Its methods are safe for
// concurrent use.
type App struct {
	flags Flags
	log   *slog.Logger
	srv   *server.Server
	js    *jetstream.Engine // nil when JetStream is off
	jsBus *server.Conn
	node  *node.Node // the leaf runtime
	clock *clock.Clock
	store *storedir.Dir // the locked store directory; nil when nothing is kept on disk

	// bridges runs the bridges (bridges.go): started after the node,
	// stopped first, reloaded on SIGHUP.
	bridges *bridge.Registry
	brk     *broker                      // the node's broker adapter; the MQTT listener syncs captures through it
	mqtt    atomic.Pointer[mqttListener] // nil without an mqtt block or before Start

	// health is the healthz block in force (Reload replaces it); probe
	// checks that the store directories take writes.
	health atomic.Pointer[config.HealthzConfig]
	probe  *storeProbe
	// shed refuses new work under memory pressure (shed.go); nil without
	// a memory limit. stopShed ends its sampling.
	shed     *shedder
	stopShed context.CancelFunc

	// fleet takes configuration bundles from the hub (fleet.go); nil
	// without fleet. fileCfg is the configuration file's, which a
	// bundle's replaces; source is /varz config; applyMu orders reloads
	// and bundles.
	fleet   *fleetAgent
	fileCfg *config.Config
	source  atomic.Pointer[monitor.ConfigVarz]
	applyMu sync.Mutex

	mu        sync.Mutex
	cfg       *config.Config // the configuration in force
	mon       *monitor.HTTPServer
	portsFile string
	stopped   bool
}

// Build validates cfg (after SetDefaults), checks it against the machine
// (Preflight), and builds the broker, without binding anything yet. It
// takes the store directory (store/storedir), migrating an older layout,
// and holds it until Shutdown, LameDuck or a failed Start; another leafbox
// on the same directory is refused.
func Build(cfg *config.Config, flags Flags) (*App, error) {
	log := flags.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Before anything opens the store directory, so that its problems
	// are named as such, not as the first file that fails in it.
	if err := cfg.Preflight(); err != nil {
		return nil, err
	}
	// The store directory next: its lock keeps a second leafbox out
	// before anything in it is read or made (the identity included).
	sd, err := openStore(cfg, log)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*App, error) {
		_ = sd.Close()
		return nil, err
	}
	// A fleet bundle applied before replaces the file's configuration.
	file := cfg
	cfg, src := fleetStartConfig(cfg, flags.Prepare, log)
	// Then the identity: unless configured, the server name, which the
	// links announce and the outboxes' ids carry, derives from it.
	if _, err := cfg.ApplyIdentity(true); err != nil {
		return fail(err)
	}
	opts, err := serverOptions(cfg)
	if err != nil {
		return fail(err)
	}
	opts.Logger = log
	// The soft memory limit is set by now (ApplyMemoryLimit).
	shed := newShedder(debug.SetMemoryLimit(-1), log)
	if shed != nil {
		opts.RefuseConnection = shed.refuseConnection
	}
	opts.BuildVersion, opts.BuildCommit, opts.BuildDate = flags.Version, flags.Commit, flags.BuildDate
	srv, err := server.New(opts)
	if err != nil {
		return fail(err)
	}
	// The leaf runtime's configuration comes before the JetStream
	// engine, whose store would need closing if a later step failed.
	nc, err := nodeConfig(cfg, srv.ID(), srv.Name(), log)
	if err != nil {
		return fail(err)
	}
	// The bridges are built (not started) with the rest, so that a
	// bridge that cannot be made fails the start, not a later moment.
	if _, err := bridgeSpecs(cfg); err != nil {
		return fail(err)
	}
	clk, err := openClock(cfg)
	if err != nil {
		return fail(err)
	}
	a := &App{flags: flags, log: log, srv: srv, cfg: cfg, fileCfg: file, clock: clk, store: sd, bridges: newBridges(srv, log), shed: shed}
	a.source.Store(src)
	a.health.Store(cfg.Healthz)
	js := cfg.JetStream
	a.probe = newStoreProbe(cfg, js != nil && js.Enabled)
	if js != nil && js.Enabled {
		a.jsBus = srv.InProcess("")
		jc, err := jetStreamConfig(cfg, log)
		if err != nil {
			a.jsBus.Close()
			_ = clk.Close()
			_ = sd.Close()
			return nil, withPrefix("jetstream", err)
		}
		if shed != nil {
			jc.RefusePublish = shed.refusePublish
		}
		jc.ServerName = srv.Name() // for API audit advisories
		a.js, err = jetstream.New(jc, busConn{a.jsBus})
		if err != nil {
			a.jsBus.Close()
			_ = clk.Close()
			_ = sd.Close()
			return nil, withPrefix("jetstream", err)
		}
	}
	var streams node.Streams // nil, not a nil *Engine, without JetStream
	if a.js != nil {
		streams = a.js
		if shed != nil {
			shed.onPressure = a.shrinkIndexCaches
		}
	}
	// Building the links and the listener opens and binds nothing.
	a.brk = &broker{srv: srv}
	a.node, err = node.New(nc, a.brk, streams)
	if err != nil {
		a.closeJetStream()
		_ = clk.Close()
		_ = sd.Close()
		return nil, err
	}
	return a, nil
}

// Start binds the client listener and, unless http_port is 0, the
// monitoring listener, starts JetStream and the leafnode links (which
// connect in the background), writes the ports file if asked to, and logs
// the addresses; "ready for clients" comes last. On error everything
// started is stopped again.
func (a *App) Start() error {
	if err := a.srv.Start(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.shed != nil && a.stopShed == nil {
		var ctx context.Context
		ctx, a.stopShed = context.WithCancel(context.Background())
		go a.shed.run(ctx)
	}
	cfg := a.cfg
	scheme := "nats"
	if cfg.TLS != nil {
		scheme = "tls"
	}
	ports := Ports{Nats: URLs(scheme, a.srv.Addr())}
	if id := cfg.Identity(); id != nil {
		a.log.Info("gateway identity", "public_key", id.PublicKey(), "server_name", a.srv.Name(),
			"path", id.Path(), "generated", id.Generated())
	}

	if port := cfg.MonitorPort(); port != 0 {
		port = max(port, 0) // -1 asks for a free port
		mon, err := startMonitor(net.JoinHostPort(cfg.HTTP.Host, strconv.Itoa(port)), a.monitorProvider())
		if err != nil {
			a.abortStart()
			return fmt.Errorf("monitoring: %w", err)
		}
		a.mon = mon
		ports.Monitoring = URLs("http", mon.Addr())
		a.log.Info("serving monitoring", "addr", mon.Addr().String(), "url", ports.Monitoring[0])
	}
	if a.js != nil {
		if err := a.js.Start(); err != nil {
			a.abortStart()
			return withPrefix("jetstream", err)
		}
		if err := keyFailure(a.js.RestoreFailures()); err != nil {
			// A wrong or missing key is configuration, not damage:
			// refuse to run without those streams.
			a.abortStart()
			return withPrefix("jetstream", err)
		}
		a.log.Info("jetstream enabled", "store_dir", cfg.JetStream.StoreDir, "domain", cfg.JetStream.Domain)
	}
	if err := a.node.Start(a.clock); err != nil {
		a.abortStart()
		return err
	}
	if addr := a.node.ListenerAddr(); addr != nil {
		ports.LeafNodes = URLs("nats-leaf", addr)
		a.log.Info("listening for leafnode connections", "url", ports.LeafNodes[0])
	}
	// After JetStream and the node, as the bridges below (mqtt.go).
	ml, err := startMQTT(cfg, a.srv, a.brk, a.js, a.log)
	if err != nil {
		a.abortStart()
		return err
	}
	if a.mqtt.Store(ml); ml != nil {
		ports.MQTT = URLs("mqtt", ml.Addr())
		a.log.Info("listening for MQTT clients", "url", ports.MQTT[0])
	}
	// After JetStream and the node: Store finds its streams, and the
	// uplinks capture what the bridges publish.
	specs, err := bridgeSpecs(cfg)
	if err == nil {
		err = a.applyBridges(specs)
	}
	if err == nil {
		err = a.startFleet()
	}
	if err != nil {
		a.abortStart()
		return err
	}
	if dir := a.flags.PortsFileDir; dir != "" {
		path, err := WritePortsFile(dir, os.Getpid(), ports)
		if err != nil {
			a.abortStart()
			return err
		}
		a.portsFile = path
		a.log.Debug("wrote ports file", "path", path)
	}
	// Only now: JetStream, the uplinks and the downlinks run, so a client
	// that acts on this line finds its streams and its store-and-forward.
	a.log.Info("ready for clients", "url", ports.Nats[0])
	return nil
}

// abortStart stops what Start started; a.mu is held.
func (a *App) abortStart() {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	a.fleet.close()
	a.fleet = nil
	_ = a.bridges.Close(ctx)
	_ = a.mqtt.Load().close(ctx)
	_ = a.node.Detach(ctx)
	if a.mon != nil {
		_ = a.mon.Shutdown(ctx)
		a.mon = nil
	}
	_ = a.srv.Shutdown(ctx)
	_ = a.node.Close()
	a.closeJetStream()
	_ = a.clock.Close()
	_ = a.store.Close()
}

// UplinkStatus returns the counters of every uplink, in configuration
// order; nil when there are none or the App is not running.
func (a *App) UplinkStatus() []node.UplinkStatus { return a.node.UplinkStatus() }

// DownlinkStatus returns the counters of every downlink, in configuration
// order; nil when there are none or the App is not running.
func (a *App) DownlinkStatus() []node.DownlinkStatus { return a.node.DownlinkStatus() }

// LeafListener returns the leafnode listener, or nil when leafnodes.listen
// is not set.
func (a *App) LeafListener() *leaf.Listener { return a.node.Listener() }

// closeJetStream flushes and closes the JetStream engine after the clients
// are gone, once.
func (a *App) closeJetStream() error {
	if a.js == nil {
		return nil
	}
	err := a.js.Close()
	a.jsBus.Close()
	return err
}

// Addr returns the client listener's address, or nil before Start.
func (a *App) Addr() net.Addr { return a.srv.Addr() }

// MonitorAddr returns the monitoring listener's address, or nil when
// monitoring is off or not started.
func (a *App) MonitorAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mon == nil {
		return nil
	}
	return a.mon.Addr()
}

// PortsFile returns the path of the ports file written by Start, or "".
func (a *App) PortsFile() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.portsFile
}

// Shutdown stops the bridges, closes the leafnode links, stops the monitoring server, then
// the broker (closing every client), and removes the ports file. If ctx
// ends first it returns ctx's error. Calling it again, or after LameDuck,
// only returns nil.
func (a *App) Shutdown(ctx context.Context) error {
	a.stopFleet()
	errBridges := a.bridges.Close(ctx)
	errMQTT := a.mqtt.Load().close(ctx)
	errLeaf := a.node.Detach(ctx)
	errMon := a.stopAux(ctx)
	errSrv := a.srv.Shutdown(ctx)
	errFwd := a.node.Close()
	errJS := a.closeJetStream()
	errClk := a.clock.Close()
	errStore := a.store.Close()
	return errors.Join(errBridges, errMQTT, errLeaf, errSrv, errMon, errFwd, errJS, errClk, errStore)
}

// LameDuck stops the bridges, closes the leafnode links, puts the broker in lame duck mode
// (it stops accepting, tells clients with an INFO carrying ldm, closes them
// gradually and then shuts down), and then stops the monitoring server and
// removes the ports file. It returns when the broker is down or ctx ends.
func (a *App) LameDuck(ctx context.Context) error {
	a.stopFleet()
	errBridges := a.bridges.Close(ctx)
	errMQTT := a.mqtt.Load().close(ctx)
	errLeaf := a.node.Detach(ctx)
	errSrv := a.srv.LameDuck(ctx)
	errMon := a.stopAux(ctx)
	errFwd := a.node.Close()
	errJS := a.closeJetStream()
	errClk := a.clock.Close()
	errStore := a.store.Close()
	return errors.Join(errBridges, errMQTT, errLeaf, errSrv, errMon, errFwd, errJS, errClk, errStore)
}

// stopAux stops the monitoring server and removes the ports file, once.
func (a *App) stopAux(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil
	}
	a.stopped = true
	if a.stopShed != nil {
		a.stopShed()
	}
	var errs []error
	if a.mon != nil {
		if err := a.mon.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("monitoring: %w", err))
		}
	}
	if a.portsFile != "" {
		if err := os.Remove(a.portsFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reload applies cfg (after SetDefaults) to the running broker without
// dropping clients: authentication, permissions and limits, and the
// bridges (only the added, removed and changed ones start or stop; see
// applyBridges). Changes that
// need a restart (listen address, monitoring address, TLS handshake mode,
// leafnode remotes) are rejected, and the configuration in force stays.
func (a *App) reload(cfg *config.Config) error {
	// The identity stays, and so does the server name derived from it.
	a.mu.Lock()
	cfg.AdoptIdentity(a.cfg.Identity())
	a.mu.Unlock()
	opts, err := serverOptions(cfg)
	if err != nil {
		return err
	}
	opts.Logger = a.log
	if a.shed != nil {
		opts.RefuseConnection = a.shed.refuseConnection
	}
	specs, err := bridgeSpecs(cfg)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.cfg
	if cfg.HTTP.Host != old.HTTP.Host || cfg.MonitorPort() != old.MonitorPort() {
		return fmt.Errorf("http, http_port: changing the monitoring address needs a restart")
	}
	if err := remotesChange(old, cfg); err != nil {
		return err
	}
	if err := leafListenChange(old, cfg); err != nil {
		return err
	}
	if err := mqttListenChange(old, cfg); err != nil {
		return err
	}
	if !reflect.DeepEqual(old.Uplinks, cfg.Uplinks) || !reflect.DeepEqual(old.UplinkLimits, cfg.UplinkLimits) {
		return errors.New("uplinks: changing uplinks needs a restart")
	}
	if !reflect.DeepEqual(old.Downlinks, cfg.Downlinks) {
		return errors.New("downlinks: changing downlinks needs a restart")
	}
	if err := a.srv.Reload(opts); err != nil {
		return err
	}
	if err := a.applyBridges(specs); err != nil {
		return err
	}
	if err := a.mqtt.Load().reloadAuth(cfg); err != nil {
		return err
	}
	a.cfg = cfg
	a.health.Store(cfg.Healthz)
	return nil
}

// remotesChange returns why cfg cannot replace old on reload as far as
// the leafnode links are concerned, or nil. The links are built once, so
// their remotes, and the server name and JetStream domain they announce,
// stay until a restart. The files a remote names are read again on every
// connect, so rotating credentials needs no reload.
func remotesChange(old, cfg *config.Config) error {
	remotes := func(c *config.Config) []config.RemoteConfig {
		if c.LeafNodes == nil {
			return nil
		}
		return c.LeafNodes.Remotes
	}
	ro, rn := remotes(old), remotes(cfg)
	errRemotes := errors.New("leafnodes: changing leafnode remotes needs a restart")
	if len(ro) != len(rn) {
		return errRemotes
	}
	for i := range ro {
		lo, ln := old.LeafConfig(&ro[i]), cfg.LeafConfig(&rn[i])
		if !reflect.DeepEqual(old.RemoteTLSFiles(&ro[i]), cfg.RemoteTLSFiles(&rn[i])) {
			return errRemotes
		}
		announced := func(lc leaf.Config) leaf.Config {
			lc.Name, lc.Domain, lc.JetStream = "", "", false
			return lc
		}
		if !reflect.DeepEqual(announced(lo), announced(ln)) {
			return errRemotes
		}
		if !reflect.DeepEqual(lo, ln) {
			return errors.New("server_name, jetstream: the leafnode links announce them to the hubs; changing them needs a restart")
		}
	}
	return nil
}
