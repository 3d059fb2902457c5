package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
)

// runningDownlink is one running downlink: its in-process connection (hub
// inbox and local deliveries) and the downlink over it.
type runningDownlink struct {
	name string
	link *leaf.Link
	conn Conn
	dl   *downlink.Downlink
	// receivers, on the first downlink of a remote only, is shared by
	// all of that remote's downlinks.
	receivers *localReceivers
}

// DownlinkStatus is a downlink's counters with the state of its link.
type DownlinkStatus struct {
	downlink.Status
	// LinkState is the state of the leafnode link it consumes over, and
	// LinkSince when the link entered it.
	LinkState string
	LinkSince time.Time
}

// startDownlinks starts every downlink over the link of its remote,
// delivering into the remote's local account. On error it stops what it
// started. It runs before the links start, so the inbox interest is
// announced with the link's first connection.
func (n *Node) startDownlinks() ([]*runningDownlink, error) {
	var out []*runningDownlink
	for r, rem := range n.remotes {
		account := n.cfg.Remotes[r].Link.Account
		streams := n.streams
		if account != "" && account != auth.GlobalAccount {
			streams = nil // the JetStream engine serves the global account only
		}
		var receivers *localReceivers
		for i := range n.cfg.Downlinks {
			d := &n.cfg.Downlinks[i]
			if d.Remote != r {
				continue
			}
			first := receivers == nil
			if first {
				receivers = watchLocalReceivers(n.broker, account, n.leafs)
			}
			c, err := n.startDownlink(d, account, streams, receivers, rem.link)
			if err != nil {
				if first {
					receivers.cancel()
				}
				stopDownlinks(out)
				return nil, fmt.Errorf("downlink %s: %w", d.Name, err)
			}
			if first {
				c.receivers = receivers // stopped with the remote's first downlink
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func (n *Node) startDownlink(d *DownlinkConfig, account string, streams Streams, receivers *localReceivers,
	link *leaf.Link) (*runningDownlink, error) {
	conn := n.broker.Connect(account)
	c := &runningDownlink{name: d.Name, link: link, conn: conn}
	local := &localDelivery{conn: conn, streams: streams, receivers: receivers, idPrefix: d.Name + "."}
	dc := d.Config
	dc.Logger = n.log.With("subsystem", "downlink")
	var err error
	c.dl, err = downlink.New(linkHub{link: link}, local, dc)
	if err == nil {
		_, err = conn.Subscribe(c.dl.InboxPrefix()+">", "", func(m leaf.Msg) {
			c.dl.HandleMsg(string(m.Subject), string(m.Reply), m.Header, m.Data)
		})
	}
	if err == nil {
		local.inbox = "_INBOX.DLL." + strings.TrimSuffix(strings.TrimPrefix(c.dl.InboxPrefix(), "_INBOX.DL."), ".") + "."
		_, err = conn.Subscribe(local.inbox+">", "", local.handleReply)
	}
	if err == nil {
		err = c.dl.Start(context.Background())
	}
	if err != nil {
		c.stop()
		return nil, err
	}
	n.log.Info("downlink started", "subsystem", "downlink", "downlink", d.Name, "stream", d.Stream,
		"domain", d.Domain, "durable", d.Durable, "filter_subjects", d.FilterSubjects)
	return c, nil
}

// stop stops the downlink and closes its connection.
func (c *runningDownlink) stop() {
	if c.dl != nil {
		_ = c.dl.Close()
	}
	c.conn.Close()
	if c.receivers != nil {
		c.receivers.cancel()
	}
}

// stopDownlinks stops every downlink of cs.
func stopDownlinks(cs []*runningDownlink) {
	for _, c := range cs {
		c.stop()
	}
}

// status returns the downlink's counters with its link's state.
func (c *runningDownlink) status() DownlinkStatus {
	ls := c.link.Status()
	return DownlinkStatus{Status: c.dl.Status(), LinkState: ls.State.String(), LinkSince: ls.StateSince}
}
