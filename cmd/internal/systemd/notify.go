package systemd

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// The assignments of sd_notify(3) this package sends.
const (
	// Ready tells the manager that start-up is complete.
	Ready = "READY=1"
	// Reloading tells it that the configuration is being reloaded; Ready
	// follows when done.
	Reloading = "RELOADING=1"
	// Stopping tells it that shutdown has begun.
	Stopping = "STOPPING=1"
	// WatchdogPing resets the watchdog timer.
	WatchdogPing = "WATCHDOG=1"
)

// SocketEnv is the environment variable naming the notify socket.
const SocketEnv = "NOTIFY_SOCKET"

// ErrBadSocket is returned by Open for a NOTIFY_SOCKET that names no
// usable socket address.
var ErrBadSocket = errors.New("systemd: NOTIFY_SOCKET is not a socket path")

// Notifier sends state changes to the service manager. A nil Notifier
// sends nothing. It is safe for concurrent use.
type Notifier struct {
	addr *net.UnixAddr
}

// Open returns a Notifier for the socket in $NOTIFY_SOCKET, looked up
// with lookup (os.LookupEnv), or nil when it is unset or empty (not
// started by a service manager that listens).
func Open(lookup func(string) (string, bool)) (*Notifier, error) {
	path, _ := lookup(SocketEnv)
	if path == "" {
		return nil, nil
	}
	// An absolute path, or "@name" for the abstract namespace (Go's net
	// package maps a leading @ to the NUL byte Linux expects).
	if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "@") {
		return nil, fmt.Errorf("%w: %q (want an absolute path or @name)", ErrBadSocket, path)
	}
	return &Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, nil
}

// Socket returns the notify socket's address, or "" for a nil Notifier.
func (n *Notifier) Socket() string {
	if n == nil {
		return ""
	}
	return n.addr.Name
}

// Notify sends the assignments (such as Ready, or "STATUS=...") in one
// datagram, joined by newlines. A newline inside an assignment would start
// a new one, so it is replaced by a space.
func (n *Notifier) Notify(assignments ...string) error {
	if n == nil || len(assignments) == 0 {
		return nil
	}
	var b strings.Builder
	for i, a := range assignments {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.ReplaceAll(a, "\n", " "))
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("systemd: notify %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("systemd: notify %s: %w", n.addr.Name, err)
	}
	return nil
}

// Status returns the STATUS= assignment for a one-line status text, shown
// by `systemctl status`.
func Status(text string) string { return "STATUS=" + text }

// ExtendTimeout returns the EXTEND_TIMEOUT_USEC= assignment: the service
// manager waits d more before it gives up on the current start-up,
// reload or shutdown (sent with Stopping, a drain longer than
// TimeoutStopSec= is not cut short).
func ExtendTimeout(d time.Duration) string {
	return "EXTEND_TIMEOUT_USEC=" + strconv.FormatInt(d.Microseconds(), 10)
}
