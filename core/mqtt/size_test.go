package mqtt

import (
	"testing"
	"unsafe"
)

// An idle connection's structs stay small: its conn and its session are
// most of what it costs once parked, and each must fit its allocation
// size class (144 and 96 B: one more field is 160 or 112).
func TestIdleStructSizes(t *testing.T) {
	for _, s := range []struct {
		name      string
		size, max uintptr
	}{{"conn", unsafe.Sizeof(conn{}), 144}, {"session", unsafe.Sizeof(session{}), 96}} {
		t.Logf("%s: %d B", s.name, s.size)
		if s.size > s.max {
			t.Errorf("%s is %d B, more than %d", s.name, s.size, s.max)
		}
	}
}
