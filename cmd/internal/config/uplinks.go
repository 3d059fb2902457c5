package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/storedir"
)

// DefaultDrainJitter is an uplink's drain_jitter when unset.
const DefaultDrainJitter = 3 * time.Second

// DefaultMinFreeDisk is the free space below which a discard-old outbox
// drops its oldest message for each new one (uplinks[].min_free_disk).
const DefaultMinFreeDisk = 32 << 20

// maxUplinkPriority bounds an uplink's priority.
const maxUplinkPriority = 1000

// UplinkConfig is one entry of uplinks: local subjects whose messages are
// stored on the gateway first and forwarded to a hub JetStream stream,
// each removed only after the hub's PubAck. Toward the hub the captured
// subjects travel only through the uplink: they are added to every
// leafnode remote's deny_exports.
//
// The outbox always syncs: captured messages are fsynced (one fsync for
// all captures since the last) before the broker answers a publisher's
// next PING, so a message whose publisher's flush returned survives kill
// -9 and power loss; jetstream.sync_interval does not apply to it. Without
// a PING they are synced within a second, or sooner when the forwarder
// wants to send them: only messages on disk are forwarded.
type UplinkConfig struct {
	// Name identifies the uplink (its outbox directory and Nats-Msg-Id).
	Name string `yaml:"name,omitempty"`
	// Remote is the name of the leafnode remote to forward over; empty is
	// the first remote.
	Remote string `yaml:"remote,omitempty"`
	// Subjects are the local subjects captured (wildcards allowed).
	Subjects StringList `yaml:"subjects,omitempty"`
	// HubSubjectPrefix is prepended to a message's subject toward the hub,
	// such as "site1."; it must not be empty, so that the hub subject is
	// not a captured one.
	HubSubjectPrefix string `yaml:"hub_subject_prefix,omitempty"`
	// Stream is the hub stream expected to store the messages; empty
	// accepts any.
	Stream string `yaml:"stream,omitempty"`
	// HubDomain is the hub's JetStream domain. With Stream set, the
	// gateway reads the hub's time from $JS.<hub_domain>.API.STREAM.INFO.
	// <stream> whenever it connects, to trust its clock without NTP, and
	// asks again with backoff (250ms doubling to 30s) until an answer
	// carries the time (a stream created after the gateway joined).
	HubDomain string `yaml:"hub_domain,omitempty"`
	// MaxBytes, MaxMsgs and MaxAge bound the outbox; 0 is unlimited.
	// MaxAge is measured on the monotonic clock (leaf/clock), so a clock
	// set from 1970 to today expires nothing.
	MaxBytes Size     `yaml:"max_bytes,omitempty"`
	MaxMsgs  int64    `yaml:"max_msgs,omitempty"`
	MaxAge   Duration `yaml:"max_age,omitempty"`
	// Discard is what a full outbox does: "old" (the default) drops the
	// oldest messages, "new" refuses new ones. Both are counted.
	Discard string `yaml:"discard,omitempty"`
	// MinFreeDisk is the free space (default 32MB) below which a
	// discard-old outbox drops its oldest message for each new one
	// (counted as disk_low), so the disk never fills up; a discard-new
	// outbox refuses new messages once the disk is full (store_full).
	MinFreeDisk Size `yaml:"min_free_disk,omitempty"`
	// Priority orders the uplinks toward the hub: a higher class with
	// messages ready is sent first; equal classes take turns. 0 to 1000.
	Priority int `yaml:"priority,omitempty"`
	// MaxRate caps the uplink's bytes per second toward the hub; 0 is
	// unlimited.
	MaxRate Size `yaml:"max_rate,omitempty"`
	// DailyBudget caps the uplink's bytes per UTC day (a metered link);
	// once used up the uplink waits for 00:00 UTC. 0 is unlimited.
	DailyBudget Size `yaml:"daily_budget,omitempty"`
	// DrainJitter delays draining a backlog after the link comes up by a
	// random time up to this (default 3s; 0 turns it off), so that
	// gateways reconnecting together spread their load.
	DrainJitter *Duration `yaml:"drain_jitter,omitempty"`
	// DeadLetterAfter is how many permanent refusals by the hub (no
	// stream captures the subject, a wrong expected stream, too large, a
	// permissions violation) move a message to the uplink's dead-letter
	// store, so that the messages after it go on (default 3).
	DeadLetterAfter int `yaml:"dead_letter_after,omitempty"`
}

// UplinkLimitsConfig is the uplink_limits block: caps on all uplinks
// together.
type UplinkLimitsConfig struct {
	// MaxRate caps the bytes per second of all uplinks; 0 is unlimited.
	MaxRate Size `yaml:"max_rate,omitempty"`
	// DailyBudget caps the bytes per UTC day of all uplinks; once used up
	// only the uplinks of the highest priority still forward. 0 is
	// unlimited.
	DailyBudget Size `yaml:"daily_budget,omitempty"`
}

// DiscardPolicy returns the uplink's discard setting as the store's
// policy: unset is old, the default.
func (u *UplinkConfig) DiscardPolicy() (store.DiscardPolicy, error) {
	if u.Discard == "" {
		return store.DiscardOld, nil
	}
	return store.ParseDiscardPolicy(u.Discard)
}

// setUplinkDefaults fills the uplinks' scheduling defaults.
func setUplinkDefaults(c *Config) {
	for i := range c.Uplinks {
		if c.Uplinks[i].DrainJitter == nil {
			d := Duration(DefaultDrainJitter)
			c.Uplinks[i].DrainJitter = &d
		}
	}
}

// uplinks checks the uplinks block.
func (v *validator) uplinks() {
	c := v.c
	v.uplinkLimits()
	if len(c.Uplinks) == 0 {
		return
	}
	if c.LeafNodes == nil || len(c.LeafNodes.Remotes) == 0 {
		v.errf("uplinks", "need a leafnodes remote to forward over")
	}
	if c.stateDir == "" {
		v.errf("uplinks", "no directory for the outboxes: set jetstream.store_dir or $STATE_DIRECTORY")
	}
	names := map[string]bool{}
	for i, u := range c.Uplinks {
		path := fmt.Sprintf("uplinks[%d]", i)
		switch err := jsapi.CheckName(u.Name); {
		case u.Name == "":
			v.errf(path+".name", "is required")
		case err != nil:
			v.errf(path+".name", "%q is not a valid name: %v", u.Name, err)
		case len(u.Name) > storedir.MaxUplinkNameLen:
			v.errf(path+".name", "%q is too long: at most %d bytes (it names the uplink's state file)", u.Name, storedir.MaxUplinkNameLen)
		case names[u.Name]:
			v.errf(path+".name", "%q is used twice", u.Name)
		}
		names[u.Name] = true
		if u.Remote != "" && c.RemoteIndex(u.Remote) < 0 {
			v.errf(path+".remote", "no leafnodes remote is named %q", u.Remote)
		}
		if len(u.Subjects) == 0 {
			v.errf(path+".subjects", "needs at least one subject")
		}
		for j, s := range u.Subjects {
			at := fmt.Sprintf("%s.subjects[%d]", path, j)
			if !v.c.index.has(at) {
				at = path + ".subjects"
			}
			if !subject.Valid(s) {
				v.errf(at, "invalid subject %q", s)
			}
		}
		p := u.HubSubjectPrefix
		if p == "" || !strings.HasSuffix(p, ".") || !subject.ValidLiteral(p+"x") {
			v.errf(path+".hub_subject_prefix", "%q must be one or more literal tokens ending in '.', such as \"site1.\"", p)
		} else {
			// A hub subject that an uplink captures would be captured again.
			for _, s := range u.Subjects {
				for _, other := range c.Uplinks {
					for _, cs := range other.Subjects {
						if subject.Valid(s) && subject.Valid(cs) && subject.Overlap(p+s, cs) {
							v.errf(path+".hub_subject_prefix", "hub subject %q overlaps captured subject %q", p+s, cs)
						}
					}
				}
			}
		}
		if err := jsapi.CheckName(u.Stream); u.Stream != "" && err != nil {
			v.errf(path+".stream", "%q is not a stream name: %v", u.Stream, err)
		}
		if u.MaxBytes < 0 {
			v.errf(path+".max_bytes", "must not be negative")
		}
		if u.MinFreeDisk < 0 {
			v.errf(path+".min_free_disk", "must not be negative")
		}
		if u.MaxMsgs < 0 {
			v.errf(path+".max_msgs", "must not be negative")
		}
		if u.MaxAge < 0 {
			v.errf(path+".max_age", "must not be negative")
		}
		if u.DeadLetterAfter < 0 {
			v.errf(path+".dead_letter_after", "must not be negative")
		}
		switch err := jsapi.CheckName(u.HubDomain); {
		case u.HubDomain == "":
		case err != nil:
			v.errf(path+".hub_domain", "%q is not a JetStream domain: %v", u.HubDomain, err)
		case u.Stream == "":
			v.errf(path+".hub_domain", "needs stream: the hub's time is read from that stream's info")
		case c.JetStream != nil && c.JetStream.Enabled && c.JetStream.Domain == u.HubDomain:
			v.errf(path+".hub_domain", "%q is this gateway's own jetstream.domain", u.HubDomain)
		}
		if _, err := u.DiscardPolicy(); err != nil {
			v.errf(path+".discard", "%q is not old or new", u.Discard)
		}
		v.uplinkSchedule(path, u)
	}
}

// uplinkSchedule checks uplink u's scheduling keys.
func (v *validator) uplinkSchedule(path string, u UplinkConfig) {
	if u.Priority < 0 || u.Priority > maxUplinkPriority {
		v.errf(path+".priority", "%d is out of range (0-%d)", u.Priority, maxUplinkPriority)
	}
	if u.MaxRate < 0 {
		v.errf(path+".max_rate", "must not be negative")
	}
	if u.DailyBudget < 0 {
		v.errf(path+".daily_budget", "must not be negative")
	}
	if u.DrainJitter != nil && *u.DrainJitter < 0 {
		v.errf(path+".drain_jitter", "must not be negative")
	}
}

// uplinkLimits checks the uplink_limits block.
func (v *validator) uplinkLimits() {
	l := v.c.UplinkLimits
	if l == nil {
		return
	}
	if len(v.c.Uplinks) == 0 && (l.MaxRate != 0 || l.DailyBudget != 0) {
		v.errf("uplink_limits", "has no effect without uplinks")
	}
	if l.MaxRate < 0 {
		v.errf("uplink_limits.max_rate", "must not be negative")
	}
	if l.DailyBudget < 0 {
		v.errf("uplink_limits.daily_budget", "must not be negative")
	}
}
