// Package app is leafbox's composition root: it turns the configuration
// (cmd/internal/config) into the options of each subsystem and owns the
// running pieces (the broker, the JetStream engine, the leafnode links to
// hubs and the monitoring HTTP server).
//
// Build follows the configuration once, top to bottom: Preflight, the
// store directory, the identity, the broker's options, the links, the
// clock, the leafnode listener and the JetStream engine; Start then starts
// them in order, with the uplinks and downlinks. options.go holds the
// mappings from configuration sections to subsystem configurations
// (serverOptions, jetStreamConfig, leafAcceptConfig, outboxConfig); a
// remote's link configuration is config.Config.LeafConfig, because
// validation checks it with leaf.Config.Validate.
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
//
// # Bridges
//
// The bridges (bridges.go) run in one bridge.Registry. Each kind's file,
// bridge_<kind>.go, turns its entries of the bridges block into
// bridge.Specs; Build checks they can be made, Start applies them after
// the node (JetStream's streams and the uplinks' captures are in place),
// Reload applies the new ones (the registry restarts only what changed),
// and Shutdown and LameDuck close the registry first, while the broker
// and JetStream still serve the bridges' last acks. Each bridge gets its
// own in-process client without echo (bridgeConnector, bridgeBus);
// appMonitor reports the registry in /bridgez and /metrics.
//
// # Fleet configuration
//
// With a fleet block, a fleetAgent (fleet.go) subscribes the gateway's
// and its groups' bundle subjects through an in-process client, so the
// leafnode links carry the interest to the hubs. It takes one bundle at a
// time on a goroutine of its own: cmd/internal/fleet checks the signature,
// the agent checks target and serial, stages the bundle in the store's
// state/fleet, builds its configuration as the file's was built
// (Flags.Prepare), applies it with the reload path, waits for the health
// check and reloads the previous configuration when it fails, and answers
// the sender. Build starts on the applied bundle (fleetStartConfig);
// Reload, given the file's configuration, keeps the bundle in force.
// /varz config reports the configuration in force and its source.
package app
