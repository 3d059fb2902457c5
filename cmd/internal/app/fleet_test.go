package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/cmd/internal/fleet"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// fleetOperator returns a new operator key's public key and seed.
func fleetOperator(t testing.TB) (string, []byte) {
	t.Helper()
	kp, err := nkeys.CreateOperator()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	return pub, seed
}

// fleetGateway is a gateway under test with fleet on, its link to a real
// nats-server hub up.
type fleetGateway struct {
	t     *testing.T
	hub   *leaftest.Hub
	env   Env
	file  *Config
	flags Flags
	a     *App
	nc    *nats.Conn // a client of the hub
}

// gatewayYAML is the gateway's configuration with extra appended.
func gatewayYAML(hub *leaftest.Hub, op, extra string) string {
	return fmt.Sprintf("leafnodes: {remotes: [{url: %q}]}\nfleet: {trusted_keys: [%s], groups: [north], health_timeout: 1s}\n%s", hub.LeafURL(), op, extra)
}

func startFleetGateway(t *testing.T, hub *leaftest.Hub, op string) *fleetGateway {
	t.Helper()
	g := &fleetGateway{t: t, hub: hub, env: Env{StateDirectory: t.TempDir()}}
	g.file = loopbackConfig(t, gatewayYAML(hub, op, ""), g.env)
	require.NoError(t, g.file.Validate())
	// A bundle's configuration is finished as the file's was.
	g.flags.Prepare = func(c *Config) error {
		Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1)}.Apply(c)
		if c.HTTPPort == nil && c.HTTP.Port == nil {
			c.HTTPPort = ptr(-1)
		}
		c.SetDefaults(g.env)
		if _, err := c.ApplyIdentity(false); err != nil {
			return err
		}
		return c.Validate()
	}
	g.start()
	g.nc = natsConnect(t, hub.ClientURL())
	return g
}

// start builds and starts the App on g.file and waits for its link.
func (g *fleetGateway) start() {
	t := g.t
	g.a = startConfig(t, g.file, g.flags)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	awaitLink(t, ctx, g.a.node.Link(0), leaf.StateConnected, false)
}

func (g *fleetGateway) id() string { return g.a.cfg.Identity().PublicKey() }

// send publishes bundle to subj on the hub and returns the gateway's
// answer. Until the hub has learnt the gateway's interest the request
// finds no responders; it is sent again then.
func (g *fleetGateway) send(subj string, bundle []byte) fleet.Result {
	t := g.t
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		msg, err := g.nc.Request(subj, bundle, testTimeout)
		if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
			// Interest travels over the leafnode link: wait for the hub.
			require.NoError(t, g.nc.Flush())
			continue
		}
		require.NoError(t, err)
		var res fleet.Result
		require.NoError(t, json.Unmarshal(msg.Data, &res))
		return res
	}
}

func (g *fleetGateway) varz() monitor.Varz {
	var v monitor.Varz
	getJSON(g.t, "http://"+g.a.MonitorAddr().String()+"/varz", &v)
	return v
}

func sign(t *testing.T, seed []byte, b fleet.Body) []byte {
	t.Helper()
	data, err := fleet.Sign(seed, b)
	require.NoError(t, err)
	return data
}

func TestFleetBundlesOverHub(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	op, seed := fleetOperator(t)
	g := startFleetGateway(t, hub, op)
	gw := g.id()
	subj := fleet.GatewaySubject(gw)

	v := g.varz()
	require.Equal(t, v.Config.Source, "default") // parsed from text, not from a file
	fileHash := v.Config.Hash
	require.Equal(t, strings.HasPrefix(fileHash, "sha256:"), true)
	require.Equal(t, v.ConfigDigest, fileHash)

	// A good bundle: applied, in /varz, answered.
	good := gatewayYAML(hub, op, "max_connections: 77\n")
	res := g.send(subj, sign(t, seed, fleet.Body{Serial: 10, Gateway: gw, Config: good}))
	require.Equal(t, res.Status, fleet.StatusApplied)
	require.Equal(t, res.Error, "")
	require.Equal(t, res.Applied, uint64(10))
	v = g.varz()
	require.Equal(t, v.MaxConn, 77)
	require.Equal(t, v.Config.Source, "fleet")
	require.Equal(t, v.Config.FleetSerial, uint64(10))
	require.Equal(t, v.Config.FleetSigner, op)
	require.Equal(t, v.Config.Hash, res.Hash)
	require.Equal(t, v.Config.FleetLast.Status, fleet.StatusApplied)
	require.Equal(t, v.Config.Hash != fileHash, true)

	// Signed by a key the gateway does not trust.
	_, otherSeed := fleetOperator(t)
	res = g.send(subj, sign(t, otherSeed, fleet.Body{Serial: 11, Gateway: gw, Config: gatewayYAML(hub, op, "max_connections: 5\n")}))
	require.Equal(t, res.Status, fleet.StatusRejected)
	require.ErrorContains(t, errors.New(res.Error), "is not in fleet.trusted_keys")
	// Altered after signing: the signature does not match.
	tampered := strings.Replace(string(sign(t, seed, fleet.Body{Serial: 12, Gateway: gw, Config: good})), `"sig":"`, `"sig":"AAAA`, 1)
	res = g.send(subj, []byte(tampered))
	require.Equal(t, res.Status, fleet.StatusRejected)
	require.ErrorContains(t, errors.New(res.Error), "bad signature")
	// A replay of the applied serial, and an older one.
	for _, serial := range []uint64{10, 9} {
		res = g.send(subj, sign(t, seed, fleet.Body{Serial: serial, Gateway: gw, Config: gatewayYAML(hub, op, "max_connections: 5\n")}))
		require.Equal(t, res.Status, fleet.StatusRejected)
		require.ErrorContains(t, errors.New(res.Error), fmt.Sprintf("replay: serial %d is not newer than 10", serial))
	}
	// For another gateway, and a configuration that does not validate.
	other := gatewayKey(t)
	res = g.send(subj, sign(t, seed, fleet.Body{Serial: 13, Gateway: other, Config: good}))
	require.ErrorContains(t, errors.New(res.Error), "addressed to gateway "+other)
	res = g.send(subj, sign(t, seed, fleet.Body{Serial: 14, Gateway: gw, Config: good + "max_payload: 1TB\n"}))
	require.Equal(t, res.Status, fleet.StatusRejected)
	require.ErrorContains(t, errors.New(res.Error), "validate: fleet bundle 14:")
	require.ErrorContains(t, errors.New(res.Error), "max_payload")
	// A change the reload path refuses.
	res = g.send(subj, sign(t, seed, fleet.Body{Serial: 15, Gateway: gw, Config: good + "http_port: 0\n"}))
	require.Equal(t, res.Status, fleet.StatusRejected)
	require.ErrorContains(t, errors.New(res.Error), "reload: http, http_port: changing the monitoring address needs a restart")
	require.Equal(t, g.varz().MaxConn, 77)

	// Valid and reloaded, but a bridge that never connects: rolled back.
	closed := closedPort(t)
	bad := good + fmt.Sprintf("max_connections: 78\nbridges: {mqtt: [{name: site, server: %q, inbound: [{from: \"a/#\", to: \"site.\"}]}]}\n", closed)
	bad = strings.Replace(bad, "max_connections: 77\n", "", 1)
	res = g.send(subj, sign(t, seed, fleet.Body{Serial: 16, Gateway: gw, Config: bad}))
	require.Equal(t, res.Status, fleet.StatusRolledBack)
	require.ErrorContains(t, errors.New(res.Error), `health: not healthy within 1s: bridge mqtt "site" is`)
	require.Equal(t, res.Applied, uint64(10))
	v = g.varz()
	require.Equal(t, v.MaxConn, 77)
	require.Equal(t, v.Config.FleetSerial, uint64(10))
	require.Equal(t, v.Config.FleetLast.Status, fleet.StatusRolledBack)
	require.Equal(t, v.Config.FleetLast.Serial, uint64(16))
	require.Equal(t, len(g.a.bridges.Statuses()), 0)

	// A group bundle.
	res = g.send(fleet.GroupSubject("north"), sign(t, seed, fleet.Body{Serial: 20, Group: "north", Config: gatewayYAML(hub, op, "max_connections: 79\n")}))
	require.Equal(t, res.Status, fleet.StatusApplied)
	require.Equal(t, g.varz().MaxConn, 79)

	// A restart keeps the applied bundle, and still refuses replays.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, g.a.Shutdown(ctx))
	g.file = loopbackConfig(t, gatewayYAML(hub, op, ""), g.env)
	require.NoError(t, g.file.Validate())
	g.start()
	v = g.varz()
	require.Equal(t, v.MaxConn, 79)
	require.Equal(t, v.Config.Source, "fleet")
	require.Equal(t, v.Config.FleetSerial, uint64(20))
	require.Equal(t, v.Config.FleetTarget, "group north")
	res = g.send(subj, sign(t, seed, fleet.Body{Serial: 19, Gateway: gw, Config: good}))
	require.ErrorContains(t, errors.New(res.Error), "replay: serial 19 is not newer than 20")

	// A reload of the file (SIGHUP) keeps the bundle in force.
	require.NoError(t, g.a.Reload(g.file))
	require.Equal(t, g.varz().MaxConn, 79)
	require.Equal(t, g.varz().Config.Source, "fleet")
}

// gatewayKey returns a new server public key, another gateway's identity.
func gatewayKey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateServer()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return pub
}

// closedPort returns "127.0.0.1:PORT" where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
