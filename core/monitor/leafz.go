package monitor

import "time"

// Leafz is the /leafz document: the leafnode connections.
type Leafz struct {
	ID       string     `json:"server_id"` // ID is the server's id.
	Now      time.Time  `json:"now"`       // Now is the time of the snapshot.
	NumLeafs int        `json:"leafnodes"` // NumLeafs is the number of leafnodes listed.
	Leafs    []LeafInfo `json:"leafs"`     // Leafs lists the leafnode connections; never null.
}

// LeafInfo describes one leafnode connection.
type LeafInfo struct {
	ID          uint64   `json:"id"`                           // ID is the connection id.
	Name        string   `json:"name"`                         // Name is the remote server's name.
	IsSpoke     bool     `json:"is_spoke"`                     // IsSpoke reports that this side solicited the link.
	IsIsolated  bool     `json:"is_isolated,omitempty"`        // IsIsolated reports an isolated leafnode.
	Account     string   `json:"account"`                      // Account is the local account bound to the link.
	IP          string   `json:"ip"`                           // IP is the peer's address.
	Port        int      `json:"port"`                         // Port is the peer's port.
	RTT         string   `json:"rtt,omitempty"`                // RTT is the round-trip time as a Go duration string.
	InMsgs      int64    `json:"in_msgs"`                      // InMsgs counts messages received.
	OutMsgs     int64    `json:"out_msgs"`                     // OutMsgs counts messages sent.
	InBytes     int64    `json:"in_bytes"`                     // InBytes counts payload bytes received.
	OutBytes    int64    `json:"out_bytes"`                    // OutBytes counts payload bytes sent.
	NumSubs     uint32   `json:"subscriptions"`                // NumSubs is the number of subscriptions (interest) on the link.
	Subs        []string `json:"subscriptions_list,omitempty"` // Subs lists their subjects (subs=1).
	Compression string   `json:"compression,omitempty"`        // Compression is the negotiated compression mode.
	Websocket   bool     `json:"websocket,omitempty"`          // Websocket reports a websocket link.
}

// buildLeafz keeps the leafs of account (all when "") and shapes them.
func buildLeafz(id string, now time.Time, account string, leafs []LeafInfo) *Leafz {
	lz := &Leafz{ID: id, Now: now.UTC(), Leafs: make([]LeafInfo, 0, len(leafs))}
	for _, l := range leafs {
		if account == "" || l.Account == account {
			lz.Leafs = append(lz.Leafs, l)
		}
	}
	lz.NumLeafs = len(lz.Leafs)
	return lz
}

// Routez is the /routez document. leafbox does not cluster, so it always
// lists no routes.
type Routez struct {
	ID        string    `json:"server_id"`   // ID is the server's id.
	Name      string    `json:"server_name"` // Name is the server's name.
	Now       time.Time `json:"now"`         // Now is the time of the snapshot.
	NumRoutes int       `json:"num_routes"`  // NumRoutes is always 0.
	Routes    []any     `json:"routes"`      // Routes is always empty.
}

// Gatewayz is the /gatewayz document. leafbox has no gateways, so both maps
// are always empty.
type Gatewayz struct {
	ID               string         `json:"server_id"`         // ID is the server's id.
	Now              time.Time      `json:"now"`               // Now is the time of the snapshot.
	OutboundGateways map[string]any `json:"outbound_gateways"` // OutboundGateways is always empty.
	InboundGateways  map[string]any `json:"inbound_gateways"`  // InboundGateways is always empty.
}
