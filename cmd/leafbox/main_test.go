//go:build unix

package main

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/server"
)

// End-to-end tests of the real binary: build it once, run it with free
// ports, and drive it with signals.

// waitTimeout bounds every wait on the process. The shutdown bound of
// `leafbox run` is 10s; the extra margin covers a loaded machine.
const waitTimeout = 20 * time.Second

// binary is the leafbox executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leafbox-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "leafbox")
	// -buildvcs=auto records the commit in a git checkout even where
	// GOFLAGS turns it off, as `go build` does by default (TestVersionCommand).
	args := []string{"build", "-buildvcs=auto", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go build:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running leafbox.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr syncBuffer
}

// syncBuffer collects the process's stderr; exec copies into it from its
// own goroutine, and Wait returns only once the copy is complete.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs leafbox with args; the process is killed in t.Cleanup if the
// test did not stop it.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv runs leafbox with args and env added to its environment. An
// installed leafbox's /etc/leafbox/leafbox.yaml is not read (an empty
// LEAFBOX_CONFIG) unless env sets LEAFBOX_CONFIG.
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "STATE_DIRECTORY=", "LEAFBOX_CONFIG="), env...)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// log returns what the process has written to stderr so far.
func (p *proc) log() string { return p.stderr.String() }

// waitLog waits until the log holds a line containing want.
func (p *proc) waitLog(want string) {
	p.t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(p.log(), want) {
		select {
		case <-deadline:
			p.t.Fatalf("no log line with %q within %v; log:\n%s", want, waitTimeout, p.log())
		case <-tick.C:
		}
	}
}

// signal sends sig to the process.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to exit within waitTimeout and returns its
// exit code.
func (p *proc) wait() int {
	p.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.t.Fatalf("wait: %v", err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(waitTimeout):
		_ = p.cmd.Process.Kill()
		<-exited
		p.t.Fatalf("leafbox did not exit within %v; log:\n%s", waitTimeout, p.log())
		return -1
	}
}

// ports is the JSON of leafbox's ports file.
type ports struct {
	Nats       []string `json:"nats"`
	Monitoring []string `json:"monitoring"`
	LeafNodes  []string `json:"leafnodes"`
}

// waitPorts polls dir for the process's ports file until waitTimeout.
func (p *proc) waitPorts(dir string) (ports, string) {
	p.t.Helper()
	path := filepath.Join(dir, "leafbox_"+strconv.Itoa(p.cmd.Process.Pid)+".ports")
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var pf ports
			if err := json.Unmarshal(data, &pf); err != nil {
				p.t.Fatalf("ports file %s: %v\n%s", path, err, data)
			}
			return pf, path
		}
		select {
		case <-deadline:
			p.t.Fatalf("no ports file %s within %v; log:\n%s", path, waitTimeout, p.log())
		case <-tick.C:
		}
	}
}

// loopbackURL returns the URL among urls whose host is 127.0.0.1.
func loopbackURL(t *testing.T, urls []string) *url.URL {
	t.Helper()
	for _, s := range urls {
		u, err := url.Parse(s)
		if err == nil && u.Hostname() == "127.0.0.1" {
			return u
		}
	}
	t.Fatalf("no 127.0.0.1 URL among %v", urls)
	return nil
}

// readInfo connects to a client URL and returns the server's INFO line.
func readInfo(t *testing.T, u *url.URL) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", u.Host, waitTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("want INFO from %s, got %q, %v", u, line, err)
	}
	return line
}

// get fetches url and returns the body of a 200 response.
func get(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: waitTimeout}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", url, resp.Status, err, body)
	}
	return string(body)
}

func TestRunServesAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "run", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir, "--server-name", "e2e-box")
	pf, path := p.waitPorts(dir)

	if info := readInfo(t, loopbackURL(t, pf.Nats)); !strings.Contains(info, `"server_name":"e2e-box"`) {
		t.Fatalf("--server-name not in INFO: %s", info)
	}
	mon := loopbackURL(t, pf.Monitoring)
	if body := get(t, mon.String()+"/healthz"); !strings.Contains(body, `"ok"`) {
		t.Fatalf("/healthz: %s", body)
	}
	body := get(t, mon.String()+"/varz")
	if !strings.Contains(body, `"server_name": "e2e-box"`) {
		t.Fatalf("--server-name not in /varz: %s", body)
	}
	// Clients detect features by the nats-server version; leafbox's own
	// is beside it.
	if !strings.Contains(body, `"version": "`+server.Version+`"`) || !strings.Contains(body, `"leafbox_version": "`) {
		t.Fatalf("/varz lacks the nats-server version or leafbox_version: %s", body)
	}
	p.waitLog("ready for clients")

	began := time.Now()
	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, p.log())
	}
	if d := time.Since(began); d > 10*time.Second+2*time.Second {
		t.Fatalf("exit took %v, beyond the 10s shutdown bound", d)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ports file not removed on exit: %v", err)
	}
	if !strings.Contains(p.log(), "stopped") {
		t.Fatalf("no 'stopped' in log:\n%s", p.log())
	}
}

func TestRunStopsOnSIGINT(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "0", "--ports-file-dir", dir)
	pf, _ := p.waitPorts(dir)
	if len(pf.Monitoring) != 0 {
		t.Fatalf("monitoring listed with --http-port 0: %v", pf.Monitoring)
	}
	readInfo(t, loopbackURL(t, pf.Nats))
	p.signal(syscall.SIGINT)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGINT; log:\n%s", code, p.log())
	}
}

func TestRunLogFormatJSON(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "0", "--ports-file-dir", dir,
		"--log-format", "json", "--log-level", "debug")
	pf, _ := p.waitPorts(dir)
	p.waitLog(`"msg":"ready for clients"`)
	readInfo(t, loopbackURL(t, pf.Nats)) // connects and closes
	p.waitLog(`"msg":"client connection closed"`)
	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, p.log())
	}
	for _, line := range strings.Split(strings.TrimSpace(p.log()), "\n") {
		var rec struct{ Time, Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time == "" || rec.Level == "" || rec.Msg == "" {
			t.Fatalf("not a JSON log record (%v): %s", err, line)
		}
	}
}

func TestRunReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "leafbox.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("listen: 127.0.0.1\nport: -1\nhttp_port: 0\nmax_payload: 1MB\n")
	p := start(t, "run", "--config", cfg, "--ports-file-dir", dir)
	pf, _ := p.waitPorts(dir)
	u := loopbackURL(t, pf.Nats)

	if info := readInfo(t, u); !strings.Contains(info, `"max_payload":1048576`) {
		t.Fatalf("max_payload 1MB not in INFO: %s", info)
	}

	write("listen: 127.0.0.1\nport: -1\nhttp_port: 0\nmax_payload: 512KB\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("reload complete")
	if info := readInfo(t, u); !strings.Contains(info, `"max_payload":524288`) {
		t.Fatalf("reloaded max_payload 512KB not in INFO: %s", info)
	}

	write("listen: 127.0.0.1\nport: -1\nhttp_port: 0\nmax_payload: lots\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("reload failed")
	if !strings.Contains(p.log(), "max_payload: invalid size") {
		t.Fatalf("reload error not precise; log:\n%s", p.log())
	}
	readInfo(t, u) // still serving on the old configuration

	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, p.log())
	}
}

func TestRunLameDuckOnSIGUSR2(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(cfg, []byte("lame_duck_duration: 1s\nlame_duck_grace_period: 100ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "run", "--config", cfg, "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir)
	pf, path := p.waitPorts(dir)
	readInfo(t, loopbackURL(t, pf.Nats))

	p.signal(syscall.SIGUSR2)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after lame duck; log:\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), "lame duck mode complete") {
		t.Fatalf("no lame duck completion in log:\n%s", p.log())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ports file not removed after lame duck: %v", err)
	}
}

func TestRunFailsWhenPortIsInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	p := start(t, "run", "--addr", "127.0.0.1", "--port", port, "--http-port", "0")
	if code := p.wait(); code == 0 {
		t.Fatalf("exit code 0 with port %s in use; log:\n%s", port, p.log())
	}
	if !strings.Contains(p.log(), "address already in use") {
		t.Fatalf("error does not say why; log:\n%s", p.log())
	}
}

func TestRunRefusesWebsocketLeafRemote(t *testing.T) {
	p := start(t, "run", "--port", "-1", "--leaf-remote", "wss://hub.example:443")
	if code := p.wait(); code != 1 {
		t.Fatalf("exit code %d, want 1; log:\n%s", code, p.log())
	}
	want := `leafbox: flag --leaf-remote: leafnodes.remotes[0].url: URL "wss://hub.example:443": websocket leafnodes are not supported yet`
	if !strings.Contains(p.log(), want) {
		t.Fatalf("want the websocket error; log:\n%s", p.log())
	}
}

func TestVersionCommand(t *testing.T) {
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	for _, want := range []string{"leafbox ", "go:       go1.", "platform: "} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("version output lacks %q:\n%s", want, out)
		}
	}

	// The commit is the one the toolchain recorded in the binary.
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		// go build records VCS information only where .git is a
		// directory: not in a `git worktree` checkout, nor without git.
		t.Skipf("the toolchain recorded no vcs.revision in this checkout; commit line: %s", out)
	}
	want := "commit:   " + revision
	if modified == "true" {
		want += "-dirty"
	}
	if !strings.Contains(string(out), want+"\n") {
		t.Fatalf("version output lacks %q:\n%s", want, out)
	}
}
