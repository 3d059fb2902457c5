package leaf

import (
	"fmt"
	"sync"
)

// fakeLocal is an in-memory Local for tests that do not need a broker: it
// records subscriptions and what the link publishes.
type fakeLocal struct {
	mu        sync.Mutex
	handlers  map[string]func(Msg)
	published []string
}

func newFakeLocal() *fakeLocal { return &fakeLocal{handlers: make(map[string]func(Msg))} }

func (f *fakeLocal) Connect(string) (LocalConn, error) { return fakeConn{f}, nil }

func (f *fakeLocal) WatchInterest(string, func(Interest)) ([]Interest, func()) {
	return nil, func() {}
}

func (f *fakeLocal) handler(subject string) func(Msg) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handlers[subject]
}

func (f *fakeLocal) publishedLines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.published...)
}

type fakeConn struct{ f *fakeLocal }

func (c fakeConn) Subscribe(subject string, h func(Msg)) (Subscription, error) {
	c.f.mu.Lock()
	c.f.handlers[subject] = h
	c.f.mu.Unlock()
	return fakeSub{c.f, subject}, nil
}

func (c fakeConn) Publish(route, shown, reply, hdr, data []byte) {
	panic("the link must use PublishQueues when the connection offers it")
}

func (c fakeConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	qs := make([]string, len(queues))
	for i, q := range queues {
		qs[i] = string(q)
	}
	c.f.mu.Lock()
	c.f.published = append(c.f.published, fmt.Sprintf("%s %s %s %v %s", route, shown, reply, qs, data))
	c.f.mu.Unlock()
}

func (c fakeConn) Close() {
	c.f.mu.Lock()
	c.f.handlers = make(map[string]func(Msg))
	c.f.mu.Unlock()
}

type fakeSub struct {
	f       *fakeLocal
	subject string
}

func (s fakeSub) Unsubscribe() {
	s.f.mu.Lock()
	delete(s.f.handlers, s.subject)
	s.f.mu.Unlock()
}
