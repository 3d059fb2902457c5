package app

import (
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/node"
)

// clockStatePath is where the clock keeps its last known-good time:
// state/clock.json in the store directory, else nowhere (memory only).
func (c *Config) clockStatePath() string {
	if c.storeRoot() == "" {
		return ""
	}
	return c.layout().ClockFile()
}

// openClock opens the gateway's clock with the machine's sources.
func openClock(cfg *Config) (*clock.Clock, error) {
	c, err := clock.Open(clock.Config{StatePath: cfg.clockStatePath()})
	if err != nil {
		return nil, withPrefix("clock", err)
	}
	return c, nil
}

// ClockStatus implements monitor.ClockProvider.
func (m appMonitor) ClockStatus() *monitor.ClockInfo {
	if m.clock == nil {
		return nil
	}
	return node.ClockInfo(m.clock.Status())
}
