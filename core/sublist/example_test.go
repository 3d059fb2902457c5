package sublist_test

import (
	"fmt"
	"slices"

	"github.com/leafbox/leafbox/core/sublist"
)

func Example() {
	s := sublist.New[string]()
	_ = s.Insert("orders.*", "", "audit")
	_ = s.Insert("orders.eu", "workers", "w1")
	_ = s.Insert("orders.>", "workers", "w2")

	r := s.Match("orders.eu") // shared: read it, never modify it
	fmt.Println("plain:", r.Plain)
	for _, q := range r.Queues {
		fmt.Println("queue", q.Name+":", slices.Sorted(slices.Values(q.Members)))
	}
	fmt.Println("interest in orders:", s.HasInterest("orders"))
	// Output:
	// plain: [audit]
	// queue workers: [w1 w2]
	// interest in orders: false
}
