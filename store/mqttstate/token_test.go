package mqttstate

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestTokens(t *testing.T) {
	for _, name := range []string{"", "a", "a.b c*>", "ü", strings.Repeat("x", maxPlain)} {
		tok := baseToken(name)
		require.Equal(t, tok[0], byte('b'), name)
		require.Equal(t, validToken(tok), true, name)
		// Plain tokens are reversible: no two names share one.
		require.Equal(t, allocToken(name, map[string]string{tok: "other"}), tok)
	}
	long := strings.Repeat("y", maxPlain+1)
	tok := baseToken(long)
	require.Equal(t, tok[0], byte('h'))
	require.Equal(t, len(tok), 44)
	require.Equal(t, validToken(tok), true)
	used := map[string]string{tok: "other", tok + "1": "another"}
	require.Equal(t, allocToken(long, used), tok+"2")
	used[tok+"2"] = long
	require.Equal(t, allocToken(long, used), tok+"2", "its own token")
	for _, bad := range []string{"", "x", "b.", "b*", "hshort"} {
		require.Equal(t, validToken(bad), false, bad)
	}
	require.Equal(t, accountToken(""), "$G")
	require.Equal(t, accountToken("ACME_1-x"), "ACME_1-x")
	require.Equal(t, accountToken("a.b")[0], byte('~'))
}

// TestHashCollision makes a long client id's hashed token collide (as if
// SHA-256 did) and checks that both sessions keep their own state across a
// restart.
func TestHashCollision(t *testing.T) {
	t.Parallel()
	b := Files{Dir: t.TempDir()}
	s := open(t, b, Options{})
	a, c := strings.Repeat("a", 300), strings.Repeat("c", 300)
	require.NoError(t, s.PutSession(Session{ClientID: a, ExpiryInterval: NeverExpire}))
	// Pretend c hashes to a's token.
	s.mu.Lock()
	s.tokens[baseToken(c)] = "squatter"
	s.mu.Unlock()
	require.NoError(t, s.PutSession(Session{ClientID: c, ExpiryInterval: NeverExpire}))
	require.Equal(t, s.sessions[c].token, baseToken(c)+"1")
	_, err := s.Enqueue(a, Msg{Topic: "t", Payload: []byte("for a")})
	require.NoError(t, err)
	_, err = s.Enqueue(c, Msg{Topic: "t", Payload: []byte("for c")})
	require.NoError(t, err)
	require.NoError(t, s.AddIncomingQoS2(c, 4))
	require.NoError(t, s.Close())

	s = open(t, b, Options{})
	got, err := s.LoadSessions()
	require.NoError(t, err)
	require.Equal(t, len(got), 2)
	require.Equal(t, queueOf(t, s, a)[0].Payload, "for a")
	require.Equal(t, queueOf(t, s, c)[0].Payload, "for c")
	pids, _ := s.IncomingQoS2(c)
	require.DeepEqual(t, pids, []uint16{4})
	require.Equal(t, s.sessions[c].token, baseToken(c)+"1")
}

// TestBackgroundSweep lets the sweeper run on a synctest clock: the
// session and retained message expire and go without a call.
func TestBackgroundSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(Options{Backend: Memory{}, SweepInterval: 10 * time.Second})
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.PutSession(Session{ClientID: "c", ExpiryInterval: 15, DisconnectedAt: time.Now()}))
		require.NoError(t, s.SetRetained("r", Msg{Payload: []byte("x"), Expiry: time.Now().Add(5 * time.Second)}))
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		require.Equal(t, s.Stats(), Stats{Sessions: 1})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Equal(t, s.Stats(), Stats{})
	})
}
