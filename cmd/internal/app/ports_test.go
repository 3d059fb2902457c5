package app

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestWritePortsFile(t *testing.T) {
	dir := t.TempDir()
	p := Ports{
		Nats:       URLs("nats", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4222}),
		Monitoring: URLs("http", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8222}),
	}
	path, err := WritePortsFile(dir, 1234, p)
	require.NoError(t, err)
	require.DeepEqual(t, path, filepath.Join(dir, "leafbox_1234.ports"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.DeepEqual(t, string(data), `{"nats":["nats://127.0.0.1:4222"],"monitoring":["http://127.0.0.1:8222"]}`)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.DeepEqual(t, len(entries), 1) // no temporary file left behind
}

func TestWritePortsFileWithoutMonitoring(t *testing.T) {
	path, err := WritePortsFile(t.TempDir(), 7, Ports{Nats: []string{"tls://[::1]:4222"}})
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.DeepEqual(t, string(data), `{"nats":["tls://[::1]:4222"]}`)
}

func TestWritePortsFileMissingDir(t *testing.T) {
	_, err := WritePortsFile(filepath.Join(t.TempDir(), "nope"), 1, Ports{})
	require.ErrorContains(t, err, "ports file:")
}

func TestURLsExpandsUnspecifiedAddress(t *testing.T) {
	for _, ip := range []net.IP{net.IPv4zero, net.IPv6unspecified} {
		urls := URLs("nats", &net.TCPAddr{IP: ip, Port: 4222})
		if !slices.Contains(urls, "nats://127.0.0.1:4222") {
			t.Fatalf("URLs for %v: want nats://127.0.0.1:4222 among %v", ip, urls)
		}
		require.DeepEqual(t, urls[0], "nats://127.0.0.1:4222") // loopback first
	}
	require.DeepEqual(t, URLs("http", &net.TCPAddr{IP: net.ParseIP("::1"), Port: 80}), []string{"http://[::1]:80"})
}
