package proto

import "encoding/json"

// Info is the JSON argument of INFO, sent by a server on its client port and
// by a hub on its leafnode port. The JSON names and omitempty choices are
// those of nats-server's Info (server.go), so a marshalled Info matches what
// nats-server writes field for field.
type Info struct {
	ServerID     string `json:"server_id"`
	ServerName   string `json:"server_name"`
	Version      string `json:"version"`
	Proto        int    `json:"proto"`
	GitCommit    string `json:"git_commit,omitempty"`
	Go           string `json:"go"`
	Host         string `json:"host"`
	Port         int    `json:"port"`
	Headers      bool   `json:"headers"`
	AuthRequired bool   `json:"auth_required,omitempty"`
	TLSRequired  bool   `json:"tls_required,omitempty"`
	TLSVerify    bool   `json:"tls_verify,omitempty"`
	TLSAvailable bool   `json:"tls_available,omitempty"`
	MaxPayload   int64  `json:"max_payload"`
	JetStream    bool   `json:"jetstream,omitempty"`
	IP           string `json:"ip,omitempty"`
	ClientID     uint64 `json:"client_id,omitempty"`
	ClientIP     string `json:"client_ip,omitempty"`
	// Nonce is the string a client signs for nkey and JWT authentication.
	Nonce   string `json:"nonce,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	// Domain is the JetStream domain.
	Domain string `json:"domain,omitempty"`
	// ConnectURLs lists other cluster members for the client's reconnect
	// pool.
	ConnectURLs   []string `json:"connect_urls,omitempty"`
	WSConnectURLs []string `json:"ws_connect_urls,omitempty"`
	// LameDuckMode is set only in the async INFO announcing lame duck mode.
	LameDuckMode bool `json:"ldm,omitempty"`
	// Compression is the leafnode compression mode the sender wants
	// ("s2_auto", "s2_fast", "off", ...).
	Compression string `json:"compression,omitempty"`
	// ConnectInfo marks the INFO a server sends in answer to CONNECT.
	ConnectInfo bool `json:"connect_info,omitempty"`
	// RemoteAccount names the account the peer is bound to; sent with
	// ConnectInfo.
	RemoteAccount string `json:"remote_account,omitempty"`
	// IsSystemAccount tells whether RemoteAccount is the system account.
	IsSystemAccount bool `json:"acc_is_sys,omitempty"`
	// APILevel is the JetStream API level.
	APILevel int `json:"api_lvl,omitempty"`
	// Import and Export carry a leaf user's subscribe and publish
	// permissions in the hub's connect_info INFO.
	Import *SubjectPermission `json:"import,omitempty"`
	Export *SubjectPermission `json:"export,omitempty"`
	// InfoOnConnect is set on a leafnode port's INFO: the hub answers
	// CONNECT with another INFO.
	InfoOnConnect bool `json:"info_on_connect,omitempty"`
	// LeafNodeURLs lists further leafnode URLs of the hub's cluster.
	LeafNodeURLs []string `json:"leafnode_urls,omitempty"`
	// XKey is the server's public x25519 key.
	XKey string `json:"xkey,omitempty"`
}

// SubjectPermission is an allow list and a deny list of subjects, as carried
// in the leafnode Import and Export fields.
type SubjectPermission struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Connect is the JSON argument of CONNECT, from a client or from a soliciting
// leafnode. The client fields use nats-server's ClientOpts names (client.go)
// and the leaf fields its leafConnectInfo names (leafnode.go).
//
// Verbose, Pedantic, TLSRequired and Echo are always marshalled, as nats.go
// does, because a server treats a missing verbose, pedantic or echo as true
// (see ParseConnect). A soliciting leaf should therefore set Echo to true,
// which is what a hub assumes when nats-server's own leaf omits the field.
// Lang is omitted when empty: a hub rejects a leaf CONNECT whose lang is set.
type Connect struct {
	Verbose     bool   `json:"verbose"`
	Pedantic    bool   `json:"pedantic"`
	TLSRequired bool   `json:"tls_required"`
	Echo        bool   `json:"echo"`
	Name        string `json:"name,omitempty"`
	Lang        string `json:"lang,omitempty"`
	Version     string `json:"version,omitempty"`
	// Protocol is 1 for clients that understand async INFO; leafs send
	// their protocol level (3 and up announce message tracing).
	Protocol     int  `json:"protocol,omitempty"`
	Headers      bool `json:"headers,omitempty"`
	NoResponders bool `json:"no_responders,omitempty"`

	// Authentication.
	User      string `json:"user,omitempty"`
	Pass      string `json:"pass,omitempty"`
	AuthToken string `json:"auth_token,omitempty"`
	Nkey      string `json:"nkey,omitempty"`
	JWT       string `json:"jwt,omitempty"`
	Sig       string `json:"sig,omitempty"`

	// Account and NewAccount are rejected by servers; they are decoded so
	// that a server can see them.
	Account    string `json:"account,omitempty"`
	NewAccount bool   `json:"new_account,omitempty"`

	// Leafnode fields.
	ServerID      string             `json:"server_id,omitempty"`
	Domain        string             `json:"domain,omitempty"`
	Hub           bool               `json:"is_hub,omitempty"`
	Cluster       string             `json:"cluster,omitempty"`
	JetStream     bool               `json:"jetstream,omitempty"`
	DenyPub       []string           `json:"deny_pub,omitempty"`
	Isolate       bool               `json:"isolate,omitempty"`
	CompressMode  string             `json:"compress_mode,omitempty"`
	RemoteAccount string             `json:"remote_account,omitempty"`
	Import        *SubjectPermission `json:"import,omitempty"`
	Export        *SubjectPermission `json:"export,omitempty"`
	// Gateway is set only by gateways; a hub uses it to detect a gateway
	// that dialed its leafnode port.
	Gateway string `json:"gateway,omitempty"`
}

// ParseConnect decodes the JSON argument of CONNECT with nats-server's
// defaults: verbose, pedantic and echo are true unless the JSON says
// otherwise.
func ParseConnect(arg []byte) (Connect, error) {
	c := Connect{Verbose: true, Pedantic: true, Echo: true}
	err := json.Unmarshal(arg, &c)
	return c, err
}
