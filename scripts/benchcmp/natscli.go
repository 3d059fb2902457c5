package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// natsCLI runs the `nats` command line tool (natscli) with a clean
// environment: no NATS_* variables and no saved contexts, so only the
// flags given here decide what it connects to.
type natsCLI struct {
	bin     string
	env     []string
	timeout time.Duration // timeout bounds each command.
}

// newNatsCLI returns a runner for bin whose configuration home is a fresh
// directory under workDir.
func newNatsCLI(bin, workDir string, timeout time.Duration) (*natsCLI, error) {
	home := filepath.Join(workDir, "natscli-config")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NATS_") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "XDG_CONFIG_HOME="+home)
	return &natsCLI{bin: bin, env: env, timeout: timeout}, nil
}

// job is one running natscli command.
type job struct {
	name    string
	timeout time.Duration
	cmd     *exec.Cmd
	out     bytes.Buffer // out collects stdout and stderr; read it only after done.
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{} // done is closed once the process is reaped.
	err     error         // err is Wait's result; read only after done.
	stopped bool          // stopped records that stop was called, so its exit is expected.
}

// start launches `nats <args> -s url --no-context` in its own process
// group, with --no-progress for the bench commands (the only ones that
// draw progress bars, and the only ones that accept the flag). The
// command is killed when it outlives the runner's timeout or ctx ends.
func (n *natsCLI) start(ctx context.Context, serverURL string, args ...string) (*job, error) {
	return n.startFor(ctx, n.timeout, serverURL, args...)
}

// startFor is start with a timeout other than the runner's.
func (n *natsCLI) startFor(ctx context.Context, timeout time.Duration, serverURL string, args ...string) (*job, error) {
	full := natsArgs(serverURL, args)
	jctx, cancel := context.WithTimeout(ctx, timeout)
	cmd := exec.CommandContext(jctx, n.bin, full...)
	cmd.Env = n.env
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	j := &job{name: "nats " + strings.Join(args, " "), timeout: timeout, cmd: cmd, ctx: jctx, cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &j.out, &j.out
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("benchcmp: starting %s: %w", j.name, err)
	}
	go func() {
		j.err = cmd.Wait()
		cancel()
		close(j.done)
	}()
	return j, nil
}

// natsArgs returns the full natscli command line for args against
// serverURL; see start.
func natsArgs(serverURL string, args []string) []string {
	full := append(append([]string{}, args...), "--server", serverURL, "--no-context")
	if len(args) > 0 && args[0] == "bench" {
		full = append(full, "--no-progress")
	}
	return full
}

// run starts a command and waits for it.
func (n *natsCLI) run(ctx context.Context, serverURL string, args ...string) (*job, error) {
	return n.runFor(ctx, n.timeout, serverURL, args...)
}

// runFor is run with a timeout other than the runner's.
func (n *natsCLI) runFor(ctx context.Context, timeout time.Duration, serverURL string, args ...string) (*job, error) {
	j, err := n.startFor(ctx, timeout, serverURL, args...)
	if err != nil {
		return nil, err
	}
	return j, j.wait()
}

// wait waits for the command and describes any failure with the end of
// its output.
func (j *job) wait() error {
	<-j.done
	switch {
	case j.stopped:
		return nil
	case errors.Is(j.ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: killed after the %v timeout%s", j.name, j.timeout, j.outputTail())
	case j.err != nil:
		return fmt.Errorf("%s: %w%s", j.name, j.err, j.outputTail())
	}
	return nil
}

// stop ends a command that runs until interrupted (such as `bench service
// serve`): SIGINT to its group, then SIGKILL after a grace period.
func (j *job) stop() {
	select {
	case <-j.done:
		return
	default:
	}
	j.stopped = true
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-j.done:
	case <-time.After(5 * time.Second):
		j.cancel()
		<-j.done
	}
}

// outputTail returns the end of the command's output for an error message.
func (j *job) outputTail() string {
	s := strings.TrimSpace(j.out.String())
	if s == "" {
		return ""
	}
	return "\n--- last lines of its output ---\n" + tail(s, 10)
}

// version runs `bin args...` and returns the first line of its output, or
// "(unknown version)".
func version(ctx context.Context, bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil || line == "" {
		return "(unknown version)"
	}
	return strings.TrimSpace(line)
}
