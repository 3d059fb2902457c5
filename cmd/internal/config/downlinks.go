package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/store/jsapi"
)

// DownlinkConfig is one entry of downlinks: a durable pull consumer on a
// hub JetStream stream whose messages are published on local subjects and
// acknowledged to the hub only after the local delivery, so that commands
// sent while the gateway was offline arrive when it is back. A message
// is delivered when a local stream stored it (its PubAck) or, for a
// subject no local stream captures, when at least one subscriber got it;
// otherwise the hub sends it again later. The consumed hub subjects
// (filter_subjects) and the local subjects it delivers on reach the
// gateway only through the downlink (deny_imports of every leafnode
// remote), and the local subjects never go back to the hub
// (deny_exports).
type DownlinkConfig struct {
	// Name identifies the downlink (logs, /uplinkz, the default durable).
	Name string `yaml:"name,omitempty"`
	// Remote is the name of the leafnode remote to consume over; empty is
	// the first remote.
	Remote string `yaml:"remote,omitempty"`
	// Stream is the hub stream consumed.
	Stream string `yaml:"stream,omitempty"`
	// HubDomain is the hub's JetStream domain (default "hub"): requests
	// go to $JS.<hub_domain>.API over the downlink's remote.
	HubDomain string `yaml:"hub_domain,omitempty"`
	// Durable is the hub consumer's durable name (default
	// "<server_name>_<name>", with the server name derived from the
	// gateway's identity when server_name is unset).
	Durable string `yaml:"durable,omitempty"`
	// FilterSubjects restrict the consumer to these hub subjects; empty
	// consumes the whole stream.
	FilterSubjects StringList `yaml:"filter_subjects,omitempty"`
	// HubSubjectPrefix is removed from hub subjects that start with it,
	// such as "cmd.site1.".
	HubSubjectPrefix string `yaml:"hub_subject_prefix,omitempty"`
	// LocalSubjectPrefix is prepended to the local subject, such as "cmd.".
	LocalSubjectPrefix string `yaml:"local_subject_prefix,omitempty"`
	// MaxAckPending bounds the messages outstanding toward the gateway
	// (default 1, which keeps the stream's order through link losses;
	// above 1, the messages in transit at a drop, at most this many, are
	// delivered after ack_wait, behind later ones, each still once).
	MaxAckPending int `yaml:"max_ack_pending,omitempty"`
	// Batch is the number of messages one pull request asks for
	// (default 100).
	Batch int `yaml:"batch,omitempty"`
	// AckWait is how long the hub waits for an ack before it sends a
	// message again (default 30s).
	AckWait Duration `yaml:"ack_wait,omitempty"`
	// MaxDeliver bounds the deliveries of one message (default
	// unlimited); after that the hub gives up on it, and the downlink
	// counts it as skipped and goes on with the next. It needs
	// max_ack_pending 1.
	MaxDeliver int `yaml:"max_deliver,omitempty"`
	// Expires is a pull request's lifetime (default 30s); a heartbeat of
	// a quarter of it, at most 5s, detects a lost link.
	Expires Duration `yaml:"expires,omitempty"`
}

// setDownlinkDefaults fills each downlink's domain and durable name.
func (c *Config) setDownlinkDefaults() {
	for i := range c.Downlinks {
		d := &c.Downlinks[i]
		if d.HubDomain == "" {
			d.HubDomain = downlink.DefaultDomain
		}
		if d.Durable == "" && c.ServerName != "" && d.Name != "" {
			d.Durable = durableName(c.ServerName + "_" + d.Name)
		}
	}
}

// durableName replaces the characters a consumer name cannot hold.
func durableName(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n.*>/\\", r) {
			return '_'
		}
		return r
	}, s)
}

// downlinks checks the downlinks block.
func (v *validator) downlinks() {
	c := v.c
	if len(c.Downlinks) == 0 {
		return
	}
	if c.LeafNodes == nil || len(c.LeafNodes.Remotes) == 0 {
		v.errf("downlinks", "need a leafnodes remote to consume over")
	}
	names, durables := map[string]bool{}, map[string]bool{}
	for i, d := range c.Downlinks {
		path := fmt.Sprintf("downlinks[%d]", i)
		switch err := jsapi.CheckName(d.Name); {
		case err != nil:
			v.errf(path+".name", "%q is not a valid name: %v", d.Name, err)
		case names[d.Name]:
			v.errf(path+".name", "%q is used twice", d.Name)
		}
		names[d.Name] = true
		if d.Remote != "" && c.RemoteIndex(d.Remote) < 0 {
			v.errf(path+".remote", "no leafnodes remote is named %q", d.Remote)
		}
		if err := jsapi.CheckName(d.Stream); err != nil {
			v.errf(path+".stream", "%q is not a stream name: %v", d.Stream, err)
		}
		switch err := jsapi.CheckName(d.Durable); {
		case d.Durable == "" && c.identityPath() == "":
			v.errf(path+".durable", "is required without server_name or a store directory (for the gateway's identity): the hub keeps the position under this name")
		case d.Durable == "":
			// Derived from the identity's server name at start.
		case err != nil:
			v.errf(path+".durable", "%q is not a consumer name: %v", d.Durable, err)
		case durables[d.Stream+" "+d.Durable]:
			v.errf(path+".durable", "%q on stream %q is used twice", d.Durable, d.Stream)
		}
		if d.Durable != "" {
			durables[d.Stream+" "+d.Durable] = true
		}
		if err := jsapi.CheckName(d.HubDomain); err != nil {
			v.errf(path+".hub_domain", "%q is not a JetStream domain: %v", d.HubDomain, err)
		} else if js := c.JetStream; js != nil && js.Enabled && js.Domain == d.HubDomain {
			v.errf(path+".hub_domain", "%q is this gateway's own JetStream domain; requests for it never leave", d.HubDomain)
		}
		for j, s := range d.FilterSubjects {
			at := fmt.Sprintf("%s.filter_subjects[%d]", path, j)
			if !v.c.index.has(at) {
				at = path + ".filter_subjects"
			}
			if !subject.Valid(s) {
				v.errf(at, "invalid subject %q", s)
			}
		}
		if p := d.HubSubjectPrefix; p != "" && (!strings.HasSuffix(p, ".") || !subject.ValidLiteral(p+"x")) {
			v.errf(path+".hub_subject_prefix", "%q must be literal tokens ending in '.', such as \"cmd.site1.\"", p)
		}
		if p := d.LocalSubjectPrefix; p != "" && (!strings.HasSuffix(p, ".") || !subject.ValidLiteral(p+"x")) {
			v.errf(path+".local_subject_prefix", "%q must be literal tokens ending in '.', such as \"cmd.\"", p)
		}
		for _, s := range d.localSubjects() {
			if s == ">" {
				v.errf(path, "would deliver on every local subject: set local_subject_prefix or filter_subjects")
				continue
			}
			// An uplink would send the commands back to the hub.
			for _, u := range c.Uplinks {
				for _, cs := range u.Subjects {
					if subject.Valid(s) && subject.Valid(cs) && subject.Overlap(s, cs) {
						v.errf(path, "local subject %q overlaps subject %q that uplink %q captures", s, cs, u.Name)
					}
				}
			}
		}
		if d.MaxAckPending < 0 {
			v.errf(path+".max_ack_pending", "must not be negative")
		}
		if d.MaxDeliver < 0 {
			v.errf(path+".max_deliver", "must not be negative")
		} else if d.MaxDeliver > 0 && d.MaxAckPending > 1 {
			v.errf(path+".max_deliver", "needs max_ack_pending 1: messages waiting behind a failing one would use up their deliveries")
		}
		if d.Batch < 0 {
			v.errf(path+".batch", "must not be negative")
		}
		if d.AckWait < 0 {
			v.errf(path+".ack_wait", "must not be negative")
		}
		if d.Expires != 0 && time.Duration(d.Expires) < time.Second {
			v.errf(path+".expires", "must be at least 1s")
		}
	}
}

// localSubjects returns the local subjects the downlink delivers on.
func (d *DownlinkConfig) localSubjects() []string {
	return downlink.LocalSubjects(d.FilterSubjects, d.HubSubjectPrefix, d.LocalSubjectPrefix)
}
