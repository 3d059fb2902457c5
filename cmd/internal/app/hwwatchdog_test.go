package app

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// The hardware watchdog, here a FIFO the test reads, is fed one byte an
// interval while the liveness check passes, not at all while the store
// takes no writes, again once it does, and gets the magic close "V" on a
// clean stop.
func TestHardwareWatchdogFollowsLiveness(t *testing.T) {
	c := loopbackConfig(t, "http_port: 0\n", tempEnv(t))
	a := startProbed(t, c)
	lv, err := a.Liveness()
	require.NoError(t, err)
	t.Cleanup(lv.Close)

	fifo := filepath.Join(t.TempDir(), "watchdog")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	w, err := OpenHardwareWatchdog(fifo)
	require.NoError(t, err)

	failures := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, 20*time.Millisecond, lv.Check, func(err error) { failures <- err })
	}()
	t.Cleanup(func() { cancel(); <-done })

	// readByte waits up to wait for one byte; 0 when none came.
	readByte := func(wait time.Duration) byte {
		t.Helper()
		require.NoError(t, r.SetReadDeadline(time.Now().Add(wait)))
		var b [1]byte
		n, err := r.Read(b[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0
		}
		require.NoError(t, err)
		require.Equal(t, n, 1, "bytes read")
		return b[0]
	}
	start := time.Now()
	for range 5 {
		require.Equal(t, readByte(5*time.Second), byte('.'), "feed")
	}
	if took := time.Since(start); took < 60*time.Millisecond {
		t.Fatalf("5 feeds in %v: faster than one an interval (20ms)", took)
	}

	store := c.JetStream.StoreDir
	require.NoError(t, os.RemoveAll(store))
	writeFile(t, filepath.Dir(store), filepath.Base(store), "x")
	require.ErrorContains(t, <-failures, "store_dir "+store+" is not writable")
	// What was fed before the first failure is in the FIFO already; a
	// steady feed would never let the drain end.
	for n := 0; readByte(10*time.Millisecond) != 0; n++ {
		if n == 10 {
			t.Fatal("still fed while the store takes no writes")
		}
	}
	<-failures
	<-failures
	require.Equal(t, readByte(30*time.Millisecond), byte(0), "a feed while the store takes no writes")

	require.NoError(t, os.Remove(store))
	require.NoError(t, os.Mkdir(store, 0o750))
	require.Equal(t, readByte(5*time.Second), byte('.'), "feed once the store is back")

	cancel()
	<-done
	var last byte
	for {
		b := readByte(5 * time.Second)
		if b == 0 {
			t.Fatal("no magic close")
		}
		last = b
		if b != '.' {
			break
		}
	}
	require.Equal(t, last, byte('V'), "magic close")
	require.NoError(t, r.SetReadDeadline(time.Now().Add(5*time.Second)))
	var b [1]byte
	_, err = r.Read(b[:])
	require.ErrorIs(t, err, io.EOF)
}
