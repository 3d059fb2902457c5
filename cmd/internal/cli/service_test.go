package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// useSystemConfig points the system configuration file at path for the
// test.
func useSystemConfig(t *testing.T, path string) {
	t.Helper()
	old := systemConfigFile
	systemConfigFile = path
	t.Cleanup(func() { systemConfigFile = old })
}

// Without a FILE, config print (like run) reads the system file when it
// exists, $LEAFBOX_CONFIG before it, and the built-in default otherwise.
func TestDefaultConfigFile(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("STATE_DIRECTORY", "")
	etc := writeFile(t, "leafbox.yaml", "server_name: from-etc\n")
	other := writeFile(t, "other.yaml", "server_name: from-env\n")

	useSystemConfig(t, etc)
	stdout, stderr, code := runCLI(t, "config", "print")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# effective configuration of "+etc+" ", "\nserver_name: from-etc\n")

	t.Setenv(configEnv, other)
	stdout, stderr, code = runCLI(t, "config", "print")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# effective configuration of "+other+" ", "\nserver_name: from-env\n")

	t.Setenv(configEnv, "") // set and empty: the built-in default
	stdout, stderr, code = runCLI(t, "config", "print")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# effective configuration of the built-in default ")
	os.Unsetenv(configEnv)

	useSystemConfig(t, filepath.Join(t.TempDir(), "absent.yaml"))
	stdout, stderr, code = runCLI(t, "config", "print")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# effective configuration of the built-in default ")

	// A system file that cannot be examined is an error, not the defaults.
	blocked := filepath.Join(etc, "leafbox.yaml") // etc is a file
	useSystemConfig(t, blocked)
	for _, args := range [][]string{{"config", "print"}, {"run", "--port", "-1", "--http-port", "0"}} {
		_, stderr, code = runCLI(t, args...)
		requireCode(t, code, 1, stderr)
		requireContains(t, "stderr", stderr, "leafbox: stat "+blocked+": not a directory")
	}

	// A $LEAFBOX_CONFIG naming a missing file fails like --config does.
	t.Setenv(configEnv, "/nonexistent/leafbox.yaml")
	_, stderr, code = runCLI(t, "run", "--port", "-1", "--http-port", "0")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "leafbox: open /nonexistent/leafbox.yaml: no such file or directory")
}

// A NOTIFY_SOCKET or WATCHDOG_USEC that systemd would never set is a unit
// file mistake, refused at start.
func TestRunRejectsABadNotifyEnvironment(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("NOTIFY_SOCKET", "relative/notify")
	_, stderr, code := runCLI(t, "run", "--port", "-1", "--http-port", "0")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, `leafbox: systemd: NOTIFY_SOCKET is not a socket path: "relative/notify"`)

	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "notify"))
	t.Setenv("WATCHDOG_USEC", "30s")
	_, stderr, code = runCLI(t, "run", "--port", "-1", "--http-port", "0")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, `leafbox: systemd: WATCHDOG_USEC="30s" is not a positive count of microseconds`)
}

func TestServiceStatus(t *testing.T) {
	if got, want := serviceStatus(nil, nil), "ready for clients; no uplinks"; got != want {
		t.Fatalf("status %q, want %q", got, want)
	}
	ups := []node.UplinkStatus{
		{Status: outbox.Status{Name: "tel", BacklogMsgs: 3, BacklogBytes: 1536, OldestAge: 2400 * time.Millisecond}, LinkState: "connecting"},
		{Status: outbox.Status{Name: "alarms"}, LinkState: "connected"},
	}
	downs := []node.DownlinkStatus{{Status: downlink.Status{Name: "cmd", Pending: 4}, LinkState: "connected"}}
	got := serviceStatus(ups, downs)
	want := "ready for clients; uplink tel: link connecting, backlog 3 msgs 1.5KiB, oldest 2s; " +
		"uplink alarms: link connected, backlog 0 msgs 0B; downlink cmd: link connected, 4 pending"
	if got != want {
		t.Fatalf("status\n %q, want\n %q", got, want)
	}
	if strings.Contains(got, "\n") {
		t.Fatal("a status line must be one line")
	}
}
