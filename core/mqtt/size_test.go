package mqtt

import (
	"testing"
	"unsafe"
)

// An idle connection's structs stay small: its conn and its session are
// most of what it costs once parked.
func TestIdleStructSizes(t *testing.T) {
	for _, s := range []struct {
		name string
		size uintptr
	}{{"conn", unsafe.Sizeof(conn{})}, {"session", unsafe.Sizeof(session{})}} {
		t.Logf("%s: %d B", s.name, s.size)
		if s.size > 256 {
			t.Errorf("%s is %d B, more than 256", s.name, s.size)
		}
	}
}
