package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/monhttp"
)

// Service is the running leafbox an upgrade restarts onto the new binary
// (and back onto the old one).
type Service interface {
	// String names it in messages: "systemd unit leafbox", "pid 4711".
	String() string
	// Restart stops the running leafbox, if any, and starts the binary
	// now at the target path in its place.
	Restart(ctx context.Context) error
	// Exited returns why the leafbox last started has stopped, or nil
	// while it runs (or when that cannot be known).
	Exited() error
	// MonitorURL is the monitoring base URL of the leafbox last
	// started; "" while it is not known yet.
	MonitorURL() string
}

// Systemd is a leafbox run by systemd: Restart queues `systemctl restart
// --no-block Unit` and returns, so that a new binary that never reports
// ready (Type=notify) cannot hold the upgrade for the unit's start
// timeout; the health wait decides, and Exited reads the unit's state.
type Systemd struct {
	// Unit is the unit's name, such as "leafbox".
	Unit string
	// Systemctl is the systemctl executable; "" finds it on $PATH.
	Systemctl string
	// Monitor is the monitoring base URL, such as http://127.0.0.1:8222.
	Monitor string

	// before is the unit's InvocationID when Restart was asked: a failure
	// state still showing that run (the broken binary's, during a
	// rollback) is not the new start's.
	before string
}

func (s *Systemd) String() string { return "systemd unit " + s.Unit }

func (s *Systemd) systemctl(ctx context.Context, args ...string) (string, error) {
	bin := s.Systemctl
	if bin == "" {
		bin = "systemctl"
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Restart implements Service.
func (s *Systemd) Restart(ctx context.Context) error {
	s.before = ""
	if out, err := s.systemctl(ctx, "show", s.Unit, "--property=InvocationID"); err == nil {
		s.before = parseUnitState(out)["InvocationID"]
	}
	_, err := s.systemctl(ctx, "restart", "--no-block", s.Unit)
	return err
}

// Exited implements Service: the unit's start failed when systemd shows
// it failed or waiting to restart it after a failure (Restart=on-failure).
// A stop that was asked for shows neither, so the old process going away
// does not count, and nor does a failure of the run before Restart.
func (s *Systemd) Exited() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := s.systemctl(ctx, "show", s.Unit, "--property=ActiveState,SubState,Result,ExecMainStatus,InvocationID")
	if err != nil {
		return nil // unknown: the health wait decides
	}
	st := parseUnitState(out)
	if st["InvocationID"] == s.before {
		return nil // the restart asked for has not started a new run yet
	}
	if st["ActiveState"] == "failed" || st["SubState"] == "auto-restart" {
		return fmt.Errorf("%s: %s (%s), result %s, exit status %s", s, st["ActiveState"], st["SubState"], st["Result"], st["ExecMainStatus"])
	}
	return nil
}

// parseUnitState reads `systemctl show`'s Key=Value lines.
func parseUnitState(out string) map[string]string {
	st := make(map[string]string)
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			st[k] = v
		}
	}
	return st
}

// MonitorURL implements Service.
func (s *Systemd) MonitorURL() string { return s.Monitor }

// healthPoll is how often WaitHealthy asks.
const healthPoll = 100 * time.Millisecond

// varzDoc is what WaitHealthy reads of /varz.
type varzDoc struct {
	Start   time.Time `json:"start"`
	Version string    `json:"leafbox_version"`
}

// WaitHealthy waits up to timeout until the leafbox svc last started
// answers /healthz with 200 and its /varz start is not before since (so
// that an old process still answering does not count). It returns the
// version it reports, or the last problem seen. When the new process
// did answer but a later try got no answer at all (a loaded machine), the
// error names the answer first: it says more than a timeout does.
func WaitHealthy(ctx context.Context, svc Service, since time.Time, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, answer := "no answer yet", ""
	tick := time.NewTicker(healthPoll)
	defer tick.Stop()
	for {
		if err := svc.Exited(); err != nil {
			return "", fmt.Errorf("the new leafbox exited: %w", err)
		}
		if base := svc.MonitorURL(); base == "" {
			last = "its monitoring address is not known yet (no ports file)"
		} else if v, problem, answered := probe(ctx, base, since); problem == "" {
			return v, nil
		} else if ctx.Err() == nil {
			last = problem // not the deadline's cut of a request under way
			if answered {
				answer = problem
			}
		}
		select {
		case <-ctx.Done():
			if err := svc.Exited(); err != nil {
				return "", fmt.Errorf("the new leafbox exited: %w", err)
			}
			if answer != "" && answer != last {
				return "", fmt.Errorf("not healthy within %v: %s (then no answer: %s)", timeout, answer, last)
			}
			return "", fmt.Errorf("not healthy within %v: %s", timeout, last)
		case <-tick.C:
		}
	}
}

// probe asks base's /varz and /healthz; it returns the version, or what
// is wrong and whether the new process answered HTTP at all.
func probe(ctx context.Context, base string, since time.Time) (string, string, bool) {
	get := func(path string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
		if err != nil {
			return 0, nil, err
		}
		resp, err := monhttp.Do(req, 2*time.Second)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, body, err
	}
	code, body, err := get("/varz")
	if err != nil {
		return "", "GET /varz: " + err.Error(), false
	}
	var v varzDoc
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		return "", fmt.Sprintf("GET /varz: status %d", code), true
	}
	if v.Start.Before(since) {
		return "", "the old process still answers (started " + v.Start.Format(time.RFC3339) + ")", false
	}
	code, body, err = get("/healthz")
	if err != nil {
		return "", "GET /healthz: " + err.Error(), false
	}
	if code != http.StatusOK {
		return "", fmt.Sprintf("/healthz: %d %s", code, strings.TrimSpace(string(body))), true
	}
	return v.Version, "", true
}

// portsFile is what WaitHealthy reads of a ports file (leafbox run
// --ports-file-dir).
type portsFile struct {
	Monitoring []string `json:"monitoring"`
}

// readPortsFile returns the first monitoring URL of dir's ports file for
// pid, or "".
func readPortsFile(dir string, pid int) string {
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("leafbox_%d.ports", pid)))
	if err != nil {
		return ""
	}
	var p portsFile
	if json.Unmarshal(data, &p) != nil || len(p.Monitoring) == 0 {
		return ""
	}
	return p.Monitoring[0]
}

// portsFileDir returns the --ports-file-dir of a leafbox run command
// line, resolved against dir, or "".
func portsFileDir(argv []string, dir string) string {
	for i, a := range argv {
		v, ok := "", false
		switch {
		case a == "--ports-file-dir" && i+1 < len(argv):
			v, ok = argv[i+1], true
		case strings.HasPrefix(a, "--ports-file-dir="):
			v, ok = strings.TrimPrefix(a, "--ports-file-dir="), true
		}
		if ok && v != "" {
			if !filepath.IsAbs(v) {
				v = filepath.Join(dir, v)
			}
			return v
		}
	}
	return ""
}

// errNotRunning is Exited's error for a process that is gone.
var errNotRunning = errors.New("not running")
