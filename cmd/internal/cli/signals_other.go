//go:build !unix

package cli

import "os"

// Outside Unix only interrupt stops the broker; there is no lame duck or
// reload signal.
var (
	stopSignals     = []os.Signal{os.Interrupt}
	lameDuckSignals []os.Signal
	reloadSignals   []os.Signal
)
