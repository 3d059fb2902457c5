package config

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestValidateBridgeNames(t *testing.T) {
	c := mustValidate(t, "bridges:\n  mqtt: [{name: site, server: broker, outbound: [{from: a.>, to: a/}]}]\n  serial: [{name: site, account: A, port: /dev/ttyS0, subject: site.serial}]\n")
	require.DeepEqual(t, c.Bridges.MQTT[0].Name, "site")
	require.DeepEqual(t, c.Bridges.Serial[0].Account, "A")

	_, err := Parse([]byte("bridges:\n  mqtt:\n    - name: a\n      bogus: 1\n"))
	require.ErrorContains(t, err, `line 4: bridges.mqtt[0].bogus: unknown key "bogus"`)
	err = validateErr(t, "bridges:\n  mqtt:\n    - name: a\n    - name: a\n    - {}\n  modbus:\n    - name: 'a b'\n")
	require.ErrorContains(t, err, `line 4: bridges.mqtt[1].name: "a" is used twice`, "bridges.mqtt[2].name: is required",
		`line 7: bridges.modbus[0].name: "a b" is not a valid name`)
}
