package app

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

func TestBuildRejectsInvalidConfig(t *testing.T) {
	c := mustParse(t, "port: 70000")
	c.SetDefaults(testEnv)
	_, err := Build(c, Flags{})
	require.ErrorContains(t, err, "line 1: port: 70000 is out of range")
}

// startApp builds and starts an app on loopback with free ports and shuts
// it down in t.Cleanup.
func startApp(t *testing.T, src string, flags Flags) *App {
	t.Helper()
	return startConfig(t, loopbackConfig(t, src, tempEnv(t)), flags)
}

// readInfo dials addr and returns the first protocol line, which must be
// the server's INFO.
func readInfo(t *testing.T, addr net.Addr) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr.String(), testTimeout)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	if !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("want INFO, got %q", line)
	}
	return line
}

func TestAppStartServesClientsAndMonitoring(t *testing.T) {
	dir := t.TempDir()
	a := startApp(t, "http_port: -1", Flags{PortsFileDir: dir})
	readInfo(t, a.Addr())

	mon := a.MonitorAddr()
	if mon == nil {
		t.Fatal("monitoring not started")
	}
	for _, path := range []string{"/healthz", "/varz", "/connz", "/metrics"} {
		resp, err := http.Get("http://" + mon.String() + path)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}

	data, err := os.ReadFile(a.PortsFile())
	require.NoError(t, err)
	clientPort := strconv.Itoa(a.Addr().(*net.TCPAddr).Port)
	monPort := strconv.Itoa(mon.(*net.TCPAddr).Port)
	require.DeepEqual(t, string(data), `{"nats":["nats://127.0.0.1:`+clientPort+`"],"monitoring":["http://127.0.0.1:`+monPort+`"]}`)
}

func TestAppShutdownRemovesPortsFileAndStopsListening(t *testing.T) {
	c := loopbackConfig(t, "http_port: -1", tempEnv(t))
	a, err := Build(c, Flags{PortsFileDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	addr, mon, ports := a.Addr().String(), a.MonitorAddr().String(), a.PortsFile()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))
	if _, err := os.Stat(ports); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ports file still there: %v", err)
	}
	for _, hp := range []string{addr, mon} {
		if conn, err := net.DialTimeout("tcp", hp, testTimeout); err == nil {
			conn.Close()
			t.Fatalf("%s still accepts connections after Shutdown", hp)
		}
	}
	require.NoError(t, a.Shutdown(ctx)) // a second call is harmless
}

func TestAppMonitoringOff(t *testing.T) {
	a := startApp(t, "http_port: 0", Flags{})
	if a.MonitorAddr() != nil {
		t.Fatalf("monitoring started on %v with http_port 0", a.MonitorAddr())
	}
}

func TestAppStartFailsWhenMonitorPortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c := loopbackConfig(t, "http_port: "+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), tempEnv(t))
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	require.ErrorContains(t, a.Start(), "monitoring:", "address already in use")
}

func TestAppReload(t *testing.T) {
	a := startApp(t, "http_port: -1\nmax_payload: 1MB", Flags{})

	next := loopbackConfig(t, "http_port: -1\nmax_payload: 2MB", tempEnv(t))
	require.NoError(t, a.Reload(next))

	moved := loopbackConfig(t, "http_port: 9999", tempEnv(t))
	require.ErrorContains(t, a.Reload(moved), "monitoring address needs a restart")

}

func TestAppStartFailsWhenPortsFileCannotBeWritten(t *testing.T) {
	c := loopbackConfig(t, "http_port: -1", tempEnv(t))
	a, err := Build(c, Flags{PortsFileDir: "/nonexistent/ports"})
	require.NoError(t, err)
	require.ErrorContains(t, a.Start(), "ports file:")
	// Start stopped what it had started.
	if conn, err := net.DialTimeout("tcp", a.Addr().String(), testTimeout); err == nil {
		conn.Close()
		t.Fatal("client listener still open after a failed Start")
	}
}
