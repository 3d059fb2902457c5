package config

import (
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
)

func TestFleetAndUpgradeValidation(t *testing.T) {
	kp, err := nkeys.CreateOperator()
	require.NoError(t, err)
	op, _ := kp.PublicKey()
	opSeed, _ := kp.Seed()
	user, _ := newUserKey(t)

	c := mustValidate(t, "upgrade: {trusted_keys: ["+op+"]}\nfleet: {trusted_keys: ["+op+"], groups: [north, site-7], health_timeout: 5s}\n")
	require.Equal(t, c.Fleet.FleetHealthTimeout().String(), "5s")
	require.Equal(t, c.Upgrade.UpgradeHealthTimeout(), DefaultUpgradeHealthTimeout)
	require.Equal(t, c.FleetDir(), "/home/test/.local/state/leafbox/state/fleet")

	err = validateErr(t, "upgrade: {trusted_keys: []}\n")
	require.ErrorContains(t, err, "upgrade.trusted_keys: missing")
	err = validateErr(t, "upgrade: {trusted_keys: ["+user+"]}\n")
	require.ErrorContains(t, err, "line 1: upgrade.trusted_keys[0]: \""+user+"\" is a public key, but not an operator's (O...)")
	err = validateErr(t, "fleet: {trusted_keys: ["+string(opSeed)+"]}\n")
	require.ErrorContains(t, err, "an operator seed, a secret")
	err = validateErr(t, "fleet: {trusted_keys: ["+op+"], groups: [a.b, '*']}\n")
	require.ErrorContains(t, err, `fleet.groups[0]: "a.b" is not a group name`)
	require.ErrorContains(t, err, `fleet.groups[1]: "*" is not a group name`)
	err = validateErr(t, "jetstream: {enabled: false}\nfleet: {trusted_keys: ["+op+"]}\n")
	require.ErrorContains(t, err, "fleet: needs a store directory")
	err = validateErr(t, "fleet: {trusted_keys: ["+op+"], health_timeout: 1ms}\n")
	require.ErrorContains(t, err, "fleet.health_timeout: 1ms is too short")

	// The hash is of the bytes parsed.
	a, b := mustParse(t, "port: 1\n"), mustParse(t, "port: 1 \n")
	require.Equal(t, a.Hash() != b.Hash(), true)
	require.Equal(t, a.Hash(), mustParse(t, "port: 1\n").Hash())
}
