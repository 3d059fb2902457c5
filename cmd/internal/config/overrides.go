package config

import "strings"

// Overrides are values from command-line flags; they win over the file.
// A nil field was not given on the command line.
type Overrides struct {
	Host        *string  // --addr
	Port        *int     // --port
	HTTPPort    *int     // --http-port
	ServerName  *string  // --server-name
	JetStream   *bool    // --jetstream
	StoreDir    *string  // --store-dir, made absolute by the caller
	LeafRemotes []string // --leaf-remote, replacing the file's remotes
	LeafPort    *int     // --leaf-port, the leafnode listen port
}

// flagSource maps config key paths to the flag that set them.
type flagSource map[string]string

func (f flagSource) flagFor(path string) string {
	for p, flag := range f {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return flag
		}
	}
	return ""
}

// Apply writes the overrides into c. Call it before SetDefaults; problems
// with the values are reported by Validate, naming the flag.
func (o Overrides) Apply(c *Config) {
	if c.flags == nil {
		c.flags = flagSource{}
	}
	if o.Host != nil {
		c.Listen.Host = *o.Host
		c.flags["listen"] = "--addr"
	}
	if o.Port != nil {
		c.Port = *o.Port
		c.flags["port"] = "--port"
	}
	if o.HTTPPort != nil {
		p := *o.HTTPPort
		c.HTTPPort = &p
		c.flags["http_port"] = "--http-port"
	}
	if o.ServerName != nil {
		c.ServerName = *o.ServerName
		c.flags["server_name"] = "--server-name"
	}
	if o.JetStream != nil || o.StoreDir != nil {
		if c.JetStream == nil {
			c.JetStream = &JetStreamConfig{Enabled: true} // on without the block
		}
		if o.JetStream != nil {
			c.JetStream.Enabled = *o.JetStream
			c.flags["jetstream.enabled"] = "--jetstream"
		}
		if o.StoreDir != nil {
			c.JetStream.StoreDir = *o.StoreDir
			c.flags["jetstream.store_dir"] = "--store-dir"
		}
	}
	if o.LeafRemotes != nil {
		remotes := make([]RemoteConfig, len(o.LeafRemotes))
		for i, u := range o.LeafRemotes {
			remotes[i] = RemoteConfig{URL: u}
		}
		if c.LeafNodes == nil {
			c.LeafNodes = &LeafNodesConfig{}
		}
		c.LeafNodes.Remotes = remotes
		c.flags["leafnodes.remotes"] = "--leaf-remote"
	}
	if o.LeafPort != nil {
		if c.LeafNodes == nil {
			c.LeafNodes = &LeafNodesConfig{}
		}
		p := *o.LeafPort
		c.LeafNodes.Listen.Port = &p
		c.flags["leafnodes.listen"] = "--leaf-port"
	}
}
