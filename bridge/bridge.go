package bridge

import (
	"context"
	"errors"
	"log/slog"
)

// Msg is a message as a bridge sees it. In a handler its slices are
// borrowed: valid only while the handler runs, read-only; copy what must
// be kept.
type Msg struct {
	// Subject is the message's subject.
	Subject []byte
	// Reply is its reply subject; nil when there is none.
	Reply []byte
	// Header is a NATS header block ("NATS/1.0\r\n...\r\n\r\n", edited
	// with core/proto's header functions); nil when there is none.
	Header []byte
	// Data is the payload.
	Data []byte
}

// Bus is what a bridge needs of the broker: the in-process client of one
// account. Its methods are safe for concurrent use.
type Bus interface {
	// Publish publishes a core message. It does not retain its
	// arguments. An error means the message was not accepted (the bus
	// is closed, the subject is invalid or not permitted).
	Publish(subject, reply string, hdr, data []byte) error
	// Subscribe delivers the messages on subject (a pattern, with an
	// optional queue group) to h, on the publisher's goroutine: h must
	// not block for long. The returned function unsubscribes.
	Subscribe(subject, queue string, h func(Msg)) (unsubscribe func(), err error)
	// Request publishes data on subject with a new reply inbox and
	// returns the first reply, or ctx's error. The reply's slices are
	// the caller's to keep.
	Request(ctx context.Context, subject string, hdr, data []byte) (Msg, error)
}

// Bridge is one configured bridge.
type Bridge interface {
	// Run connects to the device side and moves messages until ctx ends
	// (then it returns nil after a clean stop) or the device side fails
	// (then it returns the error; the Runner reconnects after a
	// backoff). It reports through env.Status.
	Run(ctx context.Context, env Env) error
}

// Env is what a Runner gives a bridge's Run.
type Env struct {
	// Bus reaches the broker.
	Bus Bus
	// Status receives the bridge's state and counters.
	Status *Status
	// Logger logs with the bridge's kind and name attached.
	Logger *slog.Logger
}

// ErrNotConnected is returned by a bridge's outbound path while its
// device side is down; the message stays where it was (a stream) or is
// counted as dropped (a core subscription).
var ErrNotConnected = errors.New("bridge: device not connected")

// Spec is one bridge of a configuration, as a Registry runs it.
type Spec struct {
	// Kind ("mqtt", "serial", "modbus") and Name (unique within its
	// kind) identify the bridge across reloads.
	Kind, Name string
	// Account is the account whose in-process client is the bridge's
	// Bus; "" is the global account.
	Account string
	// Config is the bridge's configuration, compared with
	// reflect.DeepEqual on reload: a bridge whose Config changed is
	// restarted, the others keep running untouched.
	Config any
	// New builds the bridge from Config; it opens nothing (Run does).
	New func() (Bridge, error)
}
