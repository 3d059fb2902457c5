package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serverStyle selects the command line a server binary understands.
type serverStyle string

const (
	styleLeafbox serverStyle = "leafbox"     // leafbox run --addr … --ports-file-dir DIR
	styleNATS    serverStyle = "nats-server" // nats-server -a … --ports_file_dir DIR
)

// Bounds on server start-up and shut-down.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 10 * time.Second
)

// syncMode is the JetStream file-store sync policy a server runs with.
type syncMode string

const (
	// syncDefault leaves the policy to the server: leafbox fsyncs before
	// every PubAck, nats-server every 2 minutes.
	syncDefault syncMode = ""
	// syncAlways fsyncs before every acknowledgement.
	syncAlways syncMode = "always"
	// syncInterval fsyncs every 2 minutes, nats-server's default.
	syncInterval syncMode = "2m"
)

// String names the mode in server labels and directory names.
func (m syncMode) String() string {
	switch m {
	case syncDefault:
		return "default"
	case syncAlways:
		return "always"
	}
	return "every " + string(m)
}

// serverSetup is how to start one server: its arguments and, when the
// sync mode is not the server's default, a configuration file to write
// before it starts.
type serverSetup struct {
	args       []string
	configPath string // configPath is where to write config; "" when there is none.
	config     string
}

// benchKey is the encryption key of the encrypted store rows, the same on
// both servers.
const benchKey = "benchcmp encryption key, 32 B..."

// serverCommand returns the setup that starts a server of the given style
// on loopback, with the client and monitoring ports chosen by the kernel
// and written to a ports file in dir, and JetStream on with its store in
// dir/store (a fresh directory for every start). A sync mode other than
// the default, and a cipher (encryption at rest with benchKey), go into a
// configuration file in dir, the only place either server accepts them;
// every other setting stays on the command line.
func serverCommand(style serverStyle, sync syncMode, cipher, dir string) (serverSetup, error) {
	store := filepath.Join(dir, "store")
	var setup serverSetup
	var extra []string // jetstream settings beyond store_dir, as key: value
	if sync != syncDefault {
		extra = append(extra, "sync_interval: "+strconv.Quote(string(sync)))
	}
	if cipher != "" {
		extra = append(extra, "cipher: "+cipher, "key: "+strconv.Quote(benchKey))
	}
	switch style {
	case styleLeafbox:
		setup.args = []string{"run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1",
			"--ports-file-dir", dir, "--jetstream"}
		if len(extra) == 0 {
			setup.args = append(setup.args, "--store-dir", store)
			return setup, nil
		}
		setup.configPath = filepath.Join(dir, "leafbox.yaml")
		setup.config = fmt.Sprintf("jetstream:\n  store_dir: %s\n", strconv.Quote(store))
		for _, e := range extra {
			setup.config += "  " + e + "\n"
		}
	case styleNATS:
		setup.args = []string{"-a", "127.0.0.1", "-p", "-1", "-m", "-1", "--ports_file_dir", dir}
		if len(extra) == 0 {
			setup.args = append(setup.args, "-js", "-sd", store)
			return setup, nil
		}
		setup.configPath = filepath.Join(dir, "nats-server.conf")
		setup.config = fmt.Sprintf("jetstream {\n  store_dir: %s\n", strconv.Quote(store))
		for _, e := range extra {
			setup.config += "  " + e + "\n"
		}
		setup.config += "}\n"
	default:
		return setup, fmt.Errorf("benchcmp: unknown server style %q (want %q or %q)", style, styleLeafbox, styleNATS)
	}
	setup.args = append(setup.args, "--config", setup.configPath)
	return setup, nil
}

// portsFile is the JSON both servers write to <name>_<pid>.ports.
type portsFile struct {
	NATS       []string `json:"nats"`
	Monitoring []string `json:"monitoring"`
}

// parsePortsFile returns the client address (host:port) and the monitoring
// base URL from a ports file.
func parsePortsFile(b []byte) (clientAddr, monitorURL string, err error) {
	var pf portsFile
	if err := json.Unmarshal(b, &pf); err != nil {
		return "", "", fmt.Errorf("benchcmp: ports file: %w", err)
	}
	if len(pf.NATS) == 0 {
		return "", "", errors.New("benchcmp: ports file lists no nats listener")
	}
	if len(pf.Monitoring) == 0 {
		return "", "", errors.New("benchcmp: ports file lists no monitoring listener")
	}
	u, err := url.Parse(pf.NATS[0])
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("benchcmp: ports file: bad nats url %q", pf.NATS[0])
	}
	return u.Host, strings.TrimSuffix(pf.Monitoring[0], "/"), nil
}

// server is one running broker process, started in its own process group
// so that stopping it also stops anything it spawned.
type server struct {
	label      string
	bin        string
	dir        string // dir holds the ports file, the log, any configuration file and the store.
	cmd        *exec.Cmd
	logPath    string
	clientAddr string        // clientAddr is host:port of the client listener.
	monitorURL string        // monitorURL is the monitoring base URL, without a trailing slash.
	exited     chan struct{} // exited is closed when the process has been reaped.
	exitErr    error         // exitErr is Wait's result; read only after exited is closed.
	subszErr   error         // subszErr is how /subsz failed, once it has; see waitSubscribed.
}

// startServer starts bin in dir, waits for its ports file and for one
// client handshake, and returns the running server.
func startServer(ctx context.Context, label, bin string, style serverStyle, sync syncMode, cipher, dir string) (*server, error) {
	setup, err := serverCommand(style, sync, cipher, dir)
	if err != nil {
		return nil, err
	}
	return startSetup(ctx, label, bin, setup, dir)
}

// startSetup starts bin in dir as setup says, writing its configuration
// file first if it has one, waits for its ports file and for one client
// handshake, and returns the running server.
func startSetup(ctx context.Context, label, bin string, setup serverSetup, dir string) (*server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	if setup.configPath != "" {
		if err := os.WriteFile(setup.configPath, []byte(setup.config), 0o644); err != nil {
			return nil, fmt.Errorf("benchcmp: %w", err)
		}
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor

	cmd := exec.Command(bin, setup.args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchcmp: starting %s (%s): %w", label, bin, err)
	}
	s := &server{label: label, bin: bin, dir: dir, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()

	if err := s.awaitReady(ctx, dir); err != nil {
		s.stop()
		return nil, fmt.Errorf("benchcmp: %s (%s %s) did not start: %w%s",
			label, bin, strings.Join(setup.args, " "), err, s.logTail())
	}
	return s, nil
}

// awaitReady waits for the ports file the server writes once it listens,
// then completes one client handshake (INFO, CONNECT, PING → PONG).
func (s *server) awaitReady(ctx context.Context, dir string) error {
	deadline := time.Now().Add(startTimeout)
	pattern := filepath.Join(dir, fmt.Sprintf("*_%d.ports", s.cmd.Process.Pid))
	for {
		if err := s.alive(); err != nil {
			return err
		}
		if matches, _ := filepath.Glob(pattern); len(matches) > 0 {
			b, err := os.ReadFile(matches[0])
			if err == nil {
				// A file caught half-written fails to parse; try again.
				if s.clientAddr, s.monitorURL, err = parsePortsFile(b); err == nil {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ports file matching %s after %v", pattern, startTimeout)
		}
		if err := pause(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return pingServer(ctx, s.clientAddr, time.Until(deadline))
}

// alive returns an error if the process has exited.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited unexpectedly (%v)%s", s.label, s.exitErr, s.logTail())
	default:
		return nil
	}
}

// pid returns the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM to the server's process group, waits up to
// stopTimeout, then sends SIGKILL. It is safe to call more than once.
func (s *server) stop() { s.stopWithin(stopTimeout) }

// stopWithin sends SIGTERM to the server's process group, waits up to
// timeout, then sends SIGKILL. It reports whether the server exited by
// itself (also when it had already).
func (s *server) stopWithin(timeout time.Duration) bool {
	select {
	case <-s.exited:
		return true
	default:
	}
	_ = syscall.Kill(-s.pid(), syscall.SIGTERM)
	select {
	case <-s.exited:
		return true
	case <-time.After(timeout):
		_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
		<-s.exited
		return false
	}
}

// logTail returns the end of the server's log, prefixed for an error
// message, or "" when the log is empty.
func (s *server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	return "\n--- last lines of " + s.logPath + " ---\n" + tail(string(b), 15)
}

// childAttr puts a child in its own process group, so that it and its
// children can be signalled together, and asks Linux to kill it if this
// program dies first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pause sleeps for d or until ctx is done. It is used only between polls
// that have their own deadline.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
