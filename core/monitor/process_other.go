//go:build !unix

package monitor

import "time"

// cpuTime reports that CPU time is not measured on this platform.
func cpuTime() (time.Duration, bool) { return 0, false }
