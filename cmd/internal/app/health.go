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
	"github.com/leafbox/leafbox/leaf"
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

// deadLettered is what /healthz counts as dead-lettered: the messages the
// uplink's dead-letter stream holds now (a requeued message no longer
// counts).
func deadLettered(st node.UplinkStatus) uint64 { return st.DeadLetterMsgs }

// degraded lists the uplinks and downlinks in trouble at now, as cfg
// measures it.
func degraded(cfg config.HealthzConfig, now time.Time, ups []node.UplinkStatus, downs []node.DownlinkStatus) []monitor.HealthzError {
	var out []monitor.HealthzError
	linkDown := func(state string, since time.Time) (time.Duration, bool) {
		if state == leaf.StateConnected.String() || since.IsZero() {
			return 0, false
		}
		d := now.Sub(since)
		return d.Round(time.Second), d > time.Duration(cfg.LinkDown)
	}
	for _, st := range ups {
		if d, bad := linkDown(st.LinkState, st.LinkSince); bad {
			out = append(out, monitor.HealthzError{Type: monitor.HealthzErrorUplink, Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: link %s for %v (healthz.link_down %v)", st.Name, st.LinkState, d, cfg.LinkDown)})
		}
		if st.BacklogMsgs > 0 && st.OldestAge > time.Duration(cfg.BacklogAge) {
			out = append(out, monitor.HealthzError{Type: monitor.HealthzErrorUplink, Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: oldest of %d waiting messages is %v old (healthz.backlog_age %v)",
					st.Name, st.BacklogMsgs, st.OldestAge.Round(time.Second), cfg.BacklogAge)})
		}
		if n := deadLettered(st); n > 0 {
			out = append(out, monitor.HealthzError{Type: monitor.HealthzErrorUplink, Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: %d messages dead-lettered (the hub refused them; leafbox uplink deadletters %s)", st.Name, n, st.Name)})
		}
	}
	for _, st := range downs {
		if d, bad := linkDown(st.LinkState, st.LinkSince); bad {
			out = append(out, monitor.HealthzError{Type: monitor.HealthzErrorDownlink, Downlink: st.Name,
				Error: fmt.Sprintf("downlink %s: link %s for %v (healthz.link_down %v)", st.Name, st.LinkState, d, cfg.LinkDown)})
		}
	}
	return out
}

var _ monitor.DegradationChecker = appMonitor{}

// CheckDegraded implements monitor.DegradationChecker with the uplinks'
// and downlinks' trouble.
func (m appMonitor) CheckDegraded(monitor.HealthzOptions) ([]monitor.HealthzError, bool) {
	cfg := config.HealthzConfig{LinkDown: config.Duration(config.DefaultHealthLinkDown), BacklogAge: config.Duration(config.DefaultHealthBacklogAge)}
	if m.health != nil {
		if h := m.health.Load(); h != nil {
			cfg = *h
		}
	}
	ups, downs := m.node.UplinkStatus(), m.node.DownlinkStatus()
	now := time.Now()
	if m.now != nil {
		now = m.now()
	}
	return degraded(cfg, now, ups, downs), cfg.UplinksFatal
}
