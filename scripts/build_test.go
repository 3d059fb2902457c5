//go:build linux

// Package scripts holds the tests of the release build (scripts/build): the
// ARM binaries are reproducible, static, stripped and within their size
// budget, and they run, under qemu-user-static, as a gateway would run
// them.
package scripts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sizeBudget is what each ARM binary must weigh less than, issue 11's
// "under 12 MB stripped", as scripts/build checks too.
const sizeBudget = 12_000_000

// armSegmentAlign is the alignment of the 32-bit ARM builds' segments
// (scripts/build's -R 0x4000): a kernel with pages of up to 16 KB, the
// Pi 5's included, maps them.
const armSegmentAlign = 0x4000

// qemuTimeout bounds each wait on a binary under emulation, which starts
// and runs many times slower than natively, more so on a loaded machine.
const qemuTimeout = 3 * time.Minute

// arch is an ARM target of scripts/build and how to run it here.
type arch struct {
	target   string      // scripts/build's name for it
	qemu     string      // the qemu-user-static binary that runs it
	machine  elf.Machine // its ELF machine
	platform string      // GOOS/GOARCH as `leafbox version` prints it
	level    string      // the build setting that pins the ISA level, key=value
	smoke    bool        // run under qemu by TestReleaseBinariesRunUnderQEMU
}

// arches are the ARM targets, all built and checked for size and
// reproducibility; arm64 and armv7 run under qemu too (armv6 shares
// armv7's code but for the ISA level, and is the largest, so its size is
// what the budget has to hold).
var arches = []arch{
	{target: "linux-arm64", qemu: "qemu-aarch64-static", machine: elf.EM_AARCH64, platform: "linux/arm64", level: "GOARM64=v8.0", smoke: true},
	{target: "linux-armv7", qemu: "qemu-arm-static", machine: elf.EM_ARM, platform: "linux/arm", level: "GOARM=7", smoke: true},
	{target: "linux-armv6", qemu: "qemu-arm-static", machine: elf.EM_ARM, platform: "linux/arm", level: "GOARM=6"},
}

// built is the one scripts/build run of the ARM targets this test binary
// makes (TestMain removes it).
var built struct {
	once sync.Once
	dir  string
	out  string // what scripts/build printed
	took time.Duration
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// repoRoot is the repository this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runBuild runs scripts/build -o dir with the ARM targets and env added to
// the environment; it returns the script's output.
func runBuild(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	args := []string{"-o", dir}
	for _, a := range arches {
		args = append(args, a.target)
	}
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "build"), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("scripts/build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// armBuild returns the directory of this run's ARM binaries, built once.
func armBuild(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "leafbox-release-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		began := time.Now()
		built.out, built.err = runBuild(t, dir)
		built.took = time.Since(began)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// git runs git in the repository and returns its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v (scripts/build stamps the commit and its date from git)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// stamp is what scripts/build stamps into a binary of this tree.
type stamp struct{ commit, date string }

func expectedStamp(t *testing.T) stamp {
	t.Helper()
	s := stamp{commit: git(t, "rev-parse", "HEAD")}
	if git(t, "status", "--porcelain") != "" {
		s.commit += "-dirty"
	}
	epoch, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	s.date = time.Unix(epoch, 0).UTC().Format(time.RFC3339)
	return s
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestReleaseBuildsAreReproducibleStaticAndSmall builds the ARM targets a
// second time, with the date given as SOURCE_DATE_EPOCH instead of read
// from git, and wants the same bytes; it checks each binary is a static,
// stripped ELF for its machine, built with the release settings, under the
// size budget.
func TestReleaseBuildsAreReproducibleStaticAndSmall(t *testing.T) {
	first := armBuild(t)
	t.Logf("first build (%v):\n%s", built.took.Round(time.Second), built.out)

	epoch := git(t, "log", "-1", "--format=%ct")
	second := t.TempDir()
	began := time.Now()
	out, err := runBuild(t, second, "SOURCE_DATE_EPOCH="+epoch)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build, SOURCE_DATE_EPOCH=%s (%v):\n%s", epoch, time.Since(began).Round(time.Second), out)

	for _, a := range arches {
		name := "leafbox-" + a.target
		path := filepath.Join(first, name)
		if s1, s2 := sha256File(t, path), sha256File(t, filepath.Join(second, name)); s1 != s2 {
			t.Errorf("%s is not reproducible: sha256 %s, then %s (compare `go version -m` of both)", name, s1, s2)
		}
		checkStaticStripped(t, path, a.machine)
		checkBuildSettings(t, path, a.level)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() >= sizeBudget {
			t.Errorf("%s is %d bytes (%.2f MB), not under its budget of %d bytes", name, st.Size(), float64(st.Size())/1e6, sizeBudget)
		}
		t.Logf("%s: %d bytes (%.2f MB; %d bytes under the limit of %d), sha256 %s", name, st.Size(),
			float64(st.Size())/1e6, sizeBudget-st.Size(), sizeBudget, sha256File(t, path))
		if a.machine == elf.EM_ARM {
			checkSegmentAlign(t, path, armSegmentAlign)
		}
	}
	script, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "build"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nbudget=%d ", sizeBudget); !strings.Contains(string(script), want) {
		t.Errorf("scripts/build does not fail at this test's limit: no %q in it", want)
	}
}

// checkSegmentAlign fails t unless each loadable segment of path is
// aligned to at least align, in the file as in memory, so that a kernel
// with pages of that size can map it.
func checkSegmentAlign(t *testing.T, path string, align uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if p.Align < align || p.Off%align != p.Vaddr%align {
			t.Errorf("%s: a PT_LOAD segment at offset %#x, address %#x, is aligned to %#x: a kernel with %d KB pages cannot map it",
				path, p.Off, p.Vaddr, p.Align, align>>10)
		}
	}
}

// checkStaticStripped fails t unless path is an ELF for machine with no
// interpreter, no shared libraries, no symbol table, no DWARF and no Go
// build id. (With -trimpath the toolchain does not record -ldflags in the
// build information, so the ELF itself is what shows -s -w -buildid=.)
func checkStaticStripped(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s: ELF machine %v, want %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: has a %v program header: not a static binary", path, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s: DT_NEEDED %v (%v): not a static binary", path, libs, err)
	}
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("%s: has section %s: not stripped", path, s.Name)
		}
		if s.Name == ".note.go.buildid" {
			// An ELF note: namesz, descsz, type (4 bytes each), name, desc.
			data, err := s.Data()
			if err != nil || len(data) < 8 || f.ByteOrder.Uint32(data[4:8]) != 0 {
				t.Errorf("%s: carries a Go build id (%v): built without -ldflags -buildid=", path, err)
			}
		}
	}
}

// checkBuildSettings fails t unless the build information recorded in
// path (what `go version -m` prints) is the release build's: no cgo,
// trimmed paths, no VCS stamp, the ISA level pinned, net/http without its
// bundled HTTP/2 (the smoke test's /varz request shows the monitoring
// server still answers).
func checkBuildSettings(t *testing.T, path, level string) {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	key, value, _ := strings.Cut(level, "=")
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "-tags": "nethttpomithttp2", "GOOS": "linux", key: value} {
		if settings[k] != want {
			t.Errorf("%s: build setting %s=%q, want %q", path, k, settings[k], want)
		}
	}
	for k := range settings {
		if strings.HasPrefix(k, "vcs") {
			t.Errorf("%s: build setting %s recorded; it differs between a checkout and a worktree", path, k)
		}
	}
}

// TestReleaseBinariesRunUnderQEMU runs each ARM binary under
// qemu-user-static as a gateway would: version, start, pub/sub with
// nats.go, a JetStream publish on file storage, a restart on the same
// store that still has the message, and clean shutdowns.
func TestReleaseBinariesRunUnderQEMU(t *testing.T) {
	dir := armBuild(t)
	want := expectedStamp(t)
	for _, a := range arches {
		if !a.smoke {
			continue
		}
		t.Run(a.target, func(t *testing.T) {
			t.Parallel()
			qemu, err := exec.LookPath(a.qemu)
			if err != nil {
				t.Fatalf("%s not found (%v): install Debian's qemu-user-static (scripts/test does: apt-get install qemu-user-static)", a.qemu, err)
			}
			began := time.Now()
			smoke(t, qemu, filepath.Join(dir, "leafbox-"+a.target), a, want)
			t.Logf("%s under %s: %v", a.target, a.qemu, time.Since(began).Round(100*time.Millisecond))
		})
	}
}

func smoke(t *testing.T, qemu, bin string, a arch, want stamp) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*qemuTimeout)
	defer cancel()

	out, err := exec.CommandContext(ctx, qemu, bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("leafbox version under %s: %v\n%s", a.qemu, err, out)
	}
	for _, line := range []string{"commit:   " + want.commit, "built:    " + want.date, "platform: " + a.platform} {
		if !strings.Contains(string(out), line+"\n") {
			t.Fatalf("leafbox version lacks %q:\n%s", line, out)
		}
	}

	store := t.TempDir()
	p := startLeafbox(t, qemu, bin, store)
	mon := p.url(t, "monitoring")
	var varz map[string]any
	if err := json.Unmarshal([]byte(httpGet(t, mon+"/varz")), &varz); err != nil {
		t.Fatal(err)
	}
	if varz["git_commit"] != want.commit || varz["build_date"] != want.date || varz["leafbox_version"] == nil {
		t.Fatalf("/varz git_commit %v build_date %v leafbox_version %v, want %s %s", varz["git_commit"], varz["build_date"],
			varz["leafbox_version"], want.commit, want.date)
	}

	nc := connect(t, p.url(t, "nats"))
	sub, err := nc.SubscribeSync("smoke.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("smoke.hello", []byte("hi from "+a.target)); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(qemuTimeout)
	if err != nil || m.Subject != "smoke.hello" || string(m.Data) != "hi from "+a.target {
		t.Fatalf("pub/sub: %v %v", m, err)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMOKE", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatalf("create a file stream: %v", err)
	}
	if st := stream.CachedInfo().Config.Storage; st != jetstream.FileStorage {
		t.Fatalf("stream storage %v, want file", st)
	}
	payload := []byte("order 1 on " + a.target)
	ack, err := js.Publish(ctx, "orders.1", payload)
	if err != nil || ack.Stream != "SMOKE" || ack.Sequence != 1 {
		t.Fatalf("JetStream publish: %+v %v", ack, err)
	}
	nc.Close()
	p.stop(t)

	p = startLeafbox(t, qemu, bin, store)
	nc = connect(t, p.url(t, "nats"))
	js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err = js.Stream(ctx, "SMOKE")
	if err != nil {
		t.Fatalf("the stream after a restart: %v", err)
	}
	got, err := stream.GetMsg(ctx, 1)
	if err != nil || got.Subject != "orders.1" || !bytes.Equal(got.Data, payload) {
		t.Fatalf("message 1 after a restart: %+v %v", got, err)
	}
	nc.Close()
	p.stop(t)
}

// qproc is a leafbox running under qemu.
type qproc struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	waitErr  error         // Wait's error, set before done is closed
	log      syncBuffer
	portsDir string
	ports    map[string][]string
}

// syncBuffer collects a process's stderr, written by exec's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
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

// startLeafbox runs bin under qemu on free loopback ports with store as
// its store directory, and waits until it is ready for clients.
func startLeafbox(t *testing.T, qemu, bin, store string) *qproc {
	t.Helper()
	p := &qproc{portsDir: t.TempDir(), done: make(chan struct{})}
	p.cmd = exec.Command(qemu, bin, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1",
		"--store-dir", store, "--ports-file-dir", p.portsDir)
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "STATE_DIRECTORY=", "LEAFBOX_CONFIG=")
	p.cmd.Stderr = &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // fails harmlessly when it has exited
		<-p.done
	})
	// qemu-user runs the guest in its own process: the pid is leafbox's.
	path := filepath.Join(p.portsDir, "leafbox_"+strconv.Itoa(p.cmd.Process.Pid)+".ports")
	p.await(t, "the ports file and the ready line", func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(p.log.String(), "ready for clients") {
			return false
		}
		return json.Unmarshal(data, &p.ports) == nil
	})
	return p
}

// await polls cond until it holds; the process signals neither event, so
// its ports file and log are read until qemuTimeout.
func (p *qproc) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(qemuTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-p.done:
			t.Fatalf("leafbox exited (%v) before %s; log:\n%s", p.waitErr, what, p.log.String())
		case <-deadline:
			t.Fatalf("no %s within %v; log:\n%s", what, qemuTimeout, p.log.String())
		case <-tick.C:
		}
	}
}

// url returns the 127.0.0.1 URL of kind in the ports file.
func (p *qproc) url(t *testing.T, kind string) string {
	t.Helper()
	for _, s := range p.ports[kind] {
		if u, err := url.Parse(s); err == nil && u.Hostname() == "127.0.0.1" {
			return s
		}
	}
	t.Fatalf("no 127.0.0.1 %s URL in the ports file: %v", kind, p.ports)
	return ""
}

// stop sends SIGTERM and wants a clean exit: status 0, the shutdown
// logged, the ports file removed.
func (p *qproc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		var ee *exec.ExitError
		if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
			t.Fatal(p.waitErr)
		}
	case <-time.After(qemuTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("no exit within %v of SIGTERM; log:\n%s", qemuTimeout, p.log.String())
	}
	log := p.log.String()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM; log:\n%s", code, log)
	}
	if !strings.Contains(log, "shutting down") || !strings.Contains(log, "stopped") {
		t.Fatalf("no shutting down / stopped lines after SIGTERM; log:\n%s", log)
	}
	if left, _ := filepath.Glob(filepath.Join(p.portsDir, "*.ports")); len(left) > 0 {
		t.Fatalf("ports file left after a clean exit: %v", left)
	}
}

func connect(t *testing.T, u string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(u, nats.Timeout(qemuTimeout))
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	client := &http.Client{Timeout: qemuTimeout}
	resp, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", u, resp.Status, err, body)
	}
	return string(body)
}
