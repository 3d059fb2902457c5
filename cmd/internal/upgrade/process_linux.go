package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds the wait for a leafbox to exit after SIGTERM (its
// own bound is 10s) before it is killed.
const stopTimeout = 15 * time.Second

// Process is a leafbox run outside a service manager, known by its pid.
// Restart stops it (SIGTERM, SIGKILL after 15s) and starts the binary at
// the target path in its place, detached in a session of its own, with
// the command line, environment, working directory, stdout and stderr the
// old process had (read from /proc before it stops). Its pid changes.
type Process struct {
	target   string
	argv     []string
	env      []string
	dir      string
	stdout   *os.File
	stderr   *os.File
	portsDir string
	monitor  string

	mu      sync.Mutex
	pid     int
	cmd     *exec.Cmd     // the process started last; nil before
	exited  chan struct{} // closed when cmd has exited
	exitErr error
}

// AttachProcess reads what restarting pid needs from /proc: its command
// line, environment, working directory and output files. It fails unless
// pid runs the binary at target. monitor is the monitoring base URL to
// use when its command line has no --ports-file-dir.
func AttachProcess(pid int, target, monitor string) (*Process, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	exeInfo, err := os.Stat(proc + "/exe")
	if err != nil {
		return nil, fmt.Errorf("upgrade: pid %d: %w", pid, err)
	}
	targetInfo, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	if !os.SameFile(exeInfo, targetInfo) {
		exe, _ := os.Readlink(proc + "/exe")
		return nil, fmt.Errorf("upgrade: pid %d runs %s, not %s (give the binary it runs with --binary)", pid, exe, target)
	}
	split := func(name string) ([]string, error) {
		b, err := os.ReadFile(proc + "/" + name)
		if err != nil {
			return nil, fmt.Errorf("upgrade: pid %d: %w", pid, err)
		}
		b = bytes.TrimSuffix(b, []byte{0})
		if len(b) == 0 {
			return nil, nil
		}
		return strings.Split(string(b), "\x00"), nil
	}
	p := &Process{target: target, pid: pid, monitor: monitor}
	if p.argv, err = split("cmdline"); err != nil {
		return nil, err
	}
	if len(p.argv) == 0 {
		return nil, fmt.Errorf("upgrade: pid %d has no command line (a zombie?)", pid)
	}
	if p.env, err = split("environ"); err != nil {
		return nil, err
	}
	if p.dir, err = os.Readlink(proc + "/cwd"); err != nil {
		return nil, fmt.Errorf("upgrade: pid %d: %w", pid, err)
	}
	// The same files or pipes, opened anew: they outlive the process.
	if p.stdout, err = os.OpenFile(proc+"/fd/1", os.O_WRONLY|os.O_APPEND, 0); err != nil {
		p.stdout = nil
	}
	if p.stderr, err = os.OpenFile(proc+"/fd/2", os.O_WRONLY|os.O_APPEND, 0); err != nil {
		p.stderr = nil
	}
	p.portsDir = portsFileDir(p.argv, p.dir)
	return p, nil
}

func (p *Process) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "pid " + strconv.Itoa(p.pid)
}

// PID returns the pid of the leafbox running now.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Restart implements Service.
func (p *Process) Restart(ctx context.Context) error {
	if err := p.stop(ctx); err != nil {
		return err
	}
	cmd := exec.Command(p.target, p.argv[1:]...)
	cmd.Args[0] = p.argv[0]
	cmd.Env, cmd.Dir = p.env, p.dir
	if p.stdout != nil {
		cmd.Stdout = p.stdout
	}
	if p.stderr != nil {
		cmd.Stderr = p.stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("upgrade: start %s: %w", p.target, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.pid, p.cmd, p.exited, p.exitErr = cmd.Process.Pid, cmd, exited, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// stop ends the running leafbox: the one this Process started, or the
// attached pid.
func (p *Process) stop(ctx context.Context) error {
	p.mu.Lock()
	pid, cmd, exited := p.pid, p.cmd, p.exited
	p.mu.Unlock()
	if cmd != nil {
		select {
		case <-exited:
			return nil
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("upgrade: stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(stopTimeout)
	killed := false
	for alive(pid) {
		if !killed && time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// Exited implements Service.
func (p *Process) Exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		if !alive(p.pid) {
			return errNotRunning
		}
		return nil
	}
	return p.exitErr
}

// MonitorURL implements Service.
func (p *Process) MonitorURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.portsDir != "" {
		return readPortsFile(p.portsDir, p.pid)
	}
	return p.monitor
}

// Close releases the output files; the leafbox keeps running.
func (p *Process) Close() {
	if p.stdout != nil {
		p.stdout.Close()
	}
	if p.stderr != nil {
		p.stderr.Close()
	}
}
