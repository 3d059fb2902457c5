package config

import "testing"

func TestValidateBridgeNames(t *testing.T) {
	c := mustValidate(t, "bridges:\n  mqtt: [{name: site, server: broker, outbound: [{from: a.>, to: a/}]}]\n  serial: [{name: site, account: A}]\n")
	requireEqual(t, c.Bridges.MQTT[0].Name, "site")
	requireEqual(t, c.Bridges.Serial[0].Account, "A")

	_, err := Parse([]byte("bridges:\n  mqtt:\n    - name: a\n      bogus: 1\n"))
	requireErrorContains(t, err, `line 4: bridges.mqtt[0].bogus: unknown key "bogus"`)
	err = validateErr(t, "bridges:\n  mqtt:\n    - name: a\n    - name: a\n    - {}\n  modbus:\n    - name: 'a b'\n")
	requireErrorContains(t, err, `line 4: bridges.mqtt[1].name: "a" is used twice`, "bridges.mqtt[2].name: is required",
		`line 7: bridges.modbus[0].name: "a b" is not a valid name`)
}
