package store

import (
	"fmt"
	"strings"
)

var discardNames = [...]string{DiscardOld: "old", DiscardNew: "new"}

// ParseDiscardPolicy returns the policy named name: "old" or "new", in any
// case.
func ParseDiscardPolicy(name string) (DiscardPolicy, error) {
	for p, n := range discardNames {
		if strings.EqualFold(name, n) {
			return DiscardPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("store: unknown discard policy %q: want old or new", name)
}
