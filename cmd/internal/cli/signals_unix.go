//go:build unix

package cli

import (
	"os"
	"syscall"
)

// The signals run handles, as nats-server uses them.
var (
	stopSignals     = []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	lameDuckSignals = []os.Signal{syscall.SIGUSR2}
	reloadSignals   = []os.Signal{syscall.SIGHUP}
)
