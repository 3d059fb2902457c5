package mqttstate

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jetstream"
)

// backend is a way to hold the streams; reopen says whether a second Open
// on the same backend sees the first one's state.
type backend struct {
	name   string
	make   func(t *testing.T) Backend
	reopen bool
}

// nopBus is the engine's Bus for tests that use only its internal streams
// (which never touch the bus) and its restore.
type nopBus struct{}

func (nopBus) Subscribe(string, string, func(subject, reply, hdr, data []byte)) (func(), error) {
	return func() {}, nil
}
func (nopBus) Publish(string, string, []byte, []byte) int           { return 0 }
func (nopBus) PublishAs(string, string, string, []byte, []byte) int { return 0 }
func (nopBus) HasInterest(string) bool                              { return false }

// newEngine returns a JetStream engine on dir, closed at cleanup.
func newEngine(t *testing.T, dir string) *jetstream.Engine {
	t.Helper()
	eng, err := jetstream.New(jetstream.Config{StoreDir: dir}, nopBus{})
	require.NoError(t, err)
	require.NoError(t, eng.Start())
	t.Cleanup(func() { eng.Close() })
	return eng
}

// backends are the engines the conformance table runs on.
var backends = []backend{
	{"memstore", func(*testing.T) Backend { return Memory{} }, false},
	{"filestore", func(t *testing.T) Backend { return Files{Dir: t.TempDir()} }, true},
	{"jetstream", func(t *testing.T) Backend { return newEngine(t, t.TempDir()) }, true},
}

// open opens a Store on b with opts, closed at cleanup.
func open(t testing.TB, b Backend, opts Options) *Store {
	t.Helper()
	opts.Backend = b
	if opts.SweepInterval == 0 {
		opts.SweepInterval = -1
	}
	s, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// queueState is a queue as comparable values.
type queueState struct {
	Seq        uint64
	Topic      string
	Payload    string
	PacketID   uint16
	Pubrec     bool
	Deliveries int
}

// queueOf returns the whole queue of a client.
func queueOf(t testing.TB, s *Store, id string) []queueState {
	t.Helper()
	q, err := s.Queue(id, 0, 0)
	require.NoError(t, err)
	out := []queueState{}
	for _, m := range q {
		out = append(out, queueState{m.Seq, m.Topic, string(m.Payload), m.PacketID, m.Pubrec, m.Deliveries})
	}
	return out
}

// retainedTopics returns the topics and payloads Retained returns.
func retainedTopics(t testing.TB, s *Store, filter string) []string {
	t.Helper()
	ms, err := s.Retained(filter)
	require.NoError(t, err)
	out := []string{}
	for _, m := range ms {
		require.Equal(t, m.Retain, true, "retain flag")
		out = append(out, m.Topic+"="+string(m.Payload))
	}
	return out
}
