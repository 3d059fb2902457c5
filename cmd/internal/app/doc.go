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
// # Leafnode links
//
// Each leafnodes.remotes entry becomes one leaf.Link, built by Build and
// bound to the broker through linkLocal, this package's leaf.Local over
// *server.Server. Start starts the links after the broker (they connect
// in the background); Shutdown and LameDuck close them first, so the hubs
// drop the gateway's interest before its clients go. The monitor sees the
// links and JetStream through appMonitor, which wraps the broker's
// monitor.Provider.
//
// # Downlinks
//
// Each downlinks entry becomes one leaf/downlink.Downlink over the link of
// the first remote (downlinks.go): an in-process connection subscribes
// its inbox, linkHub publishes its requests and acks toward the hub, and
// localDelivery publishes its messages locally, waiting for a local
// stream's PubAck when one captures the subject. Start starts them before
// the links, so the inbox interest goes out with the first connection;
// Shutdown and LameDuck stop them first, while the link can still carry
// their last acks.
package app
