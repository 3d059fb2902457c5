package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

func dialErr(s *server.Server, opts ...nats.Option) error {
	nc, err := nats.Connect(s.ClientURL(), append(opts, nats.NoReconnect())...)
	if err == nil {
		nc.Close()
	}
	return err
}

func TestUserPasswordAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	s := servertest.Start(t, server.Options{Auth: &auth.Config{Users: []auth.User{
		{Name: "plain", Password: "pw"},
		{Name: "hashed", Password: string(hash)},
	}}})
	require.NoError(t, dialErr(s, nats.UserInfo("plain", "pw")))
	require.NoError(t, dialErr(s, nats.UserInfo("hashed", "s3cret")))
	for _, opt := range []nats.Option{nats.UserInfo("plain", "wrong"), nats.UserInfo("hashed", string(hash)), nats.UserInfo("nobody", "pw")} {
		if err := dialErr(s, opt); !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("wrong credentials: %v, want authorization violation", err)
		}
	}
	if err := dialErr(s); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("no credentials: %v", err)
	}
	// Anything before CONNECT is a violation when auth is required.
	c := servertest.Dial(t, s)
	c.Expect("INFO ")
	c.Send("SUB x 1\r\n")
	c.Expect("-ERR 'Authorization Violation'")
	c.ExpectClosed()
}

func TestTokenAuth(t *testing.T) {
	s := servertest.Start(t, server.Options{Auth: &auth.Config{Token: "tok-123"}})
	require.NoError(t, dialErr(s, nats.Token("tok-123")))
	if err := dialErr(s, nats.Token("nope")); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestNkeyAuth(t *testing.T) {
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	other, _ := nkeys.CreateUser()
	otherPub, _ := other.PublicKey()
	s := servertest.Start(t, server.Options{Auth: &auth.Config{Users: []auth.User{{Nkey: pub}}}})

	c := servertest.Dial(t, s)
	if line := c.Expect("INFO "); !strings.Contains(line, `"nonce":"`) || !strings.Contains(line, `"auth_required":true`) {
		t.Fatalf("INFO without nonce: %s", line)
	}
	require.NoError(t, dialErr(s, nats.Nkey(pub, func(nonce []byte) ([]byte, error) {
		k, err := nkeys.FromSeed(seed)
		if err != nil {
			return nil, err
		}
		return k.Sign(nonce)
	})))
	// Signed by the wrong key.
	err = dialErr(s, nats.Nkey(pub, func(nonce []byte) ([]byte, error) { return other.Sign(nonce) }))
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("wrong key signature: %v", err)
	}
	// A key that is not configured.
	err = dialErr(s, nats.Nkey(otherPub, func(nonce []byte) ([]byte, error) { return other.Sign(nonce) }))
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestAuthTimeout(t *testing.T) {
	s := servertest.Start(t, server.Options{AuthTimeout: 100 * time.Millisecond, Auth: &auth.Config{Token: "t"}})
	c := servertest.Dial(t, s)
	c.Expect("INFO ")
	c.Expect("-ERR 'Authentication Timeout'")
	c.ExpectClosed()
}

func TestAccountsIsolated(t *testing.T) {
	s := servertest.Start(t, server.Options{Auth: &auth.Config{Accounts: []auth.Account{
		{Name: "A", Users: []auth.User{{Name: "a", Password: "a"}}},
		{Name: "B", Users: []auth.User{{Name: "b", Password: "b"}, {Name: "b2", Password: "b2"}}},
	}}})
	a := connect(t, s, nats.UserInfo("a", "a"))
	b := connect(t, s, nats.UserInfo("b", "b"))
	b2 := connect(t, s, nats.UserInfo("b2", "b2"))
	subA, _ := a.SubscribeSync("shared")
	subB, _ := b.SubscribeSync("shared")
	require.NoError(t, a.Flush())
	require.NoError(t, b.Flush())
	require.NoError(t, b2.Publish("shared", []byte("for B")))
	if m := nextMsg(t, subB); string(m.Data) != "for B" {
		t.Fatalf("same account got %q", m.Data)
	}
	require.NoError(t, b2.Flush())
	expectNone(t, a, subA)
}

func TestPermissions(t *testing.T) {
	s := servertest.Start(t, server.Options{Auth: &auth.Config{Users: []auth.User{
		{Name: "sensor", Password: "p", Permissions: &auth.Permissions{
			Publish:   &auth.SubjectPermission{Allow: []string{"telemetry.>"}, Deny: []string{"telemetry.secret"}},
			Subscribe: &auth.SubjectPermission{Allow: []string{"cmd.sensor.>", "_INBOX.>"}},
		}},
		{Name: "svc", Password: "p", Permissions: &auth.Permissions{
			Publish:   &auth.SubjectPermission{Allow: []string{"nothing"}},
			Subscribe: &auth.SubjectPermission{Allow: []string{"svc.>"}},
			Response:  &auth.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
		}},
		{Name: "admin", Password: "p"},
	}}})
	errs := make(chan error, 10)
	sensor := connect(t, s, nats.UserInfo("sensor", "p"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	admin := connect(t, s, nats.UserInfo("admin", "p"))
	all, _ := admin.SubscribeSync(">")
	require.NoError(t, admin.Flush())

	require.NoError(t, sensor.Publish("telemetry.temp", []byte("21")))
	if m := nextMsg(t, all); m.Subject != "telemetry.temp" {
		t.Fatalf("allowed publish arrived as %q", m.Subject)
	}
	for _, subj := range []string{"telemetry.secret", "other"} {
		require.NoError(t, sensor.Publish(subj, nil))
		select {
		case err := <-errs:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"`+subj+`"`) {
				t.Fatalf("publish %s: %v", subj, err)
			}
		case <-time.After(wait):
			t.Fatalf("no permission error for %s", subj)
		}
	}
	require.NoError(t, sensor.Flush())
	expectNone(t, admin, all)
	if !sensor.IsConnected() {
		t.Fatal("a permission violation closed the connection")
	}
	_, err := sensor.SubscribeSync("cmd.other")
	require.NoError(t, err)
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), `Subscription to "cmd.other"`) {
			t.Fatalf("subscribe violation: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("no permission error for subscribe")
	}

	// allow_responses: svc may publish only to the reply of a request it
	// received, once.
	svc := connect(t, s, nats.UserInfo("svc", "p"))
	_, err = svc.Subscribe("svc.time", func(m *nats.Msg) { _ = m.Respond([]byte("noon")) })
	require.NoError(t, err)
	require.NoError(t, svc.Flush())
	reply, err := admin.Request("svc.time", nil, wait)
	require.NoError(t, err)
	if string(reply.Data) != "noon" {
		t.Fatalf("response %q", reply.Data)
	}
}

func TestNoAuthUser(t *testing.T) {
	s := servertest.Start(t, server.Options{Auth: &auth.Config{
		Users:      []auth.User{{Name: "guest", Password: "g", Permissions: &auth.Permissions{Publish: &auth.SubjectPermission{Allow: []string{"public.>"}}}}},
		NoAuthUser: "guest",
	}})
	errs := make(chan error, 1)
	nc := connect(t, s, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	require.NoError(t, nc.Publish("private", nil))
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(wait):
		t.Fatal("credential-less connection was not bound to the no_auth_user")
	}
}
