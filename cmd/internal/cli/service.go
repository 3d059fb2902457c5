package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/systemd"
	"github.com/leafbox/leafbox/leaf/node"
)

// systemConfigFile is the configuration `leafbox run` and `leafbox config
// print` read when no file is given and it exists: the Debian package's
// conffile. Tests point it elsewhere.
var systemConfigFile = "/etc/leafbox/leafbox.yaml"

// configEnv, when set, names the configuration file used instead of
// systemConfigFile; set and empty, it selects the built-in default. Tests
// that run the binary set it empty, so a leafbox installed on the machine
// does not change what they run.
const configEnv = "LEAFBOX_CONFIG"

// defaultConfigFile returns the configuration file to use when none is
// given: $LEAFBOX_CONFIG when set, else systemConfigFile when it exists,
// else "" (the built-in default). A system file that exists but cannot be
// examined is an error, not a silent fallback to the defaults.
func defaultConfigFile() (string, error) {
	if path, ok := os.LookupEnv(configEnv); ok {
		return path, nil
	}
	_, err := os.Stat(systemConfigFile)
	switch {
	case err == nil:
		return systemConfigFile, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	default:
		return "", err
	}
}

// statusEvery is how often the service manager's STATUS= line is
// recomputed; it is sent when it changed.
const statusEvery = 2 * time.Second

// service tells the service manager (systemd, through $NOTIFY_SOCKET)
// about a running App: READY=1 with a STATUS= line once Start returned,
// the status again whenever it changes (looked at every statusEvery), RELOADING=1 around reloads, STOPPING=1 at
// shutdown, and, when $WATCHDOG_USEC is set, WATCHDOG=1 while the App's
// liveness check passes. Without $NOTIFY_SOCKET it does nothing.
type service struct {
	sd       *systemd.Notifier // nil outside a service manager
	watchdog time.Duration     // 0: no watchdog
	log      *slog.Logger

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopSent atomic.Bool // STOPPING=1 went out: no READY=1 after it
	liveness *app.Liveness

	// The hardware watchdog (watchdog in the configuration), fed by a
	// liveness check of its own; nil without one.
	hwCancel   context.CancelFunc
	hwWG       sync.WaitGroup
	hwLiveness *app.Liveness
}

// openService reads the notify socket and watchdog settings from the
// environment; bad values are errors, so that a unit file mistake shows
// at start.
func openService(log *slog.Logger) (*service, error) {
	sd, err := systemd.Open(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	s := &service{sd: sd, log: log}
	if sd != nil {
		if s.watchdog, err = systemd.WatchdogInterval(os.LookupEnv, os.Getpid()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// started sends READY=1 and starts the status updates and the watchdog.
func (s *service) started(a *app.App) error {
	if s.sd == nil {
		return nil
	}
	if s.watchdog > 0 {
		lv, err := a.Liveness()
		if err != nil {
			return err
		}
		s.liveness = lv
	}
	last := serviceStatus(a.UplinkStatus(), a.DownlinkStatus())
	s.notify(systemd.Ready, systemd.Status(last))
	s.log.Info("notified the service manager", "socket", s.sd.Socket(), "watchdog", s.watchdog)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Go(func() {
		tick := time.NewTicker(statusEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if now := serviceStatus(a.UplinkStatus(), a.DownlinkStatus()); now != last {
					s.notify(systemd.Status(now))
					last = now
				}
			}
		}
	})
	if s.liveness != nil {
		s.wg.Go(func() {
			s.sd.Watch(ctx, s.watchdog, s.liveness.Check, func(err error) {
				s.log.Warn("watchdog ping withheld: leafbox is not healthy", "error", err)
			})
		})
	}
	return nil
}

// stopping sends STOPPING=1 and stops the status updates and the
// watchdog pings, once. A drain that takes longer than the unit's stop
// timeout (lame duck mode) passes its length as drain: the service
// manager then waits that long (EXTEND_TIMEOUT_USEC) before it kills.
func (s *service) stopping(drain time.Duration) {
	s.stopHardwareWatchdog()
	if s.sd == nil {
		return
	}
	s.stopOnce.Do(func() {
		s.stopSent.Store(true)
		msg := []string{systemd.Stopping, systemd.Status("shutting down")}
		if drain > 0 {
			msg = append(msg, systemd.ExtendTimeout(drain))
		}
		s.notify(msg...)
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
	})
}

// stopped releases the liveness check, after the App has shut down.
func (s *service) stopped() {
	s.stopping(0) // when run returned without a stop signal
	if s.hwLiveness != nil {
		s.hwLiveness.Close()
		s.hwLiveness = nil
	}
	if s.liveness != nil {
		s.liveness.Close()
		s.liveness = nil
	}
}

// reloading and reloaded bracket a configuration reload; once stopping,
// they send nothing.
func (s *service) reloading() {
	if s.sd == nil || s.stopSent.Load() {
		return
	}
	s.notify(systemd.Reloading, systemd.Status("reloading the configuration"))
}

func (s *service) reloaded(a *app.App, err error) {
	if s.sd == nil || s.stopSent.Load() {
		return
	}
	status := serviceStatus(a.UplinkStatus(), a.DownlinkStatus())
	if err != nil {
		status = "reload failed, the running configuration stays: " + err.Error() + "; " + status
	}
	s.notify(systemd.Ready, systemd.Status(status))
}

func (s *service) notify(assignments ...string) {
	if err := s.sd.Notify(assignments...); err != nil {
		s.log.Warn("cannot notify the service manager", "error", err)
	}
}

// serviceStatus is the one-line status `systemctl status` shows: each
// uplink's link and backlog, each downlink's link and pending messages.
func serviceStatus(ups []node.UplinkStatus, downs []node.DownlinkStatus) string {
	parts := []string{"ready for clients"}
	if len(ups) == 0 && len(downs) == 0 {
		return parts[0] + "; no uplinks"
	}
	for _, st := range ups {
		p := fmt.Sprintf("uplink %s: link %s, backlog %d msgs %s", st.Name, st.LinkState, st.BacklogMsgs, formatBytes(st.BacklogBytes))
		if st.BacklogMsgs > 0 {
			p += ", oldest " + st.OldestAge.Round(time.Second).String()
		}
		parts = append(parts, p)
	}
	for _, st := range downs {
		parts = append(parts, fmt.Sprintf("downlink %s: link %s, %d pending", st.Name, st.LinkState, st.Pending))
	}
	return strings.Join(parts, "; ")
}
