package monitor

import (
	"strconv"
	"time"
)

// Varz is the /varz document: the server's identity, configuration and
// counters. The JSON names are nats-server's. Durations tagged as
// time.Duration marshal as integer nanoseconds; auth_timeout and tls_timeout
// are float seconds.
type Varz struct {
	ID                   string                `json:"server_id"`                        // ID is the server's unique id.
	Name                 string                `json:"server_name"`                      // Name is the configured name; it equals ID when not set.
	Version              string                `json:"version"`                          // Version is the nats-server version leafbox speaks, which clients detect features by.
	LeafboxVersion       string                `json:"leafbox_version,omitempty"`        // LeafboxVersion is leafbox's own release version (leafbox extension).
	Proto                int                   `json:"proto"`                            // Proto is the client protocol version.
	GitCommit            string                `json:"git_commit,omitempty"`             // GitCommit is the commit leafbox was built from, "-dirty" appended for uncommitted changes.
	BuildDate            string                `json:"build_date,omitempty"`             // BuildDate is when leafbox was built: its commit's date, RFC 3339 (leafbox extension).
	GoVersion            string                `json:"go"`                               // GoVersion is the Go toolchain version; the monitor fills it.
	Host                 string                `json:"host"`                             // Host is the client listener's host.
	Port                 int                   `json:"port"`                             // Port is the client listener's port.
	AuthRequired         bool                  `json:"auth_required,omitempty"`          // AuthRequired reports that clients must authenticate.
	TLSRequired          bool                  `json:"tls_required,omitempty"`           // TLSRequired reports that clients must use TLS.
	TLSVerify            bool                  `json:"tls_verify,omitempty"`             // TLSVerify reports that client certificates are verified.
	IP                   string                `json:"ip,omitempty"`                     // IP is the advertised client IP, if any.
	ClientConnectURLs    []string              `json:"connect_urls,omitempty"`           // ClientConnectURLs are the URLs clients may connect to.
	WSConnectURLs        []string              `json:"ws_connect_urls,omitempty"`        // WSConnectURLs are the URLs websocket clients may connect to.
	MaxConn              int                   `json:"max_connections"`                  // MaxConn bounds client connections.
	MaxSubs              int                   `json:"max_subscriptions,omitempty"`      // MaxSubs bounds one connection's subscriptions; 0 is unlimited.
	PingInterval         time.Duration         `json:"ping_interval"`                    // PingInterval is how often idle clients are pinged.
	MaxPingsOut          int                   `json:"ping_max"`                         // MaxPingsOut is how many unanswered pings make a connection stale.
	HTTPHost             string                `json:"http_host"`                        // HTTPHost is the monitoring listener's host.
	HTTPPort             int                   `json:"http_port"`                        // HTTPPort is the monitoring listener's port.
	HTTPBasePath         string                `json:"http_base_path"`                   // HTTPBasePath prefixes the monitoring paths.
	HTTPSPort            int                   `json:"https_port"`                       // HTTPSPort is the TLS monitoring port, 0 if none.
	AuthTimeout          float64               `json:"auth_timeout"`                     // AuthTimeout is the CONNECT deadline in seconds.
	MaxControlLine       int32                 `json:"max_control_line"`                 // MaxControlLine bounds a protocol line.
	MaxPayload           int                   `json:"max_payload"`                      // MaxPayload bounds a message.
	MaxPending           int64                 `json:"max_pending"`                      // MaxPending bounds bytes queued for one client.
	Cluster              ClusterVarz           `json:"cluster"`                          // Cluster describes routes; empty when clustering is off.
	Gateway              GatewayVarz           `json:"gateway"`                          // Gateway describes gateways; empty when off.
	LeafNode             LeafNodeVarz          `json:"leaf"`                             // LeafNode describes leafnode listening and remotes.
	MQTT                 MQTTVarz              `json:"mqtt"`                             // MQTT describes the MQTT listener; empty when off.
	Websocket            WebsocketVarz         `json:"websocket"`                        // Websocket describes the websocket listener; empty when off.
	JetStream            JetStreamVarz         `json:"jetstream"`                        // JetStream describes JetStream; empty when off.
	TLSTimeout           float64               `json:"tls_timeout"`                      // TLSTimeout is the TLS handshake deadline in seconds.
	WriteDeadline        time.Duration         `json:"write_deadline"`                   // WriteDeadline bounds one write to a client.
	WriteTimeout         string                `json:"write_timeout,omitempty"`          // WriteTimeout is the policy on a write deadline ("close", "retry").
	Start                time.Time             `json:"start"`                            // Start is when the server started.
	Now                  time.Time             `json:"now"`                              // Now is the time of the snapshot; the monitor sets it.
	Uptime               string                `json:"uptime"`                           // Uptime is Now-Start as "1d2h3m4s"; the monitor sets it.
	Mem                  int64                 `json:"mem"`                              // Mem is the resident memory in bytes; filled by the monitor when 0.
	Cores                int                   `json:"cores"`                            // Cores is the number of CPUs; filled by the monitor when 0.
	MaxProcs             int                   `json:"gomaxprocs"`                       // MaxProcs is GOMAXPROCS; filled by the monitor when 0.
	MemLimit             int64                 `json:"gomemlimit,omitempty"`             // MemLimit is GOMEMLIMIT when set; filled by the monitor when 0.
	CPU                  float64               `json:"cpu"`                              // CPU is the recent CPU use in percent of one core; filled by the monitor when 0.
	Connections          int                   `json:"connections"`                      // Connections is the number of open client connections.
	TotalConnections     uint64                `json:"total_connections"`                // TotalConnections counts client connections since start.
	Routes               int                   `json:"routes"`                           // Routes is the number of route connections.
	Remotes              int                   `json:"remotes"`                          // Remotes is the number of configured route remotes.
	Leafs                int                   `json:"leafnodes"`                        // Leafs is the number of leafnode connections.
	InMsgs               int64                 `json:"in_msgs"`                          // InMsgs counts messages received from every kind of connection.
	InBytes              int64                 `json:"in_bytes"`                         // InBytes counts payload bytes received from every kind of connection.
	InClientMsgs         int64                 `json:"in_client_msgs"`                   // InClientMsgs counts messages received from clients.
	InClientBytes        int64                 `json:"in_client_bytes"`                  // InClientBytes counts payload bytes received from clients.
	OutMsgs              int64                 `json:"out_msgs"`                         // OutMsgs counts messages sent to every kind of connection.
	OutBytes             int64                 `json:"out_bytes"`                        // OutBytes counts payload bytes sent to every kind of connection.
	OutClientMsgs        int64                 `json:"out_client_msgs"`                  // OutClientMsgs counts messages sent to clients.
	OutClientBytes       int64                 `json:"out_client_bytes"`                 // OutClientBytes counts payload bytes sent to clients.
	SlowConsumers        int64                 `json:"slow_consumers"`                   // SlowConsumers counts connections closed as slow consumers.
	StaleConnections     int64                 `json:"stale_connections"`                // StaleConnections counts connections closed as stale.
	StalledClients       int64                 `json:"stalled_clients"`                  // StalledClients counts producer stalls.
	Subscriptions        uint32                `json:"subscriptions"`                    // Subscriptions is the number of subscriptions over all accounts.
	HTTPReqStats         map[string]uint64     `json:"http_req_stats"`                   // HTTPReqStats counts requests per monitoring path; the monitor sets it.
	ConfigLoadTime       time.Time             `json:"config_load_time"`                 // ConfigLoadTime is when the configuration was last loaded.
	ConfigDigest         string                `json:"config_digest"`                    // ConfigDigest is a hash of the configuration.
	Tags                 []string              `json:"tags,omitempty"`                   // Tags are the server's configured tags.
	Metadata             map[string]string     `json:"metadata,omitempty"`               // Metadata is the server's configured metadata.
	SystemAccount        string                `json:"system_account,omitempty"`         // SystemAccount names the system account, if any.
	SlowConsumersStats   *SlowConsumersStats   `json:"slow_consumer_stats"`              // SlowConsumersStats splits SlowConsumers by connection kind.
	StaleConnectionStats *StaleConnectionStats `json:"stale_connection_stats,omitempty"` // StaleConnectionStats splits StaleConnections by connection kind.
	TLSCertNotAfter      time.Time             `json:"tls_cert_not_after,omitzero"`      // TLSCertNotAfter is when the client TLS certificate expires.
	Clock                *ClockInfo            `json:"clock,omitempty"`                  // Clock is the wall clock's trust (leafbox extension); the monitor sets it.
	PublicKey            string                `json:"public_key,omitempty"`             // PublicKey is the gateway identity's NKey public key, stable across restarts unlike ID (leafbox extension).
	System               *SystemVarz           `json:"system,omitempty"`                 // System is the board's memory and disk headroom (leafbox extension); filled by the monitor when nil.
	Config               *ConfigVarz           `json:"config,omitempty"`                 // Config says which configuration is in force and where it came from (leafbox extension).
	Shed                 *ShedVarz             `json:"shed,omitempty"`                   // Shed is the shedding of new work under memory pressure (leafbox extension); absent without a memory limit.
}

// ConfigVarz is the config object of /varz (a leafbox extension): the
// configuration in force, its hash (also in config_digest) and its source,
// the configuration file or a fleet bundle, and the last fleet bundle's
// outcome.
type ConfigVarz struct {
	Hash        string          `json:"hash"`                   // Hash is "sha256:" and the hex SHA-256 of the YAML in force.
	Source      string          `json:"source"`                 // Source is "file", "default" (the built-in one) or "fleet".
	File        string          `json:"file,omitempty"`         // File is the configuration file, when there is one.
	FleetSerial uint64          `json:"fleet_serial,omitempty"` // FleetSerial is the serial of the fleet bundle in force.
	FleetSigner string          `json:"fleet_signer,omitempty"` // FleetSigner is the operator key that signed it.
	FleetTarget string          `json:"fleet_target,omitempty"` // FleetTarget is whom it was addressed to: "gateway N..." or "group NAME".
	Applied     time.Time       `json:"applied,omitzero"`       // Applied is when the configuration came into force.
	FleetLast   *FleetEventVarz `json:"fleet_last,omitempty"`   // FleetLast is what happened to the last fleet bundle received.
}

// FleetEventVarz is the outcome of one fleet bundle.
type FleetEventVarz struct {
	Serial uint64    `json:"serial,omitempty"` // Serial is the bundle's serial, 0 when it could not be read.
	Status string    `json:"status"`           // Status is "applied", "rejected" or "rolled_back".
	Error  string    `json:"error,omitempty"`  // Error says why it was rejected or rolled back.
	Time   time.Time `json:"time"`             // Time is when the outcome was decided.
}

// ClusterVarz is the cluster object of /varz.
type ClusterVarz struct {
	Name          string        `json:"name,omitempty"`           // Name is the cluster's name.
	Host          string        `json:"addr,omitempty"`           // Host is the route listener's host.
	Port          int           `json:"cluster_port,omitempty"`   // Port is the route listener's port.
	AuthTimeout   float64       `json:"auth_timeout,omitempty"`   // AuthTimeout is in seconds.
	URLs          []string      `json:"urls,omitempty"`           // URLs are the configured routes.
	TLSTimeout    float64       `json:"tls_timeout,omitempty"`    // TLSTimeout is in seconds.
	TLSRequired   bool          `json:"tls_required,omitempty"`   // TLSRequired reports TLS on routes.
	TLSVerify     bool          `json:"tls_verify,omitempty"`     // TLSVerify reports verified route certificates.
	PoolSize      int           `json:"pool_size,omitempty"`      // PoolSize is the route pool size.
	WriteDeadline time.Duration `json:"write_deadline,omitempty"` // WriteDeadline bounds one write to a route.
	WriteTimeout  string        `json:"write_timeout,omitempty"`  // WriteTimeout is the policy on a write deadline.
}

// GatewayVarz is the gateway object of /varz.
type GatewayVarz struct {
	Name           string              `json:"name,omitempty"`            // Name is this gateway's name.
	Host           string              `json:"host,omitempty"`            // Host is the gateway listener's host.
	Port           int                 `json:"port,omitempty"`            // Port is the gateway listener's port.
	AuthTimeout    float64             `json:"auth_timeout,omitempty"`    // AuthTimeout is in seconds.
	TLSTimeout     float64             `json:"tls_timeout,omitempty"`     // TLSTimeout is in seconds.
	TLSRequired    bool                `json:"tls_required,omitempty"`    // TLSRequired reports TLS on gateways.
	TLSVerify      bool                `json:"tls_verify,omitempty"`      // TLSVerify reports verified gateway certificates.
	Advertise      string              `json:"advertise,omitempty"`       // Advertise is the advertised gateway URL.
	ConnectRetries int                 `json:"connect_retries,omitempty"` // ConnectRetries bounds connection attempts.
	Gateways       []RemoteGatewayVarz `json:"gateways,omitempty"`        // Gateways are the configured remote gateways.
	RejectUnknown  bool                `json:"reject_unknown,omitempty"`  // RejectUnknown rejects unconfigured gateways.
}

// RemoteGatewayVarz is one configured remote gateway in /varz.
type RemoteGatewayVarz struct {
	Name       string   `json:"name"`                  // Name is the remote gateway's name.
	TLSTimeout float64  `json:"tls_timeout,omitempty"` // TLSTimeout is in seconds.
	URLs       []string `json:"urls,omitempty"`        // URLs are the remote's URLs.
}

// LeafNodeVarz is the leaf object of /varz: the leafnode listener, if any,
// and the configured remotes (the hubs this server connects to).
type LeafNodeVarz struct {
	Host          string           `json:"host,omitempty"`           // Host is the leafnode listener's host.
	Port          int              `json:"port,omitempty"`           // Port is the leafnode listener's port.
	AuthTimeout   float64          `json:"auth_timeout,omitempty"`   // AuthTimeout is in seconds.
	TLSTimeout    float64          `json:"tls_timeout,omitempty"`    // TLSTimeout is in seconds.
	TLSRequired   bool             `json:"tls_required,omitempty"`   // TLSRequired reports TLS on leafnode connections.
	TLSVerify     bool             `json:"tls_verify,omitempty"`     // TLSVerify reports verified leafnode certificates.
	Remotes       []RemoteLeafVarz `json:"remotes,omitempty"`        // Remotes are the configured remotes.
	WriteDeadline time.Duration    `json:"write_deadline,omitempty"` // WriteDeadline bounds one write to a leafnode.
	WriteTimeout  string           `json:"write_timeout,omitempty"`  // WriteTimeout is the policy on a write deadline.
}

// RemoteLeafVarz is one configured leafnode remote in /varz.
type RemoteLeafVarz struct {
	LocalAccount string     `json:"local_account,omitempty"` // LocalAccount is the local account bound to the link.
	TLSTimeout   float64    `json:"tls_timeout,omitempty"`   // TLSTimeout is in seconds.
	URLs         []string   `json:"urls,omitempty"`          // URLs are the remote's URLs, without credentials.
	Deny         *DenyRules `json:"deny,omitempty"`          // Deny lists subjects kept off the link.
}

// DenyRules lists subjects a leafnode remote may not import or export.
type DenyRules struct {
	Exports []string `json:"exports,omitempty"` // Exports are denied exports.
	Imports []string `json:"imports,omitempty"` // Imports are denied imports.
}

// MQTTVarz is the mqtt object of /varz.
type MQTTVarz struct {
	Host          string        `json:"host,omitempty"`            // Host is the MQTT listener's host.
	Port          int           `json:"port,omitempty"`            // Port is the MQTT listener's port.
	NoAuthUser    string        `json:"no_auth_user,omitempty"`    // NoAuthUser binds unauthenticated connections.
	AuthTimeout   float64       `json:"auth_timeout,omitempty"`    // AuthTimeout is in seconds.
	TLSMap        bool          `json:"tls_map,omitempty"`         // TLSMap maps certificates to users.
	TLSTimeout    float64       `json:"tls_timeout,omitempty"`     // TLSTimeout is in seconds.
	JsDomain      string        `json:"js_domain,omitempty"`       // JsDomain is the JetStream domain for MQTT state.
	AckWait       time.Duration `json:"ack_wait,omitempty"`        // AckWait is the redelivery wait.
	MaxAckPending uint16        `json:"max_ack_pending,omitempty"` // MaxAckPending bounds unacknowledged messages.
}

// WebsocketVarz is the websocket object of /varz.
type WebsocketVarz struct {
	Host             string        `json:"host,omitempty"`              // Host is the websocket listener's host.
	Port             int           `json:"port,omitempty"`              // Port is the websocket listener's port.
	Advertise        string        `json:"advertise,omitempty"`         // Advertise is the advertised URL.
	NoAuthUser       string        `json:"no_auth_user,omitempty"`      // NoAuthUser binds unauthenticated connections.
	JWTCookie        string        `json:"jwt_cookie,omitempty"`        // JWTCookie names the cookie carrying a JWT.
	HandshakeTimeout time.Duration `json:"handshake_timeout,omitempty"` // HandshakeTimeout bounds the upgrade.
	AuthTimeout      float64       `json:"auth_timeout,omitempty"`      // AuthTimeout is in seconds.
	NoTLS            bool          `json:"no_tls,omitempty"`            // NoTLS reports plaintext websockets.
	TLSMap           bool          `json:"tls_map,omitempty"`           // TLSMap maps certificates to users.
	SameOrigin       bool          `json:"same_origin,omitempty"`       // SameOrigin restricts the Origin header.
	AllowedOrigins   []string      `json:"allowed_origins,omitempty"`   // AllowedOrigins lists accepted origins.
	Compression      bool          `json:"compression,omitempty"`       // Compression reports permessage-deflate.
}

// JetStreamVarz is the jetstream object of /varz. Its members stay nil
// while JetStream is off.
type JetStreamVarz struct {
	Config *JetStreamConfig `json:"config,omitempty"` // Config is the active JetStream configuration.
	Stats  *JetStreamStats  `json:"stats,omitempty"`  // Stats are JetStream's usage statistics.
	Limits *JetStreamLimits `json:"limits,omitempty"` // Limits are the server-wide JetStream limits.
}

// JetStreamConfig is JetStream's configuration as /varz and /jsz report it.
type JetStreamConfig struct {
	MaxMemory    int64         `json:"max_memory"`              // MaxMemory bounds memory-backed streams, in bytes.
	MaxStore     int64         `json:"max_storage"`             // MaxStore bounds file-backed streams, in bytes.
	StoreDir     string        `json:"store_dir,omitempty"`     // StoreDir is where stream files live.
	SyncInterval time.Duration `json:"sync_interval,omitempty"` // SyncInterval is the background fsync period.
	SyncAlways   bool          `json:"sync_always,omitempty"`   // SyncAlways fsyncs every write.
	Domain       string        `json:"domain,omitempty"`        // Domain is the JetStream domain.
	CompressOK   bool          `json:"compress_ok,omitempty"`   // CompressOK reports compression support.
	UniqueTag    string        `json:"unique_tag,omitempty"`    // UniqueTag is the placement tag prefix.
	Strict       bool          `json:"strict,omitempty"`        // Strict reports strict API request parsing.
}

// JetStreamStats are JetStream's usage statistics.
type JetStreamStats struct {
	Memory         uint64            `json:"memory"`           // Memory is the memory used by streams, in bytes.
	Store          uint64            `json:"storage"`          // Store is the storage used by streams, in bytes.
	ReservedMemory uint64            `json:"reserved_memory"`  // ReservedMemory is memory reserved by stream limits.
	ReservedStore  uint64            `json:"reserved_storage"` // ReservedStore is storage reserved by stream limits.
	Accounts       int               `json:"accounts"`         // Accounts is the number of JetStream-enabled accounts.
	HAAssets       int               `json:"ha_assets"`        // HAAssets is the number of replicated assets.
	API            JetStreamAPIStats `json:"api"`              // API counts API requests.
}

// JetStreamAPIStats count JetStream API requests.
type JetStreamAPIStats struct {
	Level    int    `json:"level"`              // Level is the API level implemented.
	Total    uint64 `json:"total"`              // Total counts API requests since start.
	Errors   uint64 `json:"errors"`             // Errors counts API requests answered with an error.
	Inflight uint64 `json:"inflight,omitempty"` // Inflight is the number of requests being served.
}

// JetStreamLimits are the server-wide JetStream limits.
type JetStreamLimits struct {
	MaxRequestBatch           int           `json:"max_request_batch,omitempty"`             // MaxRequestBatch bounds a pull request's batch.
	MaxAckPending             int           `json:"max_ack_pending,omitempty"`               // MaxAckPending bounds a consumer's unacknowledged messages.
	MaxHAAssets               int           `json:"max_ha_assets,omitempty"`                 // MaxHAAssets bounds replicated assets.
	Duplicates                time.Duration `json:"max_duplicate_window,omitempty"`          // Duplicates bounds a stream's dedupe window.
	MaxBatchInflightPerStream int           `json:"max_batch_inflight_per_stream,omitempty"` // MaxBatchInflightPerStream bounds open batches per stream.
	MaxBatchInflightTotal     int           `json:"max_batch_inflight_total,omitempty"`      // MaxBatchInflightTotal bounds open batches overall.
	MaxBatchSize              int           `json:"max_batch_size,omitempty"`                // MaxBatchSize bounds an atomic batch publish.
	MaxBatchTimeout           time.Duration `json:"max_batch_timeout,omitempty"`             // MaxBatchTimeout bounds a batch's completion.
	DefaultMaxConsumers       int           `json:"default_max_consumers,omitempty"`         // DefaultMaxConsumers bounds consumers per stream.
}

// SlowConsumersStats split the slow-consumer count by connection kind.
type SlowConsumersStats struct {
	Clients  uint64 `json:"clients"`  // Clients counts slow client connections.
	Routes   uint64 `json:"routes"`   // Routes counts slow route connections.
	Gateways uint64 `json:"gateways"` // Gateways counts slow gateway connections.
	Leafs    uint64 `json:"leafs"`    // Leafs counts slow leafnode connections.
}

// StaleConnectionStats split the stale-connection count by connection kind.
type StaleConnectionStats struct {
	Clients  uint64 `json:"clients"`  // Clients counts stale client connections.
	Routes   uint64 `json:"routes"`   // Routes counts stale route connections.
	Gateways uint64 `json:"gateways"` // Gateways counts stale gateway connections.
	Leafs    uint64 `json:"leafs"`    // Leafs counts stale leafnode connections.
}

// completeVarz fills the fields the monitor owns: the snapshot time, the
// uptime, the request counters and, when the provider left them zero, the
// process statistics and the nested objects nats-server always sends.
func completeVarz(v *Varz, now time.Time, stats map[string]uint64, proc *processSampler) {
	v.Now = now.UTC()
	if !v.Start.IsZero() {
		v.Uptime = formatUptime(now.Sub(v.Start))
		v.Start = v.Start.UTC()
	} else {
		v.Uptime = formatUptime(0)
	}
	v.HTTPReqStats = stats
	proc.fill(v, now)
	if v.System == nil {
		var storeDir string
		if c := v.JetStream.Config; c != nil {
			storeDir = c.StoreDir
		}
		v.System = systemVarz(storeDir)
	}
	if v.SlowConsumersStats == nil {
		v.SlowConsumersStats = &SlowConsumersStats{}
	}
	if v.StaleConnectionStats == nil {
		v.StaleConnectionStats = &StaleConnectionStats{}
	}
}

// formatUptime formats d the way nats-server reports uptime and idle time:
// whole seconds only, in the largest units needed, with years of 365 days:
// "5s", "3m5s", "1h2m3s", "2d1h0m0s", "1y3d0h0m0s". Negative durations are
// reported as "0s".
func formatUptime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	secs := int64(d / time.Second)
	units := [...]struct {
		n      int64
		suffix byte
	}{
		{secs / (365 * 86400), 'y'},
		{secs / 86400 % 365, 'd'},
		{secs / 3600 % 24, 'h'},
		{secs / 60 % 60, 'm'},
		{secs % 60, 's'},
	}
	b := make([]byte, 0, 24)
	started := false
	for i, u := range units {
		// Units above the largest non-zero one are left out; the
		// seconds are always written.
		if !started && u.n == 0 && i < len(units)-1 {
			continue
		}
		started = true
		b = strconv.AppendInt(b, u.n, 10)
		b = append(b, u.suffix)
	}
	return string(b)
}
