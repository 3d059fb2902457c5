package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/leafbox/leafbox/leaf/identity"
	"github.com/leafbox/leafbox/store/vfs"
)

// identityPath is the file that keeps the gateway's identity (its NKey
// seed): <store dir>/state/identity.nk, where the store directory is the
// uplinks' state directory, else the JetStream store directory; "" when
// there is neither, and the gateway has no stable identity.
func (c *Config) identityPath() string {
	l := c.Layout()
	if l.Root == "" {
		return ""
	}
	return filepath.Join(l.State(), "identity.nk")
}

// IdentityPath returns the file that keeps the gateway's identity, or ""
// when the configuration has no store directory to keep it in. Call it
// after SetDefaults.
func (c *Config) IdentityPath() string { return c.identityPath() }

// Identity returns the identity ApplyIdentity found or generated, or nil.
func (c *Config) Identity() *identity.Identity { return c.identity }

// ApplyIdentity reads the gateway's identity from IdentityPath, when
// there is one, and derives from it what the configuration leaves unset:
// server_name (identity.Identity.ServerName) and so the downlinks' default
// durables and the MQTT bridges' default client ids. With create set, a missing identity is generated and written
// (Build does it, on the first start); without, a missing one is not an
// error and changes nothing (config check and print). A file that exists
// but is damaged is an error naming it. Call it after SetDefaults and
// before Validate; calling it again does nothing more.
func (c *Config) ApplyIdentity(create bool) (*identity.Identity, error) {
	if c.identity != nil {
		return c.identity, nil
	}
	path := c.identityPath()
	if path == "" {
		return nil, nil
	}
	var id *identity.Identity
	var err error
	if create {
		id, err = identity.Open(vfs.OS, path)
	} else {
		id, err = identity.Load(vfs.OS, path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing to read (a store directory that is a file is
			// Preflight's to report, under its own name).
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	c.AdoptIdentity(id)
	return id, nil
}

// AdoptIdentity records id as the gateway's identity and, unless
// server_name is configured, derives server_name and the downlinks'
// default durables and MQTT bridges' default client ids from it.
func (c *Config) AdoptIdentity(id *identity.Identity) {
	if id == nil || c.identity != nil {
		return
	}
	c.identity = id
	if c.ServerName == "" {
		c.ServerName = id.ServerName()
		c.setDownlinkDefaults()
		c.setMQTTBridgeDefaults()
	}
}
