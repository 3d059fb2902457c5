package config

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestValidateBridgeNames(t *testing.T) {
	c := mustValidate(t, "bridges:\n  mqtt: [{name: site, server: broker, outbound: [{from: a.>, to: a/}]}]\n  serial: [{name: site, account: A, port: /dev/ttyS0, subject: site.serial}]\naccounts: {A: {users: [{user: a, password: p}]}}\n")
	require.DeepEqual(t, c.Bridges.MQTT[0].Name, "site")
	require.DeepEqual(t, c.Bridges.Serial[0].Account, "A")

	_, err := Parse([]byte("bridges:\n  mqtt:\n    - name: a\n      bogus: 1\n"))
	require.ErrorContains(t, err, `line 4: bridges.mqtt[0].bogus: unknown key "bogus"`)
	err = validateErr(t, "bridges:\n  mqtt:\n    - name: a\n    - name: a\n    - {}\n  modbus:\n    - name: 'a b'\n")
	require.ErrorContains(t, err, `line 4: bridges.mqtt[1].name: "a" is used twice`, "bridges.mqtt[2].name: is required",
		`line 7: bridges.modbus[0].name: "a b" is not a valid name`)
}

func TestValidateBridgeAccount(t *testing.T) {
	accounts := "accounts:\n  A: {users: [{user: a, password: p}]}\n  B: {users: [{user: b, password: p}]}\n"
	c := mustValidate(t, accounts+"bridges:\n  serial: [{name: s, account: A, port: /dev/ttyS0, subject: site.serial}]\n")
	require.DeepEqual(t, c.Bridges.Serial[0].Account, "A")

	err := validateErr(t, accounts+"bridges:\n  mqtt:\n    - name: m\n      account: X\n      server: broker\n      outbound: [{from: a.>}]\n")
	require.ErrorContains(t, err, `line 7: bridges.mqtt[0].account: no account named "X" (accounts: A, B)`)
	err = validateErr(t, "bridges:\n  modbus:\n    - name: m\n      account: X\n")
	require.ErrorContains(t, err, `line 4: bridges.modbus[0].account: no account named "X" (accounts: none)`)

	// JetStream serves the global account only: a bridge elsewhere cannot
	// store into a stream nor read from one.
	js := "jetstream: {enabled: true}\n"
	err = validateErr(t, js+accounts+"bridges:\n  mqtt:\n    - name: m\n      account: A\n      server: broker\n"+
		"      inbound: [{from: t/#, to: t., store: true}]\n      outbound:\n        - {from: a.>, stream: S}\n"+
		"  serial:\n    - name: s\n      account: B\n      port: /dev/ttyS0\n      subject: site.serial\n      delivery: store\n"+
		"      command_stream: C\n      command_durable: d\n")
	require.ErrorContains(t, err,
		`line 10: bridges.mqtt[0].inbound[0].store: uses a stream, but the bridge is in account "A" and JetStream serves the global account only`,
		`line 12: bridges.mqtt[0].outbound[0].stream: uses a stream, but the bridge is in account "A"`,
		`line 18: bridges.serial[0].delivery: uses a stream, but the bridge is in account "B"`,
		`line 19: bridges.serial[0].command_stream: uses a stream`)
	// The same routes in the global account are fine.
	mustValidate(t, js+"bridges:\n  mqtt:\n    - name: m\n      account: $G\n      server: broker\n"+
		"      inbound: [{from: t/#, to: t., store: true}]\n      outbound:\n        - {from: a.>, stream: S}\n")
}
