package serial

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/creack/pty"
	"github.com/leafbox/leafbox/core/require"
)

// device is the far end of a pseudo-terminal pair: the test plays the
// serial device on the master side; the bridge opens the slave by a
// stable symlink, as udev's /dev/serial/by-id names.
type device struct {
	master *os.File
	tty    *os.File
	r      *bufio.Reader
}

// newDevice opens a pty pair and points link at its slave.
func newDevice(t *testing.T, link string) *device {
	t.Helper()
	master, tty, err := pty.Open()
	require.NoError(t, err)
	_ = os.Remove(link)
	require.NoError(t, os.Symlink(tty.Name(), link))
	d := &device{master: master, tty: tty, r: bufio.NewReader(master)}
	t.Cleanup(d.unplug)
	return d
}

// unplug closes the pty pair (a USB adapter pulled out).
func (d *device) unplug() {
	d.master.Close()
	d.tty.Close()
}

func (d *device) write(t *testing.T, s string) {
	t.Helper()
	_, err := d.master.WriteString(s)
	require.NoError(t, err)
}

// byIDLink returns a symlink path in a temporary by-id directory.
func byIDLink(t *testing.T) string {
	return filepath.Join(t.TempDir(), "usb-leafbox_test_device-if00-port0")
}
