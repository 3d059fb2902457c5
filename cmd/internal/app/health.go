package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/node"
)

// storeProbeEvery is how long a store directory probe's result is reused,
// so that frequent /healthz requests write nothing most of the time.
const storeProbeEvery = 10 * time.Second

// storeProbe tells whether the directories leafbox writes to still take
// writes, by creating and removing a small file in each; the result is
// reused for every (storeProbeEvery).
type storeProbe struct {
	dirs  []probedDir
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	checked  time.Time
	problems []monitor.HealthzError
}

// probedDir is one directory a storeProbe checks, with the name problems
// give it.
type probedDir struct{ name, dir string }

// newStoreProbe probes the JetStream store directory when JetStream runs
// and the outboxes' directory when there are uplinks; nil when neither.
func newStoreProbe(c *config.Config, jetStream bool) *storeProbe {
	p := &storeProbe{every: storeProbeEvery, now: time.Now}
	if jetStream {
		p.dirs = append(p.dirs, probedDir{"store_dir", c.JetStream.StoreDir})
	}
	if len(c.Uplinks) > 0 {
		p.dirs = append(p.dirs, probedDir{"outbox directory", c.OutboxesDir()})
	}
	if len(p.dirs) == 0 {
		return nil
	}
	return p
}

// check returns the directories that do not take writes. A success is
// reused for p.every; a failure is not (a failed probe writes nothing, and
// a repaired directory is reported at once).
func (p *storeProbe) check() []monitor.HealthzError {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); p.checked.IsZero() || now.Sub(p.checked) >= p.every {
		p.problems = nil
		for _, d := range p.dirs {
			if err := probeWrite(d.dir); err != nil {
				p.problems = append(p.problems, monitor.HealthzError{Type: monitor.HealthzErrorStore,
					Error: fmt.Sprintf("%s %s is not writable: %v", d.name, d.dir, err)})
			}
		}
		p.checked = now
		if len(p.problems) > 0 {
			p.checked = time.Time{}
		}
	}
	return p.problems
}

// probeWrite creates, writes, closes and removes a small file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".healthz-*")
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err // the message names the directory already
	} else if err != nil {
		return err
	}
	_, werr := f.Write([]byte("ok\n"))
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	return errors.Join(werr, cerr, rerr)
}

// healthzProblems maps the leaf runtime's problems to /healthz's
// degraded entries.
func healthzProblems(ps []node.Problem) []monitor.HealthzError {
	var out []monitor.HealthzError
	for _, p := range ps {
		e := monitor.HealthzError{Type: monitor.HealthzErrorUplink, Uplink: p.Uplink, Error: p.Error}
		if p.Downlink != "" {
			e = monitor.HealthzError{Type: monitor.HealthzErrorDownlink, Downlink: p.Downlink, Error: p.Error}
		}
		out = append(out, e)
	}
	return out
}

var _ monitor.DegradationChecker = appMonitor{}

// CheckDegraded implements monitor.DegradationChecker with the uplinks'
// and downlinks' trouble, as the leaf runtime judges it (node.Problems)
// with the healthz block's thresholds.
func (m appMonitor) CheckDegraded(monitor.HealthzOptions) ([]monitor.HealthzError, bool) {
	cfg := config.HealthzConfig{LinkDown: config.Duration(config.DefaultHealthLinkDown), BacklogAge: config.Duration(config.DefaultHealthBacklogAge)}
	if m.health != nil {
		if h := m.health.Load(); h != nil {
			cfg = *h
		}
	}
	now := time.Now()
	if m.now != nil {
		now = m.now()
	}
	th := node.HealthThresholds{LinkDown: time.Duration(cfg.LinkDown), BacklogAge: time.Duration(cfg.BacklogAge)}
	return healthzProblems(m.node.Problems(th, now)), cfg.UplinksFatal
}
