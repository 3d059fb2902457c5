package config

import (
	"fmt"
	"os"
)

// secretFile is one file that holds a secret, and the key that names it.
type secretFile struct{ path, file string }

// secretFiles lists the files the configuration names that hold secrets:
// the leafnode remotes' credentials and NKey seed files, the TLS key
// files, the MQTT bridges' password files, and the gateway identity.
// Paths are resolved against the configuration's directory.
func (c *Config) secretFiles() []secretFile {
	var out []secretFile
	add := func(path, file string) {
		if file != "" {
			out = append(out, secretFile{path, c.Path(file)})
		}
	}
	if c.TLS != nil {
		add("tls.key_file", c.TLS.KeyFile)
	}
	if ln := c.LeafNodes; ln != nil {
		if ln.TLS != nil {
			add("leafnodes.tls.key_file", ln.TLS.KeyFile)
		}
		for i, r := range ln.Remotes {
			p := fmt.Sprintf("leafnodes.remotes[%d]", i)
			add(p+".credentials", r.Credentials)
			add(p+".nkey", r.Nkey)
			if r.TLS != nil {
				add(p+".tls.key_file", r.TLS.KeyFile)
			}
		}
	}
	if b := c.Bridges; b != nil {
		for i, m := range b.MQTT {
			p := fmt.Sprintf("bridges.mqtt[%d]", i)
			add(p+".password_file", m.PasswordFile)
			if m.TLS != nil {
				add(p+".tls.key_file", m.TLS.KeyFile)
			}
		}
	}
	if js := c.JetStream; js != nil {
		add("jetstream.key_file", js.KeyFile)
	}
	if id := c.identityPath(); id != "" {
		out = append(out, secretFile{"identity", id})
	}
	return out
}

// checkSecretModes reports every secret file that others (neither its
// owner nor its group) may read, as ssh does for private keys: group
// read is allowed, so that a root:leafbox 0640 file works. A file that
// does not exist is not reported here (Validate and the loaders name it).
func (c *Config) checkSecretModes() []*FieldError {
	var problems []*FieldError
	for _, s := range c.secretFiles() {
		if err := checkSecretMode(s.file); err != nil {
			problems = append(problems, c.fieldErr(s.path, err))
		}
	}
	return problems
}

// checkSecretMode returns an error naming file, its mode and the fix when
// file is readable by others; nil when it is not, or does not exist.
func checkSecretMode(file string) error {
	info, err := os.Stat(file)
	if err != nil {
		return nil // missing or unreadable: reported where it is read
	}
	if mode := info.Mode().Perm(); mode&0o004 != 0 {
		return fmt.Errorf("%s holds a secret and is readable by others (mode %04o): run chmod 600 %s (or 640 with a group)", file, mode, file)
	}
	return nil
}
