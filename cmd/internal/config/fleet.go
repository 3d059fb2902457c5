package config

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/subject"
)

// DefaultFleetHealthTimeout is how long a fleet bundle's configuration has
// to prove healthy when fleet.health_timeout is unset.
const DefaultFleetHealthTimeout = 15 * time.Second

// DefaultUpgradeHealthTimeout is how long `leafbox upgrade` waits for the
// new binary to report healthy when upgrade.health_timeout is unset.
const DefaultUpgradeHealthTimeout = 60 * time.Second

// UpgradeConfig is what `leafbox upgrade` trusts: the operator NKeys whose
// signatures make a new binary acceptable.
type UpgradeConfig struct {
	// TrustedKeys are operator public keys ("O..."); a binary signed by
	// any of them is accepted.
	TrustedKeys StringList `yaml:"trusted_keys,omitempty"`
	// HealthTimeout bounds the wait for the new binary's /healthz
	// (default 60s); past it the old binary comes back.
	HealthTimeout Duration `yaml:"health_timeout,omitempty"`
}

// FleetConfig makes the gateway take configuration bundles from the hub:
// signed by one of TrustedKeys, sent to $LEAFBOX.fleet.<public key>.config
// or to $LEAFBOX.fleet.group.<group>.config for a group it is in.
type FleetConfig struct {
	// TrustedKeys are operator public keys ("O..."); a bundle signed by
	// any of them is considered, others are refused.
	TrustedKeys StringList `yaml:"trusted_keys,omitempty"`
	// Groups are the fleet groups the gateway belongs to.
	Groups StringList `yaml:"groups,omitempty"`
	// HealthTimeout is how long an applied bundle has to prove healthy
	// (default 15s) before the previous configuration comes back.
	HealthTimeout Duration `yaml:"health_timeout,omitempty"`
}

// UpgradeHealthTimeout returns upgrade.health_timeout, or its default.
func (u *UpgradeConfig) UpgradeHealthTimeout() time.Duration {
	if u == nil || u.HealthTimeout == 0 {
		return DefaultUpgradeHealthTimeout
	}
	return time.Duration(u.HealthTimeout)
}

// FleetHealthTimeout returns fleet.health_timeout, or its default.
func (f *FleetConfig) FleetHealthTimeout() time.Duration {
	if f == nil || f.HealthTimeout == 0 {
		return DefaultFleetHealthTimeout
	}
	return time.Duration(f.HealthTimeout)
}

// FleetDir is where the fleet bundles are staged and kept: state/fleet in
// the store directory; "" without one.
func (c *Config) FleetDir() string {
	l := c.Layout()
	if l.Root == "" {
		return ""
	}
	return filepath.Join(l.State(), "fleet")
}

// Hash returns "sha256:" and the hex SHA-256 of the YAML c was parsed
// from (the file, a fleet bundle's configuration or the built-in
// default); "" for a Config not parsed from bytes.
func (c *Config) Hash() string { return c.hash }

// ParseFile parses data as the configuration file named file, relative
// paths resolving against dir, as Load would had it read data from file.
// Fleet bundles' configurations are parsed with it: their paths resolve
// like the configuration file's.
func ParseFile(data []byte, file, dir string) (*Config, error) {
	c, err := Parse(data)
	if err != nil {
		if ce, ok := err.(*Error); ok {
			ce.File = file
		}
		return nil, err
	}
	c.file, c.dir = file, dir
	return c, nil
}

// Dir returns the directory relative paths of c resolve against; "" is
// the working directory.
func (c *Config) Dir() string { return c.dir }

func hashYAML(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (v *validator) trustedKeys(path string, keys StringList) {
	if len(keys) == 0 {
		v.errf(path, "missing: at least one operator public key (O...) whose signature is trusted")
	}
	for i, k := range keys {
		if !nkeys.IsValidPublicOperatorKey(k) {
			what := "not an NKey public key"
			if strings.HasPrefix(k, "SO") {
				what = "an operator seed, a secret: give its public key (nk -inkey FILE -pubout), and keep the seed off the gateway"
			} else if nkeys.IsValidPublicKey(k) {
				what = "a public key, but not an operator's (O...)"
			}
			v.errf(path+"["+strconv.Itoa(i)+"]", "%q is %s", k, what)
		}
	}
}

func (v *validator) upgrade() {
	u := v.c.Upgrade
	if u == nil {
		return
	}
	v.trustedKeys("upgrade.trusted_keys", u.TrustedKeys)
	if u.HealthTimeout < 0 || (u.HealthTimeout != 0 && time.Duration(u.HealthTimeout) < 100*time.Millisecond) {
		v.errf("upgrade.health_timeout", "%v is too short: at least 100ms", time.Duration(u.HealthTimeout))
	}
}

func (v *validator) fleet() {
	f := v.c.Fleet
	if f == nil {
		return
	}
	v.trustedKeys("fleet.trusted_keys", f.TrustedKeys)
	for i, g := range f.Groups {
		if g == "" || !subject.ValidLiteral(g) || strings.Contains(g, ".") {
			v.errf("fleet.groups["+strconv.Itoa(i)+"]", "%q is not a group name: one subject token (no dots, spaces or wildcards)", g)
		}
	}
	if f.HealthTimeout < 0 || (f.HealthTimeout != 0 && time.Duration(f.HealthTimeout) < 100*time.Millisecond) {
		v.errf("fleet.health_timeout", "%v is too short: at least 100ms", time.Duration(f.HealthTimeout))
	}
	if v.c.StoreRoot() == "" {
		v.errf("fleet", "needs a store directory (JetStream or uplinks) to keep the gateway identity and the applied bundles in")
	}
}
