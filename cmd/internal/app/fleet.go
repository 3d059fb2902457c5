package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/cmd/internal/fleet"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/store/vfs"
)

// The files of the fleet directory (config.Config.FleetDir).
const (
	fleetApplied  = "applied.bundle"  // the bundle in force
	fleetPrevious = "previous.bundle" // the one it replaced
	fleetStaged   = "staged.bundle"   // the one being applied
	fleetState    = "state.json"      // fleetRecord
)

// fleetQueue bounds the bundles waiting to be applied; more are refused.
const fleetQueue = 4

// fleetRecord is what the fleet directory remembers across restarts.
type fleetRecord struct {
	// Applied is the serial of the bundle in force, 0 for none.
	Applied uint64 `json:"applied_serial"`
	// Last is the highest serial ever taken for applying (applied,
	// rolled back, or rejected after its signature checked out): a
	// bundle at or below it is a replay.
	Last uint64 `json:"last_serial"`
}

// PrepareConfig finishes a configuration parsed from YAML as `leafbox
// run` finishes its configuration file: the command line's overrides,
// SetDefaults, the identity, Validate. Fleet bundles' configurations go
// through it (Flags.Prepare).
type PrepareConfig func(*config.Config) error

// defaultPrepare is PrepareConfig without a command line.
func defaultPrepare(c *config.Config) error {
	c.SetDefaults(config.OSEnv())
	if _, err := c.ApplyIdentity(false); err != nil {
		return err
	}
	return c.Validate()
}

// fileSource returns the /varz config object for a configuration read
// from its file (or the built-in default).
func fileSource(cfg *config.Config) *monitor.ConfigVarz {
	src := &monitor.ConfigVarz{Hash: cfg.Hash(), Source: "file", File: cfg.File(), Applied: time.Now().UTC()}
	if cfg.File() == "" {
		src.Source = "default"
	}
	return src
}

// bundleConfig turns an opened bundle into the configuration it
// carries, checked as `config check` does (and Preflight), against file,
// the configuration file's: the bundle keeps the file's fleet section
// unless it has its own, and must keep the store directory.
func bundleConfig(b *fleet.Opened, file *config.Config, prepare PrepareConfig) (*config.Config, error) {
	name := fmt.Sprintf("fleet bundle %d", b.Serial)
	c, err := config.ParseFile([]byte(b.Config), name, file.Dir())
	if err != nil {
		return nil, err
	}
	if c.Fleet == nil {
		c.Fleet = file.Fleet
	}
	if prepare == nil {
		prepare = defaultPrepare
	}
	if err := prepare(c); err != nil {
		return nil, err
	}
	if err := c.Preflight(); err != nil {
		return nil, err
	}
	if c.StoreRoot() != file.StoreRoot() {
		return nil, fmt.Errorf("%s: the store directory would move from %s to %s; a bundle must keep it", name, file.StoreRoot(), c.StoreRoot())
	}
	if c.Fleet == nil {
		return nil, fmt.Errorf("%s: fleet: the bundle turns fleet configuration off; the gateway would stop listening for bundles", name)
	}
	return c, nil
}

// readFleet returns the fleet directory's record and its bundle in force
// (nil without one).
func readFleet(dir string) (fleetRecord, []byte, error) {
	var rec fleetRecord
	data, err := os.ReadFile(filepath.Join(dir, fleetState))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rec, nil, nil
	case err != nil:
		return rec, nil, fmt.Errorf("fleet: %w", err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, nil, fmt.Errorf("fleet: %s: %v", filepath.Join(dir, fleetState), err)
	}
	if rec.Applied == 0 {
		return rec, nil, nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, fleetApplied))
	if err != nil {
		return rec, nil, fmt.Errorf("fleet: the applied bundle %d: %w", rec.Applied, err)
	}
	return rec, raw, nil
}

func writeFleetRecord(dir string, rec fleetRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return vfs.WriteFilePerm(vfs.OS, filepath.Join(dir, fleetState), data, vfs.PermFile)
}

// fleetStartConfig returns the configuration Build starts on: the fleet bundle
// applied last, when file (the configuration file's) has fleet on and the
// bundle still checks out against it, else file. A bundle that no longer
// does is logged and left on disk.
func fleetStartConfig(file *config.Config, prepare PrepareConfig, log *slog.Logger) (*config.Config, *monitor.ConfigVarz) {
	src := fileSource(file)
	dir := file.FleetDir()
	if file.Fleet == nil || dir == "" {
		return file, src
	}
	rec, raw, err := readFleet(dir)
	if err == nil && raw == nil {
		return file, src
	}
	var b *fleet.Opened
	if err == nil {
		b, err = fleet.Open(raw, file.Fleet.TrustedKeys)
	}
	var c *config.Config
	if err == nil {
		c, err = bundleConfig(b, file, prepare)
	}
	if err != nil {
		log.Error("fleet: the applied bundle is not used; running on the configuration file", "serial", rec.Applied, "error", err)
		return file, src
	}
	log.Info("fleet: running on the applied bundle", "serial", b.Serial, "hash", c.Hash(), "signer", b.Signer)
	return c, bundleSource(b, c, src.Applied)
}

func bundleSource(b *fleet.Opened, c *config.Config, at time.Time) *monitor.ConfigVarz {
	return &monitor.ConfigVarz{Hash: c.Hash(), Source: "fleet", File: c.File(), FleetSerial: b.Serial,
		FleetSigner: b.Signer, FleetTarget: b.Target(), Applied: at}
}

// fleetAgent takes fleet bundles from the hub for a running App: it
// subscribes the gateway's subject and its groups' (over the leafnode
// links, whose interest the hub learns), and applies each bundle in turn
// on a goroutine of its own.
type fleetAgent struct {
	a       *App
	log     *slog.Logger
	dir     string
	gateway string
	conn    *server.Conn

	work     chan fleetMsg
	stop     chan struct{}
	wg       sync.WaitGroup
	liveness *Liveness

	mu   sync.Mutex
	subs []*server.Subscription
	rec  fleetRecord
}

type fleetMsg struct {
	subject, reply string
	data           []byte
}

// startFleet starts the fleet agent when the configuration has fleet on;
// a.mu is held.
func (a *App) startFleet() error {
	cfg := a.cfg
	if cfg.Fleet == nil {
		return nil
	}
	id := cfg.Identity()
	if id == nil {
		return errors.New("fleet: the gateway has no identity (no store directory)")
	}
	dir := cfg.FleetDir()
	if err := os.MkdirAll(dir, vfs.PermDir); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	rec, _, err := readFleet(dir)
	if err != nil {
		return err
	}
	lv, err := a.Liveness()
	if err != nil {
		return err
	}
	f := &fleetAgent{a: a, log: a.log.With("component", "fleet"), dir: dir, gateway: id.PublicKey(),
		conn: a.srv.InProcess(""), work: make(chan fleetMsg, fleetQueue), stop: make(chan struct{}), liveness: lv, rec: rec}
	if err := f.subscribe(cfg.Fleet); err != nil {
		f.conn.Close()
		lv.Close()
		return err
	}
	f.wg.Go(f.loop)
	a.fleet = f
	f.log.Info("fleet: listening for configuration bundles", "subject", fleet.GatewaySubject(f.gateway),
		"groups", []string(cfg.Fleet.Groups), "applied_serial", rec.Applied, "last_serial", rec.Last)
	return nil
}

// stopFleet stops the agent, waiting for a bundle being applied.
func (a *App) stopFleet() {
	a.mu.Lock()
	f := a.fleet
	a.fleet = nil
	a.mu.Unlock()
	f.close()
}

// close stops the agent; nil does nothing.
func (f *fleetAgent) close() {
	if f == nil {
		return
	}
	close(f.stop)
	f.conn.Close()
	f.wg.Wait()
	f.liveness.Close()
}

// subscribe (re)makes the subscriptions for fc's groups.
func (f *fleetAgent) subscribe(fc *config.FleetConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		s.Unsubscribe()
	}
	f.subs = f.subs[:0]
	subjects := []string{fleet.GatewaySubject(f.gateway)}
	for _, g := range fc.Groups {
		subjects = append(subjects, fleet.GroupSubject(g))
	}
	for _, subj := range subjects {
		s, err := f.conn.Subscribe(subj, "", f.receive)
		if err != nil {
			return fmt.Errorf("fleet: subscribe %s: %w", subj, err)
		}
		f.subs = append(f.subs, s)
	}
	return nil
}

// receive runs on the publisher's goroutine: it queues a copy.
func (f *fleetAgent) receive(m server.Msg) {
	msg := fleetMsg{subject: string(m.Subject), reply: string(m.Reply), data: append([]byte(nil), m.Data...)}
	select {
	case f.work <- msg:
	default:
		f.answer(msg.reply, fleet.Result{Gateway: f.gateway, Status: fleet.StatusRejected,
			Error: "busy: bundles are still being applied; send it again later"})
	}
}

func (f *fleetAgent) loop() {
	for {
		select {
		case <-f.stop:
			return
		case m := <-f.work:
			res := f.apply(m)
			f.a.setFleetLast(res)
			f.answer(m.reply, res)
		}
	}
}

func (f *fleetAgent) answer(reply string, res fleet.Result) {
	if reply == "" {
		return
	}
	data, _ := json.Marshal(res)
	f.conn.Publish(reply, "", nil, data)
}

// apply takes one bundle: open, check target and serial, stage, build and
// validate its configuration, reload, health check, keep or roll back.
func (f *fleetAgent) apply(m fleetMsg) (res fleet.Result) {
	a := f.a
	res = fleet.Result{Gateway: f.gateway, Status: fleet.StatusRejected}
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	a.mu.Lock()
	file, running := a.fileCfg, a.cfg
	a.mu.Unlock()
	res.Hash, res.Applied = running.Hash(), f.applied()
	reject := func(err error) fleet.Result {
		res.Error = err.Error()
		f.log.Warn("fleet: bundle rejected; the running configuration stays", "subject", m.subject, "serial", res.Serial, "error", err)
		return res
	}
	if running.Fleet == nil {
		return reject(errors.New("fleet is off in the configuration in force (a reload removed the fleet block)"))
	}
	b, err := fleet.Open(m.data, running.Fleet.TrustedKeys)
	if err != nil {
		return reject(err)
	}
	res.Serial = b.Serial
	if b.Gateway != "" && b.Gateway != f.gateway {
		return reject(fmt.Errorf("addressed to gateway %s, this is %s", b.Gateway, f.gateway))
	}
	if b.Group != "" && !slices.Contains(running.Fleet.Groups, b.Group) {
		return reject(fmt.Errorf("addressed to group %s, which this gateway is not in", b.Group))
	}
	f.mu.Lock()
	last := f.rec.Last
	f.mu.Unlock()
	if b.Serial <= last {
		return reject(fmt.Errorf("replay: serial %d is not newer than %d, the last taken", b.Serial, last))
	}
	// Staged and counted before it is used: a crash while it applies
	// leaves it on disk, and it is never taken twice.
	if err := vfs.WriteFilePerm(vfs.OS, filepath.Join(f.dir, fleetStaged), b.Raw, vfs.PermSecret); err != nil {
		return reject(fmt.Errorf("stage: %w", err))
	}
	if err := f.record(func(r *fleetRecord) { r.Last = b.Serial }); err != nil {
		return reject(fmt.Errorf("stage: %w", err))
	}
	f.log.Info("fleet: bundle staged", "serial", b.Serial, "target", b.Target(), "signer", b.Signer, "hash", b.Hash())
	if file == nil {
		file = running
	}
	cfg, err := bundleConfig(b, file, a.flags.Prepare)
	if err != nil {
		return reject(fmt.Errorf("validate: %w", err))
	}
	prevSrc := a.source.Load()
	if err := a.reload(cfg); err != nil {
		return reject(fmt.Errorf("reload: %w", err))
	}
	if err := f.subscribe(cfg.Fleet); err != nil {
		f.log.Error("fleet: cannot resubscribe", "error", err)
	}
	if err := f.healthy(cfg.Fleet.FleetHealthTimeout()); err != nil {
		f.log.Error("fleet: the bundle's configuration is not healthy; rolling back", "serial", b.Serial, "error", err)
		res.Status, res.Error = fleet.StatusRolledBack, "health: "+err.Error()
		if rerr := a.reload(running); rerr != nil {
			res.Error += "; the rollback failed too: " + rerr.Error()
			f.log.Error("fleet: rollback failed", "serial", b.Serial, "error", rerr)
			return res
		}
		if running.Fleet != nil {
			_ = f.subscribe(running.Fleet)
		}
		a.source.Store(prevSrc)
		f.log.Warn("fleet: rolled back to the previous configuration", "serial", b.Serial, "hash", running.Hash())
		return res
	}
	dir := f.dir
	if _, err := os.Stat(filepath.Join(dir, fleetApplied)); err == nil {
		_ = os.Rename(filepath.Join(dir, fleetApplied), filepath.Join(dir, fleetPrevious))
	}
	err = os.Rename(filepath.Join(dir, fleetStaged), filepath.Join(dir, fleetApplied))
	if err == nil {
		err = f.record(func(r *fleetRecord) { r.Applied = b.Serial })
	}
	if err != nil {
		f.log.Error("fleet: applied, but not kept for the next start", "serial", b.Serial, "error", err)
	}
	a.source.Store(bundleSource(b, cfg, time.Now().UTC()))
	res.Status, res.Hash, res.Applied = fleet.StatusApplied, cfg.Hash(), b.Serial
	f.log.Info("fleet: bundle applied", "serial", b.Serial, "hash", cfg.Hash())
	return res
}

func (f *fleetAgent) applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rec.Applied
}

func (f *fleetAgent) record(change func(*fleetRecord)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.rec
	change(&rec)
	if err := writeFleetRecord(f.dir, rec); err != nil {
		return err
	}
	f.rec = rec
	return nil
}

// fleetHealthEvery is how often healthy looks again.
const fleetHealthEvery = 50 * time.Millisecond

// healthy waits up to timeout until the gateway is healthy under the new
// configuration: the liveness check passes (the broker routes, JetStream
// answers, the store takes writes), every leafnode link that was up is
// up, and every bridge is connected. It returns the last problem seen.
func (f *fleetAgent) healthy(timeout time.Duration) error {
	a := f.a
	var wasUp []int
	for i := range a.node.NumRemotes() {
		if a.node.Link(i).Status().State == leaf.StateConnected {
			wasUp = append(wasUp, i)
		}
	}
	check := func() error {
		if err := f.liveness.Check(); err != nil {
			return err
		}
		for _, i := range wasUp {
			if st := a.node.Link(i).Status(); st.State != leaf.StateConnected {
				return fmt.Errorf("leafnode remote %d is %s", i, st.State)
			}
		}
		for _, r := range a.bridges.Statuses() {
			if r.Snapshot.State != bridge.StateConnected {
				err := fmt.Errorf("bridge %s %q is %s", r.Kind, r.Name, r.Snapshot.State)
				if r.Snapshot.LastError != "" {
					err = fmt.Errorf("%w: %s", err, r.Snapshot.LastError)
				}
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(fleetHealthEvery)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %v: %w", timeout, err)
		case <-f.stop:
			return errors.New("shutting down")
		case <-tick.C:
		}
	}
}

// setFleetLast records res as the last fleet outcome in /varz.
func (a *App) setFleetLast(res fleet.Result) {
	ev := &monitor.FleetEventVarz{Serial: res.Serial, Status: res.Status, Error: res.Error, Time: time.Now().UTC()}
	for {
		old := a.source.Load()
		next := &monitor.ConfigVarz{}
		if old != nil {
			*next = *old
		}
		next.FleetLast = ev
		if a.source.CompareAndSwap(old, next) {
			return
		}
	}
}

// effective returns the configuration a reload of file (the
// configuration file's) puts in force: the applied fleet bundle's, when
// fleet stays on and there is one, else file.
func (a *App) effective(file *config.Config) (*config.Config, *monitor.ConfigVarz, error) {
	src := fileSource(file)
	if file.Fleet == nil || file.FleetDir() == "" {
		return file, src, nil
	}
	_, raw, err := readFleet(file.FleetDir())
	if err != nil || raw == nil {
		return file, src, err
	}
	b, err := fleet.Open(raw, file.Fleet.TrustedKeys)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: the applied bundle: %w", err)
	}
	c, err := bundleConfig(b, file, a.flags.Prepare)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: the applied bundle: %w", err)
	}
	return c, bundleSource(b, c, src.Applied), nil
}

// Reload applies cfg, the configuration file's (after SetDefaults), to the
// running broker: with fleet on and a bundle applied, the bundle's
// configuration stays in force, checked against cfg's fleet section, and
// is reloaded instead. See reload for what may change.
func (a *App) Reload(cfg *config.Config) error {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	eff, src, err := a.effective(cfg)
	if err != nil {
		return err
	}
	if err := a.reload(eff); err != nil {
		return err
	}
	a.mu.Lock()
	a.fileCfg = cfg
	f := a.fleet
	a.mu.Unlock()
	if f != nil {
		fc := eff.Fleet
		if fc == nil {
			fc = &config.FleetConfig{} // off: the gateway's subject only, whose bundles are refused
		}
		if err := f.subscribe(fc); err != nil {
			return err
		}
	}
	if old := a.source.Load(); old != nil {
		src.FleetLast = old.FleetLast
	}
	a.source.Store(src)
	return nil
}
