// Package app is leafbox's composition root: it reads the YAML
// configuration, turns it into the options of each subsystem and owns the
// running pieces (the broker, the JetStream engine, the leafnode links to
// hubs and the monitoring HTTP server).
//
// # Configuration
//
// The file is YAML with keys named like nats-server's own options (listen,
// port, http_port, authorization, accounts, tls, jetstream, leafnodes), so
// NATS documentation maps across. Unknown keys are errors. A configuration
// goes through four steps, each explicit:
//
//	cfg, err := app.Load(path)          // or app.Default() or app.Parse(data)
//	err = overrides.Apply(cfg)          // command-line flags win over the file
//	cfg.SetDefaults(app.OSEnv())        // fill defaults; env only through Env
//	err = cfg.Validate()                // *ConfigError with line numbers
//
// Sizes (max_payload, max_pending, ...) are integers or strings with a unit,
// as in nats-server: K, M, G, T are powers of 1000 and KB, KiB, MB, MiB, GB,
// GiB, TB, TiB are powers of 1024 ("1MB" is 1048576 bytes, as in
// nats-server). Durations are Go duration strings ("10s", "2m", "1h30m") or
// plain numbers of seconds. Relative file paths (tls.cert_file, store_dir,
// ...) are relative to the directory of the configuration file.
//
// Errors about the file are *ConfigError values listing every problem found,
// each with its line and the key's path, like
// "gateway.yaml:12: tls.cert_file: open certs/x.pem: no such file or directory".
//
// Error messages of this package carry no package prefix: they are shown to
// users by the command line, which prefixes the program's name.
//
// # The leaf runtime
//
// The leafnode remotes, uplinks, downlinks, the leaf listener and the
// clock's trust are leaf/node's: Build turns their sections into a
// node.Config (node.go) and builds a node.Node over broker, this
// package's node.Broker over *server.Server (broker.go), and the JetStream
// engine as its node.Streams. Start starts the node after the broker and
// JetStream (uplinks and downlinks, then the links, then the listener);
// Shutdown and LameDuck detach it first (downlinks, then the links and the
// listener, so the hubs drop the gateway's interest before its clients
// go) and close it after the broker is down (the uplinks' outboxes). The
// monitor sees the node and JetStream through appMonitor, which wraps the
// broker's monitor.Provider.
package app
