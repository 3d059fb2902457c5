package app

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
)

// nodeConfig turns the leafnodes, uplinks, uplink_limits and downlinks
// sections into the leaf runtime's configuration; serverID and
// serverName are the broker's. cfg has been validated; the TLS files are
// read here.
func (c *Config) nodeConfig(serverID, serverName string, log *slog.Logger) (node.Config, error) {
	nc := node.Config{ServerID: serverID, ServerName: serverName, Logger: log}
	if ln := c.LeafNodes; ln != nil {
		for i := range ln.Remotes {
			r := &ln.Remotes[i]
			lc := c.leafConfig(r)
			if r.TLS != nil {
				tc, problems := c.buildTLS(fmt.Sprintf("leafnodes.remotes[%d].tls", i), r.TLS.tlsConfig(), false)
				if len(problems) > 0 {
					return node.Config{}, newConfigError(problems)
				}
				lc.TLS = tc
			}
			shown := make([]string, 0, len(lc.URLs))
			for _, u := range lc.URLs {
				shown = append(shown, redactURL(u))
			}
			nc.Remotes = append(nc.Remotes, node.RemoteConfig{Link: lc, ShownURLs: shown})
		}
		if c.leafListenAddr() != "" {
			ac, problems := c.leafAcceptConfig()
			if len(problems) > 0 {
				return node.Config{}, newConfigError(problems)
			}
			// Client certificates verified against a CA authenticate too.
			lt := ln.TLS
			nc.Listener = &node.ListenerConfig{Accept: ac, Open: c.leafAuthConfig() == nil && (lt == nil || !lt.Verify)}
		}
	}
	for i := range c.Uplinks {
		nc.Uplinks = append(nc.Uplinks, c.uplinkConfig(&c.Uplinks[i]))
	}
	nc.Limits = node.LimitsConfig{StateDir: c.layout().State(), StateFile: c.layout().SchedulerFile()}
	if l := c.UplinkLimits; l != nil {
		nc.Limits.MaxRate, nc.Limits.DailyBudget = int64(l.MaxRate), int64(l.DailyBudget)
	}
	for i := range c.Downlinks {
		d := &c.Downlinks[i]
		nc.Downlinks = append(nc.Downlinks, node.DownlinkConfig{Remote: c.remoteIndex(d.Remote), Config: downlink.Config{
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

// uplinkConfig maps uplink u to the leaf runtime's.
func (c *Config) uplinkConfig(u *UplinkConfig) node.UplinkConfig {
	discard, _ := discardPolicy(u.Discard) // Validate checked it
	minFree := int64(u.MinFreeDisk)
	if minFree == 0 {
		minFree = DefaultMinFreeDisk
	}
	uc := node.UplinkConfig{
		Remote:        c.remoteIndex(u.Remote), // Validate checked it
		Subjects:      slices.Clone([]string(u.Subjects)),
		Dir:           c.outboxDir(u),
		DeadLetterDir: c.deadLetterDir(u),
		Store:         store.Config{Name: u.Name, MaxMsgs: u.MaxMsgs, MaxBytes: int64(u.MaxBytes), Discard: discard},
		MinFreeDisk:   minFree,
		Outbox: outbox.Config{
			Name:            u.Name,
			HubPrefix:       u.HubSubjectPrefix,
			Stream:          u.Stream,
			MaxAge:          time.Duration(u.MaxAge),
			DeadLetterAfter: u.DeadLetterAfter,
			HubDomain:       u.HubDomain,
			Priority:        u.Priority,
			MaxRate:         int64(u.MaxRate),
			DailyBudget:     int64(u.DailyBudget),
			StateFile:       c.outboxStateFile(u),
		},
	}
	if u.DrainJitter != nil {
		uc.Outbox.DrainJitter = time.Duration(*u.DrainJitter)
	}
	return uc
}
