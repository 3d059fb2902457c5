package serial

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/leafbox/leafbox/core/require"
	"golang.org/x/sys/unix"
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

// drained waits until the bridge has read everything the device wrote:
// the slave side's input queue (TIOCINQ) is empty. The kernel offers no
// event for it, so this polls.
func (d *device) drained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := unix.IoctlGetInt(int(d.tty.Fd()), unix.TIOCINQ)
		require.NoError(t, err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still unread", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// byIDLink returns a symlink path in a temporary by-id directory.
func byIDLink(t *testing.T) string {
	return filepath.Join(t.TempDir(), "usb-leafbox_test_device-if00-port0")
}
