package config

import "github.com/leafbox/leafbox/store/storedir"

// OutboxDir is where uplink u keeps its outbox.
func (c *Config) OutboxDir(u *UplinkConfig) string { return c.Layout().Outbox(u.Name) }

// DeadLetterDir is where uplink u keeps the messages the hub refused for
// good (<store_dir>/deadletter/<uplink>).
func (c *Config) DeadLetterDir(u *UplinkConfig) string { return c.Layout().DeadLetter(u.Name) }

// OutboxStateFile is where uplink u keeps its last hub sequences.
func (c *Config) OutboxStateFile(u *UplinkConfig) string { return c.Layout().UplinkStateFile(u.Name) }

// ClockStatePath is where the clock keeps its last known-good time:
// state/clock.json in the store directory, else nowhere (memory only).
func (c *Config) ClockStatePath() string {
	if c.StoreRoot() == "" {
		return ""
	}
	return c.Layout().ClockFile()
}

// StoreRoot is the store directory: the uplinks' state directory, else the
// JetStream store directory, else "" (nothing is kept on disk).
func (c *Config) StoreRoot() string {
	if c.stateDir != "" {
		return c.stateDir
	}
	if c.JetStream != nil && c.JetStream.Enabled {
		return c.JetStream.StoreDir
	}
	return ""
}

// Layout is the store directory's layout (store/storedir): where streams,
// outboxes, dead letters and state files live. Its Root is "" when
// nothing is kept on disk.
func (c *Config) Layout() storedir.Layout { return storedir.At(c.StoreRoot()) }
