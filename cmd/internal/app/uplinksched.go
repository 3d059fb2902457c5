package app

import (
	"time"
)

// DefaultDrainJitter is an uplink's drain_jitter when unset.
const DefaultDrainJitter = 3 * time.Second

// maxUplinkPriority bounds an uplink's priority.
const maxUplinkPriority = 1000

// setUplinkDefaults fills the uplinks' scheduling defaults.
func setUplinkDefaults(c *Config) {
	for i := range c.Uplinks {
		if c.Uplinks[i].DrainJitter == nil {
			d := Duration(DefaultDrainJitter)
			c.Uplinks[i].DrainJitter = &d
		}
	}
}

// uplinkSchedule checks uplink u's scheduling keys.
func (v *validator) uplinkSchedule(path string, u UplinkConfig) {
	if u.Priority < 0 || u.Priority > maxUplinkPriority {
		v.errf(path+".priority", "%d is out of range (0-%d)", u.Priority, maxUplinkPriority)
	}
	if u.MaxRate < 0 {
		v.errf(path+".max_rate", "must not be negative")
	}
	if u.DailyBudget < 0 {
		v.errf(path+".daily_budget", "must not be negative")
	}
	if u.DrainJitter != nil && *u.DrainJitter < 0 {
		v.errf(path+".drain_jitter", "must not be negative")
	}
}

// uplinkLimits checks the uplink_limits block.
func (v *validator) uplinkLimits() {
	l := v.c.UplinkLimits
	if l == nil {
		return
	}
	if len(v.c.Uplinks) == 0 && (l.MaxRate != 0 || l.DailyBudget != 0) {
		v.errf("uplink_limits", "has no effect without uplinks")
	}
	if l.MaxRate < 0 {
		v.errf("uplink_limits.max_rate", "must not be negative")
	}
	if l.DailyBudget < 0 {
		v.errf("uplink_limits.daily_budget", "must not be negative")
	}
}

// outboxStateFile is where uplink u keeps its last hub sequences.
func (c *Config) outboxStateFile(u *UplinkConfig) string { return c.layout().UplinkStateFile(u.Name) }
