package config

import "time"

// Defaults of the healthz block.
const (
	// DefaultHealthLinkDown is how long an uplink's or downlink's link may
	// be down before /healthz reports it as degraded.
	DefaultHealthLinkDown = 15 * time.Minute
	// DefaultHealthBacklogAge is how old an uplink's oldest waiting
	// message may be before /healthz reports it as degraded.
	DefaultHealthBacklogAge = time.Hour
)

// HealthzConfig is the healthz block: when /healthz reports an uplink or a
// downlink as degraded. Degraded conditions are listed with status 200;
// /healthz?uplinks=true, or uplinks_fatal, makes them fail with 503.
type HealthzConfig struct {
	// LinkDown is how long a link may be down (default 15m).
	LinkDown Duration `yaml:"link_down,omitempty"`
	// BacklogAge is how old an uplink's oldest waiting message may be
	// (default 1h).
	BacklogAge Duration `yaml:"backlog_age,omitempty"`
	// UplinksFatal makes every degraded condition fail /healthz, as
	// ?uplinks=true does, for probes that cannot pass a query.
	UplinksFatal bool `yaml:"uplinks_fatal,omitempty"`
}

// setHealthzDefaults fills the healthz block's defaults.
func (c *Config) setHealthzDefaults() {
	if c.Healthz == nil {
		c.Healthz = &HealthzConfig{}
	}
	setDefault(&c.Healthz.LinkDown, Duration(DefaultHealthLinkDown))
	setDefault(&c.Healthz.BacklogAge, Duration(DefaultHealthBacklogAge))
}

// healthz checks the healthz block.
func (v *validator) healthz() {
	h := v.c.Healthz
	if h == nil {
		return
	}
	if h.LinkDown < 0 {
		v.errf("healthz.link_down", "must not be negative")
	}
	if h.BacklogAge < 0 {
		v.errf("healthz.backlog_age", "must not be negative")
	}
}
