package upgrade

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
)

func operator(t testing.TB) (string, []byte, nkeys.KeyPair) {
	t.Helper()
	kp, err := nkeys.CreateOperator()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	return pub, seed, kp
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, 0o755))
}

func TestSignVerify(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "leafbox")
	writeFile(t, bin, []byte("new binary"))
	pub, seed, kp := operator(t)
	sig, err := Sign(seed, bin)
	require.NoError(t, err)
	writeFile(t, bin+".sig", sig)

	signer, err := Verify(bin, bin+".sig", []string{pub})
	require.NoError(t, err)
	require.Equal(t, signer, pub)

	other, _, _ := operator(t)
	_, err = Verify(bin, bin+".sig", []string{other})
	require.ErrorIs(t, err, ErrUntrusted)
	_, err = Verify(bin, bin+".sig", nil)
	require.ErrorIs(t, err, ErrUntrusted)
	_, err = Verify(bin, bin+".missing", []string{pub})
	require.ErrorIs(t, err, ErrUnsigned)

	// The file changed after signing.
	writeFile(t, bin, []byte("new binarY"))
	_, err = Verify(bin, bin+".sig", []string{pub})
	require.ErrorIs(t, err, ErrBadSignature)
	require.ErrorContains(t, err, "is not the file signed")

	// A statement altered: the signature no longer matches it.
	altered := bytes.Replace(sig, []byte("size: 10"), []byte("size: 11"), 1)
	writeFile(t, bin+".sig", altered)
	_, err = Verify(bin, bin+".sig", []string{pub})
	require.ErrorIs(t, err, ErrBadSignature)
	require.ErrorContains(t, err, "does not match its statement")

	// nk -sign's form: the file's bytes signed, URL-safe base64.
	raw, err := kp.Sign([]byte("new binarY"))
	require.NoError(t, err)
	writeFile(t, bin+".sig", []byte(base64.RawURLEncoding.EncodeToString(raw)+"\n"))
	signer, err = Verify(bin, bin+".sig", []string{other, pub})
	require.NoError(t, err)
	require.Equal(t, signer, pub)
	_, err = Verify(bin, bin+".sig", []string{other})
	require.ErrorIs(t, err, ErrBadSignature)

	for _, bad := range []string{"", "leafbox-upgrade/2\n", "leafbox-upgrade/1\nkey O\n", "leafbox-upgrade/1\nsize: -1\n",
		"leafbox-upgrade/1\nkey: O\nsha256: zz\n", "leafbox-upgrade/1\nfoo: bar\n", "leafbox-upgrade/1\nkey: A\nkey: B\n", "not base64!"} {
		_, err := ParseSignature([]byte(bad))
		require.ErrorIs(t, err, ErrMalformed)
	}
	kpu, _ := nkeys.CreateUser()
	useed, _ := kpu.Seed()
	_, err = Sign(useed, bin)
	require.ErrorContains(t, err, "want an operator key")
}

func TestSwapRestore(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "leafbox")
	writeFile(t, target, []byte("old"))
	require.NoError(t, os.Chmod(target, 0o750))
	newBin := filepath.Join(dir, "new")
	require.NoError(t, os.WriteFile(newBin, []byte("new"), 0o600))

	require.NoError(t, Swap(target, newBin))
	got, _ := os.ReadFile(target)
	require.Equal(t, string(got), "new")
	prev, _ := os.ReadFile(target + PrevSuffix)
	require.Equal(t, string(prev), "old")
	info, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, info.Mode().Perm(), os.FileMode(0o750)) // the old one's mode
	entries, _ := os.ReadDir(dir)
	require.Equal(t, len(entries), 3) // leafbox, leafbox.prev, new: no temporary left

	require.NoError(t, Restore(target))
	got, _ = os.ReadFile(target)
	require.Equal(t, string(got), "old")
}

func TestCheckBinary(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, CheckArch(self))
	script := filepath.Join(t.TempDir(), "leafbox")
	writeFile(t, script, []byte("#!/bin/sh\necho leafbox v1\n"))
	require.ErrorContains(t, CheckArch(script), "is not an ELF executable")
	v, err := CheckRuns(context.Background(), script, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, v, "leafbox v1")
	writeFile(t, script, []byte("#!/bin/sh\necho something else\n"))
	_, err = CheckRuns(context.Background(), script, 5*time.Second)
	require.ErrorContains(t, err, `printed "something else", not a leafbox version`)
	writeFile(t, script, []byte("#!/bin/sh\necho broken >&2\nexit 2\n"))
	_, err = CheckRuns(context.Background(), script, 5*time.Second)
	require.ErrorContains(t, err, "exit status 2: broken")
	writeFile(t, script, []byte("#!/bin/sh\nexec sleep 30\n"))
	_, err = CheckRuns(context.Background(), script, 200*time.Millisecond)
	require.ErrorContains(t, err, "did not finish within 200ms")
}

func TestPortsFileDir(t *testing.T) {
	require.Equal(t, portsFileDir([]string{"leafbox", "run", "--ports-file-dir", "run"}, "/srv"), "/srv/run")
	require.Equal(t, portsFileDir([]string{"leafbox", "run", "--ports-file-dir=/x"}, "/srv"), "/x")
	require.Equal(t, portsFileDir([]string{"leafbox", "run"}, "/srv"), "")
}

func FuzzParseSignature(f *testing.F) {
	f.Add([]byte("leafbox-upgrade/1\nkey: OABC\nsha256: 00\nsize: 1\nsig: AA==\n"))
	f.Add([]byte("c2lnbmF0dXJl"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSignature(data)
		if err == nil && len(s.Sig) != 64 {
			t.Fatalf("a signature of %d bytes parsed", len(s.Sig))
		}
	})
}

// stallingService is a Service whose monitoring server answers /healthz
// 503 once and then stops answering (a loaded machine, a wedged process).
type stallingService struct{ url string }

func (s stallingService) String() string                { return "stalling" }
func (s stallingService) Restart(context.Context) error { return nil }
func (s stallingService) Exited() error                 { return nil }
func (s stallingService) MonitorURL() string            { return s.url }

func TestWaitHealthyNamesTheAnswerBeforeATimeout(t *testing.T) {
	since := time.Now()
	var answered atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answered.Load() {
			<-release // no answer: the probe's own timeout ends the request
			return
		}
		switch r.URL.Path {
		case "/varz":
			_, _ = fmt.Fprintf(w, `{"start":%q,"leafbox_version":"v1"}`, time.Now().Format(time.RFC3339Nano))
		case "/healthz":
			answered.Store(true)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"unavailable"}`))
		}
	}))
	defer srv.Close()
	defer close(release)
	_, err := WaitHealthy(context.Background(), stallingService{srv.URL}, since, 2500*time.Millisecond)
	if err == nil {
		t.Fatal("a service that never answered 200 counted as healthy")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "not healthy within 2.5s: /healthz: 503 ") || !strings.Contains(msg, "(then no answer: GET /varz: ") {
		t.Fatalf("error %q does not name the 503 first and the later silence after it", msg)
	}
}

// TestSystemdExited drives Systemd through a systemctl stand-in that
// prints the state a test file holds, as `systemctl show` does.
func TestSystemdExited(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	calls := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "systemctl")
	writeFile(t, bin, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\ncase \"$1\" in show) cat "+state+";; esac\n"))
	set := func(s string) { require.NoError(t, os.WriteFile(state, []byte(s), 0o644)) }
	s := &Systemd{Unit: "leafbox", Systemctl: bin}

	// The broken run before the restart (a rollback's case) is failing.
	set("ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nExecMainStatus=3\nInvocationID=aaa\n")
	require.NoError(t, s.Restart(context.Background()))
	if err := s.Exited(); err != nil {
		t.Fatalf("the run before Restart counted as the new one's failure: %v", err)
	}
	set("ActiveState=active\nSubState=running\nResult=success\nExecMainStatus=0\nInvocationID=bbb\n")
	if err := s.Exited(); err != nil {
		t.Fatalf("a running unit counted as exited: %v", err)
	}
	set("ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nExecMainStatus=3\nInvocationID=bbb\n")
	if err := s.Exited(); err == nil || !strings.Contains(err.Error(), "result exit-code, exit status 3") {
		t.Fatalf("a failed new run: %v", err)
	}
	set("ActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainStatus=3\nInvocationID=bbb\n")
	if err := s.Exited(); err == nil {
		t.Fatal("a failed unit did not count as exited")
	}
	log, _ := os.ReadFile(calls)
	if !strings.Contains(string(log), "restart --no-block leafbox\n") {
		t.Fatalf("systemctl calls:\n%s", log)
	}
}
