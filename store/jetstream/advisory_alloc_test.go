//go:build !race

package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// TestAdvisoryNoInterestAllocs: with nobody listening, the advisories of
// the ack path (NAK, TERM, max_deliver) and of API requests cost no
// allocation: the interest is checked on ready-made subjects before
// anything is built. Once someone listens, they are built.
func TestAdvisoryNoInterestAllocs(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a"}})
	require.NoError(t, err)
	_, err = s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "C", AckPolicy: njs.AckExplicitPolicy})
	require.NoError(t, err)
	c := env.eng.lookup("A").lookupConsumer("C")
	a := ackInfo{stream: "A", consumer: "C", delivered: 1, sseq: 1, dseq: 1}
	reason := []byte(" bad")
	advise := func() {
		c.adviseNak(&a)
		c.adviseTerm(&a, reason)
		if end := env.eng.beginAudit("$JS.API.INFO", "_INBOX.x", nil); end != nil {
			end()
		}
		env.eng.adviseResponse("_INBOX.x", []byte("{}"))
	}
	// A delivery whose message is gone, with nobody listening: dropped,
	// nothing recorded.
	c.mu.Lock()
	c.pending[7] = &pendingMsg{cseq: 7}
	c.noteGone(7, termReasonDeleted)
	c.noteExceeded(8, 3)
	noted := len(c.dropped)
	c.mu.Unlock()
	if noted != 0 {
		t.Fatalf("%d dropped deliveries recorded for advisories nobody listens to", noted)
	}
	if n := testing.AllocsPerRun(1000, advise); n != 0 {
		t.Fatalf("advisories with no listener allocate %v times", n)
	}
	if got := env.eng.Stats().Advisories; got[advNak].Published != 0 {
		t.Fatalf("published with no listener: %v", got)
	}

	sub, err := env.nc.SubscribeSync("$JS.EVENT.ADVISORY.>")
	require.NoError(t, err)
	require.NoError(t, env.nc.Flush())
	if n := testing.AllocsPerRun(10, advise); n == 0 {
		t.Fatal("advisories with a listener were not built")
	}
	var m *nats.Msg
	m, err = sub.NextMsg(5 * time.Second)
	require.NoError(t, err)
	if m.Subject != "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.A.C" {
		t.Fatalf("first advisory on %s", m.Subject)
	}
}
