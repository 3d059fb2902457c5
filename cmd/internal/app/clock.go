package app

import (
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/node"
)

// openClock opens the gateway's clock with the machine's sources.
func openClock(cfg *config.Config) (*clock.Clock, error) {
	c, err := clock.Open(clock.Config{StatePath: cfg.ClockStatePath()})
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
