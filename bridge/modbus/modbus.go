package modbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/leafbox/leafbox/bridge"
	mb "github.com/simonvetter/modbus"
)

// maxTimeouts is how many requests in a row may go unanswered before Run
// gives the bus up (a TCP peer gone silent, an RTU adapter dead) so that
// the Runner reopens it.
const maxTimeouts = 5

// ErrNoResponse is returned by Run after maxTimeouts unanswered requests
// in a row.
var ErrNoResponse = errors.New("modbus: no response from the bus")

// ErrVanished is returned by Run when the RTU line's path is gone.
var ErrVanished = errors.New("modbus: serial device vanished")

// Bridge is a Modbus bridge; build it with New.
type Bridge struct {
	cfg     Config
	devices []*device
}

// device is one device's plan and state. last and have are the poll
// loop's alone; stats are read by Devices from any goroutine.
type device struct {
	Device
	blocks []block
	last   []Value
	have   []bool
	stats  DeviceStats
}

// New checks cfg and returns the bridge; it opens nothing.
func New(cfg Config) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bridge{cfg: cfg}
	for _, d := range cfg.Devices {
		b.devices = append(b.devices, &device{Device: d, blocks: plan(d.Registers),
			last: make([]Value, len(d.Registers)), have: make([]bool, len(d.Registers))})
	}
	return b, nil
}

// Devices returns each device's counters, in configuration order.
func (b *Bridge) Devices() []DeviceSnapshot {
	out := make([]DeviceSnapshot, len(b.devices))
	for i, d := range b.devices {
		out[i] = d.stats.snapshot(d.Name, d.Unit)
	}
	return out
}

// DeviceStatuses implements bridge.DeviceLister: Devices, for /bridgez.
func (b *Bridge) DeviceStatuses() []bridge.DeviceStatus {
	snaps := b.Devices()
	out := make([]bridge.DeviceStatus, len(snaps))
	for i, s := range snaps {
		out[i] = bridge.DeviceStatus{Name: s.Name, State: s.State, Polls: s.Polls, MissedPolls: s.MissedPolls, Timeouts: s.Timeouts,
			Exceptions: s.Exceptions, BadFrames: s.BadFrames, Writes: s.Writes,
			LastError: s.LastError, LastErrorAt: s.LastErrorAt, LastException: s.LastException}
	}
	return out
}

// writeReq is a write request waiting for the poll loop: from a core
// subscription (reply is the requester's inbox, if any) or from a durable
// consumer (delivery is settled once the write is done).
type writeReq struct {
	dev      *device
	data     []byte
	reply    string
	delivery *bridge.Delivery
}

// Run implements bridge.Bridge.
func (b *Bridge) Run(ctx context.Context, env bridge.Env) error {
	st, logger := env.Status, env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client, where, err := b.open(logger)
	if err != nil {
		return err
	}
	defer client.Close()
	logger.Info("modbus bus open", "at", where)

	writes := make(chan writeReq, b.cfg.QueueLen)
	var accepting atomic.Bool
	accepting.Store(true)
	defer accepting.Store(false)
	runCtx, cancel := context.WithCancel(ctx)
	var feeders sync.WaitGroup
	feedErr := make(chan error, len(b.devices))
	var consumers []*bridge.Consumer
	defer func() {
		cancel() // each feeder ends with runCtx
		feeders.Wait()
		for _, c := range consumers {
			c.Close()
		}
	}()
	for _, d := range b.devices {
		if d.CommandStream != "" {
			var filter []string
			if d.CommandSubject != "" {
				filter = []string{d.CommandSubject}
			}
			cons, err := bridge.Consume(runCtx, env.Bus, bridge.ConsumerConfig{Stream: d.CommandStream,
				Durable: d.CommandDurable, FilterSubjects: filter})
			if err != nil {
				return fmt.Errorf("modbus: device %s: command stream %s: %w", d.Name, d.CommandStream, err)
			}
			consumers = append(consumers, cons)
			feeders.Go(func() {
				if err := feed(runCtx, d, cons, writes); err != nil {
					feedErr <- err
					cancel() // the next Run creates the consumer again
				}
			})
			continue
		}
		if d.CommandSubject == "" {
			continue
		}
		unsub, err := env.Bus.Subscribe(d.CommandSubject, "", func(m bridge.Msg) {
			w := writeReq{dev: d, data: bytes.Clone(m.Data), reply: string(m.Reply)}
			if !accepting.Load() {
				st.CountDrop(bridge.DropNotConnected)
				reply(env.Bus, w.reply, writeResult{Error: bridge.ErrNotConnected.Error()})
				return
			}
			select {
			case writes <- w:
			default:
				st.CountDrop(bridge.DropQueueFull)
				reply(env.Bus, w.reply, writeResult{Error: "modbus: write queue full"})
			}
		})
		if err != nil {
			return fmt.Errorf("modbus: subscribing to %q: %w", d.CommandSubject, err)
		}
		defer unsub()
	}
	st.SetState(bridge.StateConnected)

	p := &poller{b: b, env: env, log: logger, client: client, ctx: runCtx}
	err = p.loop(writes)
	accepting.Store(false)
	cancel()
	feeders.Wait()
	select {
	case ferr := <-feedErr: // the loop ended because a consumer failed
		if err == nil {
			err = ferr
		}
	default:
	}
	for len(writes) > 0 {
		w := <-writes
		if w.delivery != nil { // the stream sends it again
			_ = w.delivery.Nak(0)
			continue
		}
		st.CountDrop(bridge.DropNotConnected)
		reply(env.Bus, w.reply, writeResult{Error: bridge.ErrNotConnected.Error()})
	}
	if ctx.Err() != nil {
		return nil
	}
	logger.Warn("modbus bus lost", "at", where, "err", err)
	return err
}

// feed hands the deliveries of a device's command consumer to the poll
// loop, one at a time (the consumer's MaxAckPending is 1), until ctx
// ends (nil) or the consumer fails (its error: Run returns it, and the
// next Run creates the consumer again).
func feed(ctx context.Context, d *device, cons *bridge.Consumer, writes chan<- writeReq) error {
	for {
		del, err := cons.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("modbus: device %s: command stream %s: %w", d.Name, d.CommandStream, err)
		}
		select {
		case writes <- writeReq{dev: d, data: del.Data, delivery: del}:
		case <-ctx.Done():
			_ = del.Nak(0)
			return nil
		}
	}
}

// open makes and opens the client.
func (b *Bridge) open(logger *slog.Logger) (*mb.ModbusClient, string, error) {
	cfg := b.cfg
	conf := &mb.ClientConfiguration{Timeout: cfg.Timeout, Logger: log.New(logWriter{logger}, "", 0)}
	where := cfg.TCP
	if cfg.TCP != "" {
		conf.URL = "tcp://" + cfg.TCP
	} else {
		real, err := filepath.EvalSymlinks(cfg.RTU.Path)
		if err != nil {
			return nil, "", fmt.Errorf("modbus: %s: %w", cfg.RTU.Path, err)
		}
		where = real
		conf.URL = "rtu://" + real
		conf.Speed = uint(cfg.RTU.Baud)
		conf.DataBits = uint(cfg.RTU.DataBits)
		conf.StopBits = uint(cfg.RTU.StopBits)
		switch cfg.RTU.Parity {
		case "even":
			conf.Parity = mb.PARITY_EVEN
		case "odd":
			conf.Parity = mb.PARITY_ODD
		default:
			conf.Parity = mb.PARITY_NONE
		}
	}
	client, err := mb.NewClient(conf)
	if err != nil {
		return nil, "", fmt.Errorf("modbus: %s: %w", where, err)
	}
	if err := client.Open(); err != nil {
		return nil, "", fmt.Errorf("modbus: opening %s: %w", where, err)
	}
	return client, where, nil
}

// logWriter sends the Modbus library's log lines to slog at debug level.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Debug(string(bytes.TrimSpace(p)), "from", "modbus")
	return len(p), nil
}

// errKind is how the poll loop treats a request's error.
type errKind int

const (
	errNone errKind = iota
	errException
	errTimeout
	errBadFrame
	errFatal
)

// classify sorts a request's error: an exception from the device, a
// timeout, a bad frame (CRC, length, ids), or a failure of the bus itself.
func classify(err error) errKind {
	var ne net.Error
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, mb.ErrRequestTimedOut), errors.As(err, &ne) && ne.Timeout():
		return errTimeout
	case errors.Is(err, mb.ErrBadCRC), errors.Is(err, mb.ErrShortFrame), errors.Is(err, mb.ErrProtocolError),
		errors.Is(err, mb.ErrBadUnitId), errors.Is(err, mb.ErrBadTransactionId),
		errors.Is(err, mb.ErrUnknownProtocolId), errors.Is(err, mb.ErrUnexpectedParameters):
		return errBadFrame
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errFatal
	}
	if exceptionName(err) != "" {
		return errException
	}
	return errFatal
}

// exceptionName is the name of a Modbus exception error, "" for others.
func exceptionName(err error) string {
	for _, e := range []mb.Error{mb.ErrIllegalFunction, mb.ErrIllegalDataAddress, mb.ErrIllegalDataValue,
		mb.ErrServerDeviceFailure, mb.ErrAcknowledge, mb.ErrServerDeviceBusy, mb.ErrMemoryParityError,
		mb.ErrGWPathUnavailable, mb.ErrGWTargetFailedToRespond} {
		if errors.Is(err, e) {
			return string(e)
		}
	}
	return ""
}

// vanished reports whether the RTU line's path is gone.
func (b *Bridge) vanished() error {
	if b.cfg.TCP != "" {
		return nil
	}
	if _, err := os.Stat(b.cfg.RTU.Path); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrVanished, b.cfg.RTU.Path, err)
	}
	return nil
}
