//go:build linux

package mqtt_test

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/leafbox/leafbox/core/mqtt"
	"golang.org/x/sys/unix"
)

// idleHeapBudget is the most Go heap one parked idle connection (MQTT
// 3.1.1, clean session, no subscription, as scripts/bench's idle row
// opens them) may hold once collected. 350 B measured (660 B before the
// compact records): its conn (144 B) and session (96 B), its sessions map
// entry, its client id, its places in the connection and poller slices;
// the first run in a process measures up to 425 B, as it also counts the
// goroutine records the runtime keeps for its peak of readers.
const idleHeapBudget = 480

// An idle parked connection holds little heap: its compact records,
// their map and slice entries and its client id. The clients are raw
// sockets (no Go objects), so the heap the test measures is the
// listener's alone. With LEAFBOX_IDLE_HEAP_PROFILE=file (and go test
// -memprofilerate 1) the test writes the heap profile there at the
// measurement, to show where the bytes were allocated.
func TestIdleConnectionHeap(t *testing.T) {
	// warm connections come first, so that what the listener makes once
	// (its maps' first tables, the runtime's goroutine records) is not
	// counted; then n more are measured.
	const warm, n = 200, 1000
	e := newTestEnv(t, nil, parkQuickly)
	addr := netipAddr(t, e.addr)
	var fds []int
	t.Cleanup(func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	})
	open := func(from, to int) {
		for i := from; i < to; i++ {
			fds = append(fds, idleClient(t, addr, i))
		}
		waitParked(t, e, int64(to))
		// Let the sweeper detach what writers left attached.
		waitStat(t, "attached parked connections", func() int64 { return attachedParked(e.mqtt) }, 0)
	}
	open(0, warm)
	before := liveHeap()
	open(warm, warm+n)
	after := liveHeap()
	if path := os.Getenv("LEAFBOX_IDLE_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	per := float64(after-before) / n
	t.Logf("%d idle connections: %.0f B of heap each", n, per)
	if per > idleHeapBudget {
		t.Errorf("an idle connection holds %.0f B of heap, more than %d", per, idleHeapBudget)
	}
	if got := e.mqtt.Stats().Connections; got != warm+n {
		t.Fatalf("%d connections open, want %d", got, warm+n)
	}
}

// attachedParked counts the parked connections that still hold a Go
// net.Conn.
func attachedParked(m *mqtt.Server) int64 {
	var k int64
	for _, ci := range m.Conns() {
		if ci.Parked && ci.Attached {
			k++
		}
	}
	return k
}

// liveHeap returns the bytes of live heap objects after two collections.
func liveHeap() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func netipAddr(t *testing.T, addr string) *unix.SockaddrInet4 {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	return sa
}

// idleClient connects a raw socket to addr and completes a 3.1.1
// CONNECT (clean session, keep alive 300 s) as client number i.
func idleClient(t *testing.T, addr *unix.SockaddrInet4, i int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(fd, addr); err != nil {
		_ = unix.Close(fd)
		t.Fatal(err)
	}
	id := fmt.Sprintf("benchcmp-idle-%05d", i)
	pkt := append([]byte{0x10, byte(12 + len(id)), 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0x01, 0x2c, 0, byte(len(id))}, id...)
	var ack [4]byte
	if _, err := unix.Write(fd, pkt); err != nil {
		_ = unix.Close(fd)
		t.Fatal(err)
	}
	if m, err := unix.Read(fd, ack[:]); err != nil || m != 4 || ack[0] != 0x20 || ack[3] != 0 {
		_ = unix.Close(fd)
		t.Fatalf("connection %d: CONNACK % x (%d bytes): %v", i, ack, m, err)
	}
	return fd
}
