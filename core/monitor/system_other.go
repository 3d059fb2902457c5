//go:build !linux

package monitor

// systemMemory is unknown off Linux.
func systemMemory() (total, available int64) { return 0, 0 }

// diskSpace is unknown off Linux.
func diskSpace(string) (total, available uint64, ok bool) { return 0, 0, false }
