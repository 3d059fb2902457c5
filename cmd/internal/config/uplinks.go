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

// DiscardPolicy returns the uplink's discard setting as the store's
// policy: unset is old, the default.
func (u *UplinkConfig) DiscardPolicy() (store.DiscardPolicy, error) {
	if u.Discard == "" {
		return store.DiscardOld, nil
	}
	return store.ParseDiscardPolicy(u.Discard)
}

// DefaultDrainJitter is an uplink's drain_jitter when unset.
const DefaultDrainJitter = 3 * time.Second

// maxUplinkPriority bounds an uplink's priority.
const maxUplinkPriority = 1000

// setUplinkDefaults fills the uplinks' scheduling defaults.
func setUplinkDefaults(c *Config) {
	for i := range c.Uplinks {
		if c.Uplinks[i].DrainJitter == nil {
			d := Duration(DefaultDrainJitter)
			c.Uplinks[i].DrainJitter = &d
		}
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

// DefaultMinFreeDisk is the free space below which a discard-old outbox
// drops its oldest message for each new one (uplinks[].min_free_disk).
const DefaultMinFreeDisk = 32 << 20
