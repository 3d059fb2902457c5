package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
)

// ErrClosed is returned by Registry.Apply after Close.
var ErrClosed = errors.New("bridge: registry closed")

// Connector gives each bridge its own Bus in an account, and closes it
// (dropping whatever the bridge left subscribed) when the bridge stops.
type Connector interface {
	// Connect returns a new Bus bound to account ("" is the global
	// account) and the function that closes it.
	Connect(account string) (bus Bus, closeBus func(), err error)
}

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Connector makes each bridge's Bus. Required.
	Connector Connector
	// Logger receives the bridges' logs, with kind and name attached;
	// nil discards them.
	Logger *slog.Logger
	// Backoff is every Runner's backoff; the zero value is the defaults.
	Backoff Backoff
}

// Report is one bridge's identity and status, as /bridgez shows it.
type Report struct {
	// Kind, Name and Account are the bridge's Spec's.
	Kind, Name, Account string
	Snapshot
	// Devices is the status of each device of a bridge that is a
	// DeviceLister; nil for other bridges.
	Devices []DeviceStatus
}

// key identifies a bridge across reloads.
type key struct{ kind, name string }

// running is one bridge the registry runs.
type running struct {
	spec     Spec
	devices  DeviceLister // the bridge, when it lists devices; else nil
	runner   *Runner
	closeBus func()
}

// Registry holds the running bridges of a configuration. Apply starts,
// stops and restarts them to match a new configuration, touching only the
// bridges that changed. Its methods are safe for concurrent use; Apply and
// Close are serialised, and Statuses does not wait for them.
//
// Lock order: Registry.applyMu → Registry.mu. mu guards the map and the
// order only for moments; no bridge is started or stopped under it.
type Registry struct {
	cfg RegistryConfig
	ctx context.Context // every runner's parent; cancelled by Close
	end context.CancelFunc

	applyMu sync.Mutex // held across Apply and Close
	closed  bool       // guarded by applyMu

	mu      sync.Mutex
	order   []key // configuration order
	bridges map[key]*running
}

// NewRegistry returns an empty Registry.
func NewRegistry(cfg RegistryConfig) *Registry {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, end := context.WithCancel(context.Background())
	return &Registry{cfg: cfg, ctx: ctx, end: end, bridges: make(map[key]*running)}
}

// Apply makes the running bridges those of specs. A bridge is identified
// by Kind and Name: one not running yet is started, one no longer listed
// is stopped, one whose Account or Config differ (reflect.DeepEqual) is
// stopped and started again from its new Spec (with fresh counters), and the others keep
// running untouched, counters and connections included. Every new bridge
// is built (Spec.New) before anything stops, so a spec that is invalid
// (empty or repeated Kind+Name, no New, New failing, no Bus) returns an
// error and changes nothing. Stopping waits for the bridge's Run to return
// or ctx to end; a bridge that did not stop in time is reported in the
// error and left to stop in the background.
func (r *Registry) Apply(ctx context.Context, specs []Spec) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.cfg.Connector == nil {
		return errors.New("bridge: registry has no Connector")
	}
	want := make(map[key]Spec, len(specs))
	order := make([]key, 0, len(specs))
	for i, s := range specs {
		k := key{s.Kind, s.Name}
		switch {
		case s.Kind == "" || s.Name == "":
			return fmt.Errorf("bridge: spec %d: kind and name are required", i)
		case s.New == nil:
			return fmt.Errorf("bridge: %s %q: spec has no New", s.Kind, s.Name)
		}
		if _, dup := want[k]; dup {
			return fmt.Errorf("bridge: %s %q is listed twice", s.Kind, s.Name)
		}
		want[k] = s
		order = append(order, k)
	}

	// Build what is new or changed; nothing has been touched yet. Only
	// Apply and Close change the map, so reading it needs no lock here.
	fresh := make(map[key]*running)
	discard := func() {
		for _, f := range fresh {
			f.closeBus()
		}
	}
	for _, k := range order {
		s := want[k]
		if old := r.bridges[k]; old != nil && sameSpec(old.spec, s) {
			continue
		}
		f, err := r.build(s)
		if err != nil {
			discard()
			return err
		}
		fresh[k] = f
	}

	// Stop the removed and the changed, all at once.
	var stop []*running
	r.mu.Lock()
	for k, old := range r.bridges {
		if _, keep := want[k]; !keep || fresh[k] != nil {
			stop = append(stop, old)
			delete(r.bridges, k)
		}
	}
	r.mu.Unlock()
	errStop := stopAll(ctx, stop)
	for _, old := range stop {
		r.cfg.Logger.Info("bridge stopped", "bridge", old.spec.Kind, "name", old.spec.Name)
	}

	r.mu.Lock()
	for k, f := range fresh {
		r.bridges[k] = f
		f.runner.Start(r.ctx)
		r.cfg.Logger.Info("bridge started", "bridge", k.kind, "name", k.name, "account", f.spec.Account)
	}
	r.order = order
	r.mu.Unlock()
	return errStop
}

// sameSpec reports whether a running bridge may stay as it is under s.
func sameSpec(old, s Spec) bool {
	return old.Account == s.Account && reflect.DeepEqual(old.Config, s.Config)
}

// build makes the bridge of s and its Bus, not started.
func (r *Registry) build(s Spec) (*running, error) {
	b, err := s.New()
	if err != nil {
		return nil, fmt.Errorf("bridge: %s %q: %w", s.Kind, s.Name, err)
	}
	if b == nil {
		return nil, fmt.Errorf("bridge: %s %q: New returned no bridge", s.Kind, s.Name)
	}
	bus, closeBus, err := r.cfg.Connector.Connect(s.Account)
	if err != nil {
		return nil, fmt.Errorf("bridge: %s %q: account %q: %w", s.Kind, s.Name, s.Account, err)
	}
	if closeBus == nil {
		closeBus = func() {}
	}
	log := r.cfg.Logger.With("bridge", s.Kind, "name", s.Name)
	env := Env{Bus: bus, Status: new(Status), Logger: log}
	devices, _ := b.(DeviceLister)
	return &running{spec: s, devices: devices, runner: NewRunner(b, env, r.cfg.Backoff), closeBus: closeBus}, nil
}

// stopAll closes the runners concurrently, then their buses, and returns
// the errors of those that did not stop before ctx ended.
func stopAll(ctx context.Context, list []*running) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, b := range list {
		wg.Go(func() {
			if err := b.runner.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("%s %q: %w", b.spec.Kind, b.spec.Name, err)
				// The bus closes once Run has returned after all.
				go func() { <-b.runner.Done(); b.closeBus() }()
				return
			}
			b.closeBus()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Statuses returns a report per running bridge, in configuration order.
func (r *Registry) Statuses() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Report, 0, len(r.order))
	for _, k := range r.order {
		b := r.bridges[k]
		if b == nil {
			continue
		}
		rep := Report{Kind: b.spec.Kind, Name: b.spec.Name, Account: b.spec.Account, Snapshot: b.runner.Status().Snapshot()}
		if b.devices != nil {
			rep.Devices = b.devices.DeviceStatuses()
		}
		out = append(out, rep)
	}
	return out
}

// Status returns the Status of the bridge kind/name, or nil when it does
// not run.
func (r *Registry) Status(kind, name string) *Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.bridges[key{kind, name}]; b != nil {
		return b.runner.Status()
	}
	return nil
}

// Close stops every bridge (concurrently, each as Runner.Close) and
// refuses later Applies. It returns the errors of the bridges that did
// not stop before ctx ended. Calling it again returns nil.
func (r *Registry) Close(ctx context.Context) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.mu.Lock()
	list := make([]*running, 0, len(r.bridges))
	for _, k := range r.order {
		if b := r.bridges[k]; b != nil {
			list = append(list, b)
		}
	}
	clear(r.bridges)
	r.order = nil
	r.mu.Unlock()
	err := stopAll(ctx, list)
	r.end()
	return err
}
