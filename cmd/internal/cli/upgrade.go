package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/cmd/internal/upgrade"
)

// systemdRunDir exists when systemd is the init system (sd_booted).
var systemdRunDir = "/run/systemd/system"

type upgradeFlags struct {
	config     string
	sig        string
	binary     string
	pid        int
	unit       string
	monitor    string
	timeout    time.Duration
	trusted    []string
	noRestart  bool
	logLevel   string
	logFormat  string
	versionTTL time.Duration
}

func newUpgradeCmd() *cobra.Command {
	f := &upgradeFlags{}
	cmd := &cobra.Command{
		Use:   "upgrade FILE",
		Short: "Replace the leafbox binary with a signed new one, rolling back if it is not healthy",
		Long: `Replace the installed leafbox binary with FILE:

  1. verify FILE.sig (leafbox upgrade sign, or nk -sign) against the operator
     keys in upgrade.trusted_keys of the configuration (or --trusted-key);
     an unsigned or wrongly signed FILE is refused;
  2. check that FILE is an executable for this machine's architecture and
     that 'FILE version' runs (within 10s) and names leafbox;
  3. swap it in atomically at --binary (default: this binary), keeping the
     old one as BINARY.prev;
  4. restart the running leafbox: under systemd 'systemctl restart UNIT'
     (--unit, default leafbox); with --pid PID, stop that process (SIGTERM)
     and start the new binary with its command line, environment, working
     directory and output, detached;
  5. wait for the new leafbox's /healthz (--monitor, or its ports file when
     it runs with --ports-file-dir) for --timeout (upgrade.health_timeout,
     default 60s).

If the new leafbox exits or is not healthy in time, the old binary is put
back and restarted, and the exit status is 1. Nothing changes when a check
before the swap fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runUpgrade(cmd, f, args[0]) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.config, "config", "c", "", "configuration file with upgrade.trusted_keys (default as leafbox run)")
	fs.StringVar(&f.sig, "sig", "", "signature file (default FILE.sig)")
	fs.StringVar(&f.binary, "binary", "", "installed binary to replace (default: this leafbox's executable)")
	fs.IntVar(&f.pid, "pid", 0, "restart this leafbox process (not run by systemd)")
	fs.StringVar(&f.unit, "unit", "leafbox", "systemd unit to restart")
	fs.StringVar(&f.monitor, "monitor", "http://127.0.0.1:8222", "monitoring endpoint of the restarted leafbox")
	fs.DurationVar(&f.timeout, "timeout", 0, "how long the new leafbox has to report healthy (default upgrade.health_timeout, 60s)")
	fs.StringArrayVar(&f.trusted, "trusted-key", nil, "operator public key to trust besides upgrade.trusted_keys, repeatable")
	fs.BoolVar(&f.noRestart, "no-restart", false, "swap the binary only; restart leafbox yourself")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&f.versionTTL, "version-timeout", upgrade.DefaultVersionTimeout, "how long 'FILE version' may take")
	cmd.AddCommand(newUpgradeSignCmd())
	return cmd
}

func runUpgrade(cmd *cobra.Command, f *upgradeFlags, file string) error {
	log, err := newLogger(cmd.ErrOrStderr(), f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if f.config == "" {
		if f.config, err = defaultConfigFile(); err != nil {
			return err
		}
	}
	trusted := append([]string(nil), f.trusted...)
	timeout := f.timeout
	var cfg *config.Config
	if f.config != "" {
		if cfg, err = config.Load(f.config); err != nil {
			return err
		}
		if cfg.Upgrade != nil {
			trusted = append(trusted, cfg.Upgrade.TrustedKeys...)
		}
	}
	if timeout == 0 {
		timeout = config.DefaultUpgradeHealthTimeout
		if cfg != nil {
			timeout = cfg.Upgrade.UpgradeHealthTimeout() // the default without an upgrade block
		}
	}
	target := f.binary
	if target == "" {
		if target, err = os.Executable(); err != nil {
			return err
		}
	}
	if target, err = filepath.EvalSymlinks(target); err != nil {
		return err
	}
	if target, err = filepath.Abs(target); err != nil {
		return err
	}
	opts := upgrade.Options{File: file, Sig: f.sig, Target: target, Trusted: trusted, HealthTimeout: timeout,
		VersionTimeout: f.versionTTL, Log: log}
	switch {
	case f.noRestart:
	case f.pid > 0:
		p, err := upgrade.AttachProcess(f.pid, target, f.monitor)
		if err != nil {
			return err
		}
		defer p.Close()
		opts.Service = p
	default:
		if _, err := os.Stat(systemdRunDir); err != nil {
			return errors.New("no running leafbox to restart: not under systemd; give --pid PID, or --no-restart to swap only")
		}
		opts.Service = &upgrade.Systemd{Unit: f.unit, Monitor: f.monitor}
	}
	res, err := upgrade.Run(context.Background(), opts)
	out := cmd.OutOrStdout()
	switch {
	case err == nil && opts.Service == nil:
		fmt.Fprintf(out, "swapped: %s is now %s (signed by %s); the old binary is %s%s; restart leafbox to run it\n",
			target, res.NewVersion, res.Signer, target, upgrade.PrevSuffix)
	case err == nil:
		fmt.Fprintf(out, "upgraded: %s runs %s and is healthy (signed by %s); the old binary is %s%s\n",
			opts.Service, res.Running, res.Signer, target, upgrade.PrevSuffix)
	case res.RolledBack:
		fmt.Fprintf(out, "rolled back: %s runs the previous binary again\n", opts.Service)
	}
	return err
}

func newUpgradeSignCmd() *cobra.Command {
	var seed, out string
	cmd := &cobra.Command{
		Use:   "sign --seed OPERATOR.nk FILE",
		Short: "Sign a leafbox binary for leafbox upgrade: writes FILE.sig",
		Long: `Sign FILE with an operator NKey seed (nk -gen operator, or the operator
of deploy/hub-jwt) and write FILE.sig (or --output): the file's SHA-256 and
size, and an Ed25519 signature of them. Gateways trust the operator's public
key in upgrade.trusted_keys. Keep the seed on the build machine.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := readSeed(seed)
			if err != nil {
				return err
			}
			sig, err := upgrade.Sign(s, args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = args[0] + ".sig"
			}
			if err := os.WriteFile(out, sig, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&seed, "seed", "", "operator NKey seed file (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "signature file (default FILE.sig)")
	_ = cmd.MarkFlagRequired("seed")
	return cmd
}

// readSeed reads an NKey seed file, refusing one others may read.
func readSeed(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("%s: the seed is readable by others (mode %04o): run chmod 600 %s", path, info.Mode().Perm(), path)
	}
	return os.ReadFile(path)
}
