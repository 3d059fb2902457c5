package fleet

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
)

func operator(t testing.TB) (pub string, seed []byte) {
	t.Helper()
	kp, err := nkeys.CreateOperator()
	require.NoError(t, err)
	pub, err = kp.PublicKey()
	require.NoError(t, err)
	seed, err = kp.Seed()
	require.NoError(t, err)
	return pub, seed
}

func gateway(t testing.TB) string {
	t.Helper()
	kp, err := nkeys.CreateServer()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return pub
}

func TestSignOpen(t *testing.T) {
	pub, seed := operator(t)
	gw := gateway(t)
	data, err := Sign(seed, Body{Serial: 3, Gateway: gw, Config: "port: 4222\n"})
	require.NoError(t, err)
	b, err := Open(data, []string{pub})
	require.NoError(t, err)
	require.Equal(t, b.Serial, uint64(3))
	require.Equal(t, b.Gateway, gw)
	require.Equal(t, b.Signer, pub)
	require.Equal(t, b.Config, "port: 4222\n")
	require.Equal(t, b.Target(), "gateway "+gw)
	require.Equal(t, strings.HasPrefix(b.Hash(), "sha256:"), true)
}

func TestOpenRefuses(t *testing.T) {
	pub, seed := operator(t)
	other, otherSeed := operator(t)
	good, err := Sign(seed, Body{Serial: 1, Group: "north", Config: "port: 1\n"})
	require.NoError(t, err)

	_, err = Open(good, []string{other})
	require.ErrorIs(t, err, ErrUntrusted)
	require.ErrorContains(t, err, pub+" is not in fleet.trusted_keys")

	// The payload altered after signing.
	var env envelope
	require.NoError(t, json.Unmarshal(good, &env))
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	altered := env
	altered.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), "port: 1", "port: 2", 1)))
	data, _ := json.Marshal(altered)
	_, err = Open(data, []string{pub})
	require.ErrorIs(t, err, ErrBadSignature)

	// Signed by another key but claiming the trusted one.
	forged, err := Sign(otherSeed, Body{Serial: 1, Group: "north", Config: "port: 1\n"})
	require.NoError(t, err)
	var fenv envelope
	require.NoError(t, json.Unmarshal(forged, &fenv))
	fenv.Key = pub
	data, _ = json.Marshal(fenv)
	_, err = Open(data, []string{pub})
	require.ErrorIs(t, err, ErrBadSignature)

	unsigned := env
	unsigned.Sig = ""
	data, _ = json.Marshal(unsigned)
	_, err = Open(data, []string{pub})
	require.ErrorIs(t, err, ErrUnsigned)

	for _, bad := range []string{"", "{", "[]", `{"bundle":"x","payload":""}`, `{"bundle":"leafbox-fleet/1","payload":"!!"}`, string(good) + "{}"} {
		_, err = Open([]byte(bad), []string{pub})
		require.ErrorIs(t, err, ErrMalformed)
	}
	_, err = Sign(seed, Body{Serial: 0, Group: "g", Config: "x: 1"})
	require.ErrorContains(t, err, "serial missing")
	_, err = Sign(seed, Body{Serial: 1, Config: "x: 1"})
	require.ErrorContains(t, err, "no target")
	_, err = Sign(seed, Body{Serial: 1, Group: "a.b", Config: "x: 1"})
	require.ErrorContains(t, err, "not a group name")
	kp, _ := nkeys.CreateUser()
	userSeed, _ := kp.Seed()
	_, err = Sign(userSeed, Body{Serial: 1, Group: "g", Config: "x: 1"})
	require.ErrorContains(t, err, "want an operator key")
}

func FuzzOpen(f *testing.F) {
	pub, seed := operator(f)
	good, err := Sign(seed, Body{Serial: 9, Group: "north", Config: "port: 1\n"})
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"bundle":"leafbox-fleet/1","payload":"e30=","key":"","sig":""}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Open(data, []string{pub})
		if err == nil && (b.Serial == 0 || b.Signer != pub) {
			t.Fatalf("opened an invalid bundle: %+v", b)
		}
	})
}
