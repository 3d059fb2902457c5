package subject

import (
	"fmt"
	"sync"
	"testing"
)

// TestNames: Name returns the subject's string, allocates nothing for a
// remembered subject, remembers at most MaxNames, and is safe for
// concurrent use.
func TestNames(t *testing.T) {
	var n Names
	b := []byte("sensors.t1")
	if got := n.Name(b); got != "sensors.t1" {
		t.Fatalf("Name = %q", got)
	}
	b[0] = 'S' // the string owns its bytes
	if got := n.Name([]byte("sensors.t1")); got != "sensors.t1" {
		t.Fatalf("Name after the bytes changed = %q", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = n.Name([]byte("sensors.t1")) }); allocs != 0 {
		t.Fatalf("a remembered subject costs %v allocations, want 0", allocs)
	}
	for i := range MaxNames + 10 {
		s := fmt.Sprintf("s.%d", i)
		if got := n.Name([]byte(s)); got != s {
			t.Fatalf("Name(%q) = %q", s, got)
		}
	}
	if got := len(*n.names.Load()); got != MaxNames {
		t.Fatalf("remembers %d subjects, want %d", got, MaxNames)
	}
	over := []byte(fmt.Sprintf("s.%d", MaxNames+5))
	if allocs := testing.AllocsPerRun(100, func() { _ = n.Name(over) }); allocs != 1 {
		t.Fatalf("a subject beyond MaxNames costs %v allocations, want 1", allocs)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var fresh Names
			for i := range 200 {
				s := fmt.Sprintf("g%d.%d", g%2, i%50)
				if got := fresh.Name([]byte(s)); got != s {
					t.Errorf("Name(%q) = %q", s, got)
				}
				if got := n.Name([]byte(s)); got != s {
					t.Errorf("shared Name(%q) = %q", s, got)
				}
			}
		})
	}
	wg.Wait()
}
