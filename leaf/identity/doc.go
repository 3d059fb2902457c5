// Package identity is a gateway's stable identity: an NKey server key pair
// generated at the gateway's first start and kept in its store directory,
// so that the gateway is the same gateway after every restart.
//
// The public key (56 characters starting with 'N') names the gateway in
// /varz and the logs; ServerName derives a short default server_name from
// it, which prefixes the uplinks' Nats-Msg-Id and names the downlinks'
// durable consumers on the hub. A gateway whose name changed on every
// start would send its re-sent messages under new ids after a crash, and
// the hub would store them twice.
//
// # On disk
//
// The seed is one line of text, the standard NKey seed encoding ("SN..."),
// in a file of mode 0600 in a directory created 0750. It is written once,
// to <file>.tmp, synced, and renamed over the file (the directory is
// synced after the rename), so a crash leaves either no identity or a
// whole one. A file that exists but does not hold a server seed is
// refused with an error naming the file: the gateway would otherwise get
// a new identity silently, and every hub would see a new gateway. Remove
// the file to generate a new identity on purpose.
//
// The seed is never logged and not kept in memory after Open: only the
// public key is.
package identity
