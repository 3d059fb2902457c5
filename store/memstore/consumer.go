package memstore

import (
	"errors"
	"maps"
	"sync"

	"github.com/leafbox/leafbox/store"
)

// errNilState is returned by ConsumerStore.Update for a nil state.
var errNilState = errors.New("memstore: nil consumer state")

// ConsumerStore is an in-memory store.ConsumerStore: it keeps a private
// copy of the last state recorded. It is safe for concurrent use.
type ConsumerStore struct {
	mu     sync.Mutex
	state  store.ConsumerState
	closed bool
}

var _ store.ConsumerStore = (*ConsumerStore)(nil)

// NewConsumerStore returns a ConsumerStore holding the zero state.
func NewConsumerStore() *ConsumerStore { return &ConsumerStore{} }

// Update records a copy of state; see store.ConsumerStore.
func (c *ConsumerStore) Update(state *store.ConsumerState) error {
	if state == nil {
		return errNilState
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return store.ErrClosed
	}
	c.state = copyConsumerState(state)
	return nil
}

// State returns a copy of the last recorded state; see store.ConsumerStore.
func (c *ConsumerStore) State() (*store.ConsumerState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, store.ErrClosed
	}
	st := copyConsumerState(&c.state)
	return &st, nil
}

// Close releases the state. Later calls return store.ErrClosed, except
// Close and Delete, which return nil.
func (c *ConsumerStore) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.state = store.ConsumerState{}
	return nil
}

// Delete is Close: memory holds nothing else to remove.
func (c *ConsumerStore) Delete() error { return c.Close() }

// copyConsumerState returns a deep copy of st; empty maps become nil.
func copyConsumerState(st *store.ConsumerState) store.ConsumerState {
	cp := store.ConsumerState{Delivered: st.Delivered, AckFloor: st.AckFloor}
	if len(st.Pending) > 0 {
		cp.Pending = maps.Clone(st.Pending)
	}
	if len(st.Redelivered) > 0 {
		cp.Redelivered = maps.Clone(st.Redelivered)
	}
	return cp
}
