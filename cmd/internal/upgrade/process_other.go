//go:build !linux

package upgrade

import (
	"context"
	"errors"
)

// Process is a leafbox run outside a service manager; restarting one
// needs Linux's /proc.
type Process struct{}

// AttachProcess fails: restarting a process needs Linux's /proc.
func AttachProcess(pid int, target, monitor string) (*Process, error) {
	return nil, errors.New("upgrade: --pid needs Linux; restart leafbox yourself after the swap")
}

func (p *Process) String() string { return "pid" }

// PID returns 0.
func (p *Process) PID() int { return 0 }

// Restart implements Service.
func (p *Process) Restart(context.Context) error { return errors.ErrUnsupported }

// Exited implements Service.
func (p *Process) Exited() error { return errors.ErrUnsupported }

// MonitorURL implements Service.
func (p *Process) MonitorURL() string { return "" }

// Close does nothing.
func (p *Process) Close() {}
