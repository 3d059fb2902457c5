// Package app is leafbox's composition root: it turns the configuration
// (cmd/internal/config) into the options of each subsystem and owns the
// running pieces (the broker, the JetStream engine, the leafnode links to
// hubs and the monitoring HTTP server).
//
// Build follows the configuration once, top to bottom: Preflight, the
// store directory, the identity, the broker's options (serverOptions), the
// links (config.Config.LeafConfig per remote), the clock, the leafnode
// listener (leafAcceptConfig) and the JetStream engine. Start then starts
// them in order, and the uplinks (outboxConfig) and downlinks with them.
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
