// Package storedir owns leafbox's store directory: its layout, its
// exclusive lock and the migration of older layouts.
//
// # Layout
//
//	<root>/LOCK                          exclusive lock (flock) of the running leafbox; holds its pid
//	<root>/streams/<stream>/             JetStream file streams with their consumers
//	<root>/outbox/<uplink>/              each uplink's outbox
//	<root>/deadletter/<uplink>/          each uplink's dead-lettered messages
//	<root>/state/                        small state files:
//	<root>/state/clock.json              the clock's last known-good time
//	<root>/state/scheduler.state.json    the uplinks' shared daily usage
//	<root>/state/uplink-<uplink>.state.json  an outbox's last hub sequences
//
// Each kind has its own subtree, so no name of one kind can collide with
// a name of another: a stream named "outbox" lives in streams/outbox/,
// apart from the uplink outboxes. Names are checked by jsapi.ValidName
// before they become path elements. Files are created 0640, directories
// 0750 and secrets 0600 (store/vfs PermFile, PermDir, PermSecret); Open
// also takes group-write and every other-user bit off the subtree
// directories an older leafbox created 0755.
//
// # Lock
//
// Open takes an exclusive, non-blocking flock on <root>/LOCK and writes
// the process id into it; Close releases it. A second Open of the same
// directory, from another process or the same one, fails with an
// *InUseError that names the directory and the holder's pid. The kernel
// drops the lock when the holder dies, even by kill -9, so a stale LOCK
// file never blocks a start. Systems without flock (not unix) take no
// lock.
//
// # Migration
//
// Before subtrees, every stream lived in <root>/<stream>/, and the state
// files in <root>/clock.json and <root>/outbox/. Open, holding the lock,
// moves them into the layout above. An old stream directory is recognised
// by its meta.json. A stream named "outbox" (or "streams") occupied the
// root of another subtree: its entries (msgs/, obs/, then meta.json last)
// move into streams/.<name>.migrating/, which is then renamed to
// streams/<name>. Every step is a rename, and the OS file system fsyncs
// the directories involved (store/vfs), so after a crash the next Open
// finds each entry either at its old place or at its new one and finishes
// the work; running it again on a migrated store changes nothing.
package storedir
