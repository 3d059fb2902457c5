package cli

import (
	"context"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// startHardwareWatchdog opens the configured watchdog device and feeds
// it while the App's liveness check passes, until stopping; without a
// watchdog block it does nothing.
func (s *service) startHardwareWatchdog(a *app.App, cfg *config.Config) error {
	w := cfg.Watchdog
	if w == nil {
		return nil
	}
	dev, err := app.OpenHardwareWatchdog(cfg.Path(w.Device))
	if err != nil {
		return err
	}
	lv, err := a.Liveness()
	if err != nil {
		_ = dev.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.hwCancel = cancel
	s.hwLiveness = lv
	interval := w.WatchdogInterval()
	s.log.Info("feeding the hardware watchdog", "device", dev.Path(), "interval", interval)
	s.hwWG.Go(func() {
		dev.Run(ctx, interval, lv.Check, func(err error) {
			s.log.Warn("hardware watchdog feed withheld: leafbox is not healthy", "error", err)
		})
	})
	return nil
}

// stopHardwareWatchdog stops the feeding with the magic close, once.
func (s *service) stopHardwareWatchdog() {
	if s.hwCancel != nil {
		s.hwCancel()
		s.hwWG.Wait()
		s.hwCancel = nil
	}
}
