package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// shutdownTimeout bounds the drain on SIGTERM or SIGINT.
const shutdownTimeout = 10 * time.Second

type runFlags struct {
	configFlags
	config       string
	logLevel     string
	logFormat    string
	portsFileDir string
}

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the broker",
		Long: `Run the broker in the foreground until a signal stops it.

Without --config, leafbox reads the file $LEAFBOX_CONFIG names when it is
set (set and empty: none), else /etc/leafbox/leafbox.yaml when it exists
(the Debian package's conffile), else runs on its built-in configuration:
clients on 0.0.0.0:4222, monitoring on 127.0.0.1:8222 (see 'leafbox config
print'). Flags override the configuration file; only flags given are
applied.

Under systemd (Type=notify) it sends READY=1 once clients, JetStream and
the uplinks are up, a STATUS= line with each uplink's link and backlog,
RELOADING=1 around a reload and STOPPING=1 at shutdown; with WatchdogSec=
it pings the watchdog only while the broker routes messages and the store
takes writes.

Signals:
  SIGTERM, SIGINT  close every client and exit (bounded by 10s)
  SIGUSR2          lame duck mode: stop accepting, tell clients (INFO ldm),
                   close them gradually, then exit
  SIGHUP           reload the configuration file (auth, permissions, limits);
                   on error the running configuration stays`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.config, "config", "c", "", "configuration file (YAML; default $LEAFBOX_CONFIG, else /etc/leafbox/leafbox.yaml when it exists)")
	f.configFlags.register(fs)
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text (key=value lines) or json (one object a line)")
	fs.StringVar(&f.portsFileDir, "ports-file-dir", "", "write DIR/leafbox_<pid>.ports (JSON with the client and monitoring URLs); removed on exit")
	return cmd
}

func run(cmd *cobra.Command, f *runFlags) error {
	logger, err := newLogger(cmd.ErrOrStderr(), f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	overrides, err := f.overrides(cmd.Flags())
	if err != nil {
		return err
	}
	if f.config == "" {
		if f.config, err = defaultConfigFile(); err != nil {
			return err
		}
	}
	cfg, err := loadConfig(f.config, overrides)
	if err != nil {
		return err
	}
	svc, err := openService(logger)
	if err != nil {
		return err
	}
	bi := readBuildInfo()
	flags := app.Flags{PortsFileDir: f.portsFileDir, Logger: logger, Version: bi.Version, Commit: bi.Commit, BuildDate: bi.Date}
	flags.Prepare = func(c *config.Config) error { return prepareConfig(c, overrides) }
	if flags.Commit == unknownCommit {
		flags.Commit = "" // /varz omits git_commit, as nats-server does without one
	}
	app.ApplyMemoryLimit(cfg, logger)
	a, err := app.Build(cfg, flags)
	if err != nil {
		return err
	}

	// Catch signals before Start, so that one arriving during start-up is
	// handled (after Start) instead of killing the process uncleanly.
	sigs := make(chan os.Signal, 4)
	handled := append(append(append([]os.Signal{}, stopSignals...), lameDuckSignals...), reloadSignals...)
	signal.Notify(sigs, handled...) // never empty: Notify with no signals relays all
	defer signal.Stop(sigs)

	source := "built-in default"
	if f.config != "" {
		source = f.config
	}
	logger.Info("starting leafbox", "version", bi.String(), "config", source, "pid", os.Getpid())
	if err := a.Start(); err != nil {
		return err
	}
	defer svc.stopped()
	err = svc.startHardwareWatchdog(a, cfg)
	if err == nil {
		err = svc.started(a)
	}
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		return errors.Join(err, a.Shutdown(ctx))
	}
	reload := func() (*config.Config, error) { return loadConfig(f.config, overrides) }
	return serve(a, cfg, svc, sigs, reload, logger)
}

// serve handles signals until the app has stopped; cfg is the
// configuration in force.
func serve(a *app.App, cfg *config.Config, svc *service, sigs <-chan os.Signal, reload func() (*config.Config, error), logger *slog.Logger) error {
	lameCtx, cancelLame := context.WithCancel(context.Background())
	defer cancelLame()
	lameDone := make(chan error, 1)
	inLameDuck := false
	for {
		select {
		case sig := <-sigs:
			switch {
			case isOneOf(sig, stopSignals):
				logger.Info("shutting down", "signal", sig.String(), "timeout", shutdownTimeout)
				svc.stopping(0) // within the unit's TimeoutStopSec
				cancelLame()
				ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
				err := a.Shutdown(ctx)
				cancel()
				if err != nil {
					return fmt.Errorf("shutdown: %w", err)
				}
				logger.Info("stopped")
				return nil
			case isOneOf(sig, lameDuckSignals):
				if inLameDuck {
					continue
				}
				inLameDuck = true
				logger.Info("lame duck mode requested", "signal", sig.String())
				svc.stopping(time.Duration(cfg.LameDuckGracePeriod+cfg.LameDuckDuration) + shutdownTimeout)
				go func() { lameDone <- a.LameDuck(lameCtx) }()
			case isOneOf(sig, reloadSignals):
				logger.Info("reload requested", "signal", sig.String())
				svc.reloading()
				next, err := reload()
				if err == nil {
					err = a.Reload(next)
				}
				if err == nil {
					cfg = next
				}
				svc.reloaded(a, err)
				if err != nil {
					logger.Error("reload failed; the running configuration stays", "error", err)
					continue
				}
				logger.Info("reload complete")
			}
		case err := <-lameDone:
			if err != nil {
				return fmt.Errorf("lame duck: %w", err)
			}
			logger.Info("lame duck mode complete; stopped")
			return nil
		}
	}
}

func isOneOf(sig os.Signal, set []os.Signal) bool {
	for _, s := range set {
		if sig == s {
			return true
		}
	}
	return false
}
