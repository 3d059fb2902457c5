package server_test

import (
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestRefuseConnection: while the hook says so, new connections get
// INFO and -ERR 'insufficient resources' and are closed; connections
// already there stay, and once it says no, new ones are accepted.
func TestRefuseConnection(t *testing.T) {
	var refuse atomic.Bool
	s := servertest.Start(t, server.Options{RefuseConnection: refuse.Load})
	first := servertest.Dial(t, s)
	first.Connect(`{"verbose":false,"pedantic":false}`)

	refuse.Store(true)
	second := servertest.Dial(t, s)
	second.Expect("INFO ")
	second.Expect("-ERR 'insufficient resources'")
	second.ExpectClosed()
	first.Send("PING\r\n")
	first.Expect("PONG")

	refuse.Store(false)
	third := servertest.Dial(t, s)
	third.Connect(`{"verbose":false,"pedantic":false}`)
}
