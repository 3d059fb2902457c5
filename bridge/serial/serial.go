package serial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/serial/frame"
	goserial "go.bug.st/serial"
)

// ErrVanished is returned by Run when the port's path no longer exists.
var ErrVanished = errors.New("serial: device vanished")

// Bridge is a serial bridge; build it with New.
type Bridge struct {
	cfg Config
}

// New checks cfg and returns the bridge; it opens nothing.
func New(cfg Config) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Bridge{cfg: cfg.withDefaults()}, nil
}

// command is one message to write, with its reply subject.
type command struct {
	data  []byte
	reply string
}

// Run implements bridge.Bridge.
func (b *Bridge) Run(ctx context.Context, env bridge.Env) error {
	cfg := b.cfg
	st, log := env.Status, env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reader, err := cfg.Framing.NewFramer()
	if err != nil {
		return err
	}
	writer, _ := cfg.Framing.NewFramer()

	cmds := make(chan command, cfg.QueueLen)
	var accepting atomic.Bool
	if cfg.CommandSubject != "" && cfg.CommandStream == "" {
		unsub, err := env.Bus.Subscribe(cfg.CommandSubject, cfg.CommandQueue, func(m bridge.Msg) {
			c := command{data: append([]byte(nil), m.Data...), reply: string(m.Reply)}
			if !accepting.Load() {
				st.CountDrop(bridge.DropNotConnected)
				answer(env.Bus, c.reply, bridge.ErrNotConnected)
				return
			}
			select {
			case cmds <- c:
			default:
				st.CountDrop(bridge.DropQueueFull)
				answer(env.Bus, c.reply, errors.New("serial: command queue full"))
			}
		})
		if err != nil {
			return fmt.Errorf("serial: subscribing to %q: %w", cfg.CommandSubject, err)
		}
		defer unsub()
	}

	port, real, err := b.open()
	if err != nil {
		return err
	}
	log.Info("serial port open", "path", cfg.Port.Path, "device", real)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cons *bridge.Consumer
	if cfg.CommandStream != "" {
		var filter []string
		if cfg.CommandSubject != "" {
			filter = []string{cfg.CommandSubject}
		}
		cons, err = bridge.Consume(runCtx, env.Bus, bridge.ConsumerConfig{Stream: cfg.CommandStream,
			Durable: cfg.CommandDurable, FilterSubjects: filter})
		if err != nil {
			port.Close()
			return fmt.Errorf("serial: command stream %s: %w", cfg.CommandStream, err)
		}
		defer cons.Close()
	}
	var wg sync.WaitGroup
	writeErr := make(chan error, 1)
	wg.Go(func() { // closer: unblocks the read when Run ends
		<-runCtx.Done()
		accepting.Store(false)
		port.Close()
	})
	wg.Go(func() {
		var err error
		if cons != nil {
			err = b.streamLoop(runCtx, env, port, writer, cons)
		} else {
			err = b.writeLoop(runCtx, env, port, writer, cmds)
		}
		if err != nil {
			writeErr <- err
			cancel()
		}
	})
	accepting.Store(true)
	st.SetState(bridge.StateConnected)

	err = b.readLoop(runCtx, env, log, port, reader)
	cancel()
	wg.Wait()
	select {
	case werr := <-writeErr:
		err = werr
	default:
	}
	// Commands queued for this port are not written to the next one.
	for len(cmds) > 0 {
		c := <-cmds
		st.CountDrop(bridge.DropNotConnected)
		answer(env.Bus, c.reply, bridge.ErrNotConnected)
	}
	if ctx.Err() != nil {
		return nil
	}
	log.Warn("serial port lost", "path", cfg.Port.Path, "err", err)
	return err
}

// open resolves the path and opens the port.
func (b *Bridge) open() (goserial.Port, string, error) {
	p := b.cfg.Port
	real, err := filepath.EvalSymlinks(p.Path)
	if err != nil {
		return nil, "", fmt.Errorf("serial: %s: %w", p.Path, err)
	}
	mode, err := p.mode()
	if err != nil {
		return nil, "", err
	}
	port, err := goserial.Open(real, mode)
	if err != nil {
		return nil, "", fmt.Errorf("serial: opening %s (%s): %w", p.Path, real, err)
	}
	if err := port.SetReadTimeout(p.ReadTimeout); err != nil {
		port.Close()
		return nil, "", fmt.Errorf("serial: %s: setting the read timeout: %w", p.Path, err)
	}
	return port, real, nil
}

// readLoop reads and publishes frames until the port fails or ctx ends.
func (b *Bridge) readLoop(ctx context.Context, env bridge.Env, log *slog.Logger, port goserial.Port, fr frame.Framer) error {
	cfg := b.cfg
	st := env.Status
	bad := rateLog{every: cfg.LogInterval}
	buf := make([]byte, 4096)
	for {
		n, err := port.Read(buf)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("serial: reading %s: %w", cfg.Port.Path, err)
		}
		if n == 0 {
			// A read timeout: is the device still there?
			if _, err := os.Stat(cfg.Port.Path); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrVanished, cfg.Port.Path, err)
			}
			continue
		}
		fr.Feed(buf[:n])
		for {
			f, ok, err := fr.Next()
			if err != nil {
				st.CountBadFrame()
				if n, ok := bad.allow(time.Now()); ok {
					log.Warn("bad frame from serial device", "path", cfg.Port.Path, "err", err, "suppressed", n)
				}
				continue
			}
			if !ok {
				break
			}
			b.deliver(ctx, env, log, cfg.Subject, f.Data)
			if f.Fix != nil && cfg.FixSubject != "" {
				b.deliver(ctx, env, log, cfg.FixSubject, f.Fix)
			}
		}
	}
}

// deliver publishes one inbound message, core or into a stream.
func (b *Bridge) deliver(ctx context.Context, env bridge.Env, log *slog.Logger, subject string, data []byte) {
	var err error
	if b.cfg.Store {
		sctx, cancel := context.WithTimeout(ctx, b.cfg.StoreWait)
		_, _, err = bridge.Store(sctx, env.Bus, subject, nil, data)
		cancel()
	} else {
		err = env.Bus.Publish(subject, "", nil, data)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		env.Status.CountDrop(bridge.DropRejected)
		env.Status.SetError(err)
		log.Warn("serial frame not delivered", "subject", subject, "err", err)
		return
	}
	env.Status.CountIn(1)
}

// writeLoop writes queued commands until ctx ends or a write fails.
func (b *Bridge) writeLoop(ctx context.Context, env bridge.Env, port goserial.Port, fr frame.Framer, cmds <-chan command) error {
	var out []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-cmds:
			var err error
			out, err = fr.Encode(out[:0], c.data)
			if err != nil {
				env.Status.CountDrop(bridge.DropRejected)
				answer(env.Bus, c.reply, err)
				continue
			}
			if _, err := port.Write(out); err != nil {
				answer(env.Bus, c.reply, err)
				env.Status.CountDrop(bridge.DropNotConnected)
				return fmt.Errorf("serial: writing %s: %w", b.cfg.Port.Path, err)
			}
			env.Status.CountOut(1)
			answer(env.Bus, c.reply, nil)
		}
	}
}

// streamLoop writes the commands of a durable consumer, each acknowledged
// once written, until ctx ends or a write fails (the delivery is then
// left unacknowledged, and comes again).
func (b *Bridge) streamLoop(ctx context.Context, env bridge.Env, port goserial.Port, fr frame.Framer, cons *bridge.Consumer) error {
	var out []byte
	for {
		d, err := cons.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("serial: command stream: %w", err)
		}
		out, err = fr.Encode(out[:0], d.Data)
		if err != nil {
			// It can never be sent: drop it rather than block the stream.
			env.Status.CountDrop(bridge.DropRejected)
			env.Status.SetError(fmt.Errorf("serial: command %d of %s cannot be framed: %w", d.Sequence, d.Stream, err))
			_ = d.Term()
			continue
		}
		if _, err := port.Write(out); err != nil {
			return fmt.Errorf("serial: writing %s: %w", b.cfg.Port.Path, err)
		}
		if err := d.Ack(); err != nil {
			return fmt.Errorf("serial: acknowledging command %d of %s: %w", d.Sequence, d.Stream, err)
		}
		env.Status.CountOut(1)
	}
}

// answer replies to a command's requester, if it asked.
func answer(bus bridge.Bus, reply string, err error) {
	if reply == "" {
		return
	}
	if err != nil {
		msg, _ := json.Marshal(struct {
			Error string `json:"error"`
		}{err.Error()})
		bus.Publish(reply, "", nil, msg)
		return
	}
	bus.Publish(reply, "", nil, []byte(`{"ok":true}`))
}

// rateLog allows one log per interval and counts the ones it held back.
type rateLog struct {
	every      time.Duration
	last       time.Time
	suppressed int
}

// allow says whether to log now, and how many were held back since the
// last log.
func (r *rateLog) allow(now time.Time) (int, bool) {
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		return 0, false
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return n, true
}
