package app

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// nodeConfig turns the leafnodes, uplinks, uplink_limits and downlinks
// sections into the leaf runtime's configuration; serverID and
// serverName are the broker's. cfg has been validated; the TLS files are
// read here.
func nodeConfig(c *config.Config, serverID, serverName string, log *slog.Logger) (node.Config, error) {
	enc, err := StoreEncryption(c)
	if err != nil {
		return node.Config{}, fmt.Errorf("jetstream: %w", err)
	}
	nc := node.Config{ServerID: serverID, ServerName: serverName, Logger: log, OpenStream: fileStreamOpener(enc)}
	if ln := c.LeafNodes; ln != nil {
		for i := range ln.Remotes {
			r := &ln.Remotes[i]
			lc := c.LeafConfig(r)
			if r.TLS != nil {
				tc, err := c.RemoteTLS(fmt.Sprintf("leafnodes.remotes[%d].tls", i), r.TLS)
				if err != nil {
					return node.Config{}, err
				}
				lc.TLS = tc
			}
			shown := make([]string, 0, len(lc.URLs))
			for _, u := range lc.URLs {
				shown = append(shown, config.RedactURL(u))
			}
			nc.Remotes = append(nc.Remotes, node.RemoteConfig{Link: lc, ShownURLs: shown})
		}
		if c.LeafListenAddr() != "" {
			ac, err := leafAcceptConfig(c)
			if err != nil {
				return node.Config{}, err
			}
			// Client certificates verified against a CA authenticate too.
			lt := ln.TLS
			nc.Listener = &node.ListenerConfig{Accept: ac, Open: c.LeafAuth() == nil && (lt == nil || !lt.Verify)}
		}
	}
	for i := range c.Uplinks {
		nc.Uplinks = append(nc.Uplinks, uplinkConfig(c, &c.Uplinks[i]))
	}
	nc.Limits = node.LimitsConfig{StateDir: c.Layout().State(), StateFile: c.Layout().SchedulerFile()}
	if l := c.UplinkLimits; l != nil {
		nc.Limits.MaxRate, nc.Limits.DailyBudget = int64(l.MaxRate), int64(l.DailyBudget)
	}
	for i := range c.Downlinks {
		d := &c.Downlinks[i]
		nc.Downlinks = append(nc.Downlinks, node.DownlinkConfig{Remote: c.RemoteIndex(d.Remote), Config: downlink.Config{
			Name:           d.Name,
			Stream:         d.Stream,
			Durable:        d.Durable,
			Domain:         d.HubDomain,
			FilterSubjects: slices.Clone([]string(d.FilterSubjects)),
			HubPrefix:      d.HubSubjectPrefix,
			LocalPrefix:    d.LocalSubjectPrefix,
			MaxAckPending:  d.MaxAckPending,
			Batch:          d.Batch,
			AckWait:        time.Duration(d.AckWait),
			MaxDeliver:     d.MaxDeliver,
			Expires:        time.Duration(d.Expires),
		}})
	}
	return nc, nil
}

// uplinkConfig maps uplink u to the leaf runtime's; its outbox part is
// outboxConfig's.
func uplinkConfig(c *config.Config, u *config.UplinkConfig) node.UplinkConfig {
	discard, _ := u.DiscardPolicy() // Validate checked it
	minFree := int64(u.MinFreeDisk)
	if minFree == 0 {
		minFree = config.DefaultMinFreeDisk
	}
	return node.UplinkConfig{
		Remote:        c.RemoteIndex(u.Remote), // Validate checked it
		Subjects:      slices.Clone([]string(u.Subjects)),
		Dir:           c.OutboxDir(u),
		DeadLetterDir: c.DeadLetterDir(u),
		Store:         store.Config{Name: u.Name, MaxMsgs: u.MaxMsgs, MaxBytes: int64(u.MaxBytes), Discard: discard},
		MinFreeDisk:   minFree,
		Outbox:        outboxConfig(c, u),
	}
}

// fileStreamOpener is the leaf runtime's node.StreamOpener: the outbox
// and dead-letter streams are filestore streams on the real file system,
// encrypted as the JetStream store is (jetstream.cipher).
func fileStreamOpener(enc filestore.Encryption) node.StreamOpener {
	return func(dir string, cfg store.Config, syncInterval time.Duration) (store.Stream, error) {
		return filestore.Open(vfs.OS, dir, filestore.Config{Config: cfg, SyncInterval: syncInterval, Encryption: enc})
	}
}
