package node

import (
	"log/slog"
	"slices"
	"time"

	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
)

// Config configures a Node. It holds no file format: cmd/internal/app
// turns the gateway's configuration into it, validated.
type Config struct {
	// ServerID and ServerName are the broker's: the links announce the id
	// to the hubs, and the outboxes' message ids carry the name.
	ServerID, ServerName string
	// Remotes are the leafnode remotes, one link each, in order.
	Remotes []RemoteConfig
	// Uplinks are the store-and-forward flows toward hub streams.
	Uplinks []UplinkConfig
	// Limits caps all uplinks together.
	Limits LimitsConfig
	// Downlinks are the durable consumers of hub streams.
	Downlinks []DownlinkConfig
	// Listener, when set, accepts leafnode connections.
	Listener *ListenerConfig
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
	// OpenStream opens the uplinks' outbox and dead-letter streams; it is
	// required when there are Uplinks. The node names no store engine:
	// the composition root injects one (cmd/internal/app, over filestore).
	OpenStream StreamOpener
}

// StreamOpener opens the stream kept in dir, creating it if it is not
// there, bounded by cfg. syncInterval says when its writes reach the
// disk: 0, before Store returns; a positive interval, within that long of
// the Store, or sooner at store.Syncer's Sync, which the stream must
// offer.
type StreamOpener func(dir string, cfg store.Config, syncInterval time.Duration) (store.Stream, error)

// RemoteConfig is one leafnode remote.
type RemoteConfig struct {
	// Link is the link's configuration with the deny lists the operator
	// set; New adds the loop-prevention subjects of the uplinks and
	// downlinks to them, and the ServerID.
	Link leaf.Config
	// ShownURLs are the hub URLs as /varz lists them (secrets redacted).
	ShownURLs []string
}

// UplinkConfig is one uplink: local subjects stored in an outbox and
// forwarded to a hub stream over a remote's link.
type UplinkConfig struct {
	// Remote is the index in Config.Remotes of the remote it forwards
	// over; it captures in that remote's local account.
	Remote int
	// Subjects are the local subjects captured (wildcards allowed).
	Subjects []string
	// Dir holds the outbox stream and DeadLetterDir the messages the hub
	// refused for good.
	Dir, DeadLetterDir string
	// Store bounds the outbox stream (Name, MaxMsgs, MaxBytes, Discard);
	// the dead-letter store gets the same bounds, discarding old.
	Store store.Config
	// MinFreeDisk is the free space below which a discard-old outbox
	// drops its oldest message for each new one; it must be > 0.
	MinFreeDisk int64
	// Outbox configures the outbox. New fills ServerName, Logger,
	// Clock, Scheduler, DeadLetter and DiskLow.
	Outbox outbox.Config
}

// LimitsConfig caps the uplinks together (outbox.SchedulerConfig).
type LimitsConfig struct {
	// StateDir is created for StateFile, where the scheduler keeps its
	// daily usage.
	StateDir, StateFile string
	// MaxRate and DailyBudget cap the bytes per second and per UTC day of
	// all uplinks; 0 is unlimited.
	MaxRate, DailyBudget int64
}

// DownlinkConfig is one downlink: a durable pull consumer on a hub
// stream, delivering into the local account of a remote.
type DownlinkConfig struct {
	// Remote is the index in Config.Remotes of the remote it consumes
	// over.
	Remote int
	// Config is the downlink's; New sets its Logger.
	downlink.Config
}

// LocalSubjects returns the local subjects the downlink delivers on
// (downlink.LocalSubjects of its filters and prefixes).
func (d *DownlinkConfig) LocalSubjects() []string {
	return downlink.LocalSubjects(d.FilterSubjects, d.HubPrefix, d.LocalPrefix)
}

// ListenerConfig configures the leafnode listener.
type ListenerConfig struct {
	// Accept is the listener's configuration; New sets its ServerID.
	Accept leaf.AcceptConfig
	// Open means nothing authenticates attaching leafs: Start warns.
	Open bool
}

// clone returns a copy of s that appending to never shares with s.
func clone(s []string) []string { return slices.Clip(slices.Clone(s)) }
