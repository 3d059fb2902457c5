package upgrade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultVersionTimeout bounds `FILE version`.
const DefaultVersionTimeout = 10 * time.Second

// ErrRolledBack: the new binary did not come up healthy and the old one
// is back.
var ErrRolledBack = errors.New("upgrade: rolled back to the previous binary")

// Options is one upgrade.
type Options struct {
	// File is the new binary, Sig its signature file (default File.sig).
	File, Sig string
	// Target is the installed binary to replace (/usr/bin/leafbox).
	Target string
	// Trusted are the operator public keys whose signatures are accepted.
	Trusted []string
	// Service restarts the running leafbox; nil swaps only.
	Service Service
	// HealthTimeout bounds the wait for /healthz after the restart.
	HealthTimeout time.Duration
	// VersionTimeout bounds `File version` (default 10s).
	VersionTimeout time.Duration
	// Log receives a line per step; nil discards them.
	Log *slog.Logger
}

// Result says what an upgrade did.
type Result struct {
	Signer     string // the key that signed File
	NewVersion string // `File version`'s first line
	Running    string // the version the healthy leafbox reports, "" if none
	RolledBack bool
}

// Run upgrades: it verifies File's signature, checks that File is a
// leafbox for this machine that runs, swaps it in at Target (the old
// binary kept as Target.prev), restarts the Service and waits for its
// /healthz. When that fails, the old binary is put back and restarted,
// and the error wraps ErrRolledBack with the reason. Nothing is changed
// when a check before the swap fails.
func Run(ctx context.Context, o Options) (Result, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var res Result
	if o.Sig == "" {
		o.Sig = o.File + ".sig"
	}
	if o.VersionTimeout == 0 {
		o.VersionTimeout = DefaultVersionTimeout
	}
	signer, err := Verify(o.File, o.Sig, o.Trusted)
	if err != nil {
		log.Error("upgrade refused: signature", "file", o.File, "error", err)
		return res, err
	}
	res.Signer = signer
	log.Info("signature verified", "file", o.File, "signer", signer)
	if err := CheckArch(o.File); err != nil {
		log.Error("upgrade refused: architecture", "error", err)
		return res, err
	}
	version, err := CheckRuns(ctx, o.File, o.VersionTimeout)
	if err != nil {
		log.Error("upgrade refused: the new binary does not run", "error", err)
		return res, err
	}
	res.NewVersion = version
	log.Info("new binary runs", "version", version)
	if err := Swap(o.Target, o.File); err != nil {
		log.Error("upgrade failed: swap", "error", err)
		return res, err
	}
	log.Info("binary swapped", "target", o.Target, "previous", o.Target+PrevSuffix)
	if o.Service == nil {
		log.Info("not restarted: restart leafbox to run the new binary", "target", o.Target)
		return res, nil
	}
	reason := restartAndWait(ctx, o, &res, log)
	if reason == nil {
		log.Info("upgrade complete: the new leafbox is healthy", "service", o.Service.String(), "version", res.Running)
		return res, nil
	}
	log.Error("the new leafbox is not healthy; rolling back", "service", o.Service.String(), "error", reason)
	res.RolledBack = true
	if err := Restore(o.Target); err != nil {
		log.Error("rollback failed", "error", err)
		return res, fmt.Errorf("%w (and the rollback failed: %v): %v", ErrRolledBack, err, reason)
	}
	log.Info("old binary restored", "target", o.Target)
	since := time.Now()
	if err := o.Service.Restart(ctx); err != nil {
		log.Error("rollback: restart failed", "error", err)
		return res, fmt.Errorf("%w, but it did not restart (%v): %v", ErrRolledBack, err, reason)
	}
	running, err := WaitHealthy(ctx, o.Service, since, o.HealthTimeout)
	if err != nil {
		log.Error("rollback: the old leafbox is not healthy either", "service", o.Service.String(), "error", err)
		return res, fmt.Errorf("%w, but it is not healthy either (%v): %v", ErrRolledBack, err, reason)
	}
	res.Running = running
	log.Info("rolled back: the old leafbox is healthy", "service", o.Service.String(), "version", running)
	return res, fmt.Errorf("%w: %v", ErrRolledBack, reason)
}

func restartAndWait(ctx context.Context, o Options, res *Result, log *slog.Logger) error {
	since := time.Now()
	if err := o.Service.Restart(ctx); err != nil {
		return err
	}
	log.Info("restarted; waiting for /healthz", "service", o.Service.String(), "timeout", o.HealthTimeout)
	running, err := WaitHealthy(ctx, o.Service, since, o.HealthTimeout)
	if err != nil {
		return err
	}
	res.Running = running
	return nil
}
