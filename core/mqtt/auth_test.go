package mqtt_test

import (
	"testing"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"
)

// Accounts isolate MQTT clients as they do NATS clients; a bcrypt password
// works, and wrong credentials get CONNACK "bad user name or password".
func TestAccountsAndPasswords(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw-a"), bcrypt.MinCost)
	require.NoError(t, err)
	cfg := &auth.Config{Accounts: []auth.Account{
		{Name: "A", Users: []auth.User{{Name: "a", Password: string(hash)}, {Name: "na", Password: "na"}}},
		{Name: "B", Users: []auth.User{{Name: "b", Password: "pw-b"}}},
	}}
	e := newTestEnv(t, cfg, nil)
	natsA := e.natsConn(t, nats.UserInfo("na", "na"))
	subA, err := natsA.SubscribeSync("data.>")
	require.NoError(t, err)
	require.NoError(t, natsA.Flush())
	b := e.v3Client(t, "devb", func(o *pahov3.ClientOptions) { o.SetUsername("b").SetPassword("pw-b") })
	tok := b.Publish("data/x", 1, false, []byte("from B"))
	tok.WaitTimeout(wait)
	require.NoError(t, tok.Error())
	a := e.v3Client(t, "deva", func(o *pahov3.ClientOptions) { o.SetUsername("a").SetPassword("pw-a") })
	tok = a.Publish("data/x", 1, false, []byte("from A"))
	tok.WaitTimeout(wait)
	require.NoError(t, tok.Error())
	require.Equal(t, string(nextNATS(t, subA).Data), "from A", "B's message stays in B")

	o := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID("bad").SetUsername("a").SetPassword("nope").SetAutoReconnect(false).SetProtocolVersion(4)
	c := pahov3.NewClient(o)
	ctok := c.Connect()
	ctok.WaitTimeout(wait)
	require.ErrorContains(t, ctok.Error(), "bad user name or password")
	require.Equal(t, e.mqtt.Stats().AuthFailures, int64(1))
}

// A token is accepted as the password, with any user name (3.1.1) or
// none (MQTT 5).
func TestTokenAsPassword(t *testing.T) {
	e := newTestEnv(t, &auth.Config{Token: "t0ken"}, nil)
	c := e.v3Client(t, "tok", func(o *pahov3.ClientOptions) { o.SetUsername("any").SetPassword("t0ken") })
	require.Equal(t, c.IsConnected(), true)
	_, ack := e.v5Client(t, "tok5", &paho.Connect{KeepAlive: 30, CleanStart: true, PasswordFlag: true, Password: []byte("t0ken")})
	require.Equal(t, ack.ReasonCode, byte(0))
}
