package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"
)

// telemetryDevices is how many devices the published telemetry comes
// from; each has its own subject, telemetry.site1.dev<NNN>.
const telemetryDevices = 100

// telemetryWindow is how many messages the publisher sends before it
// waits for the PONG to a PING. It keeps the messages in flight bounded,
// so that no server buffers more than this for the publisher; leafbox
// answers the PING only once the captured messages are in its outbox.
const telemetryWindow = 1000

// telemetrySubject returns the subject message i is published on.
func telemetrySubject(i int) string {
	return fmt.Sprintf("telemetry.site1.dev%03d", i%telemetryDevices)
}

// telemetryPayload appends message i's payload to dst: a JSON object of
// exactly size bytes, shaped like a sensor reading (device, sequence,
// timestamp in milliseconds, temperature, humidity, battery, status) and
// padded with a "pad" field of spaces. The readings come from rnd, so the
// payload compresses like real telemetry, not like a block of zeros.
// size must be at least telemetryMinSize.
func telemetryPayload(dst []byte, i, size int, ts time.Time, rnd *rand.Rand) []byte {
	start := len(dst)
	dst = append(dst, `{"dev":"dev`...)
	dst = appendPadded(dst, i%telemetryDevices, 3)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, ts.UnixMilli(), 10)
	dst = append(dst, `,"temp":`...)
	dst = strconv.AppendFloat(dst, 15+10*rnd.Float64(), 'f', 2, 64)
	dst = append(dst, `,"rh":`...)
	dst = strconv.AppendFloat(dst, 30+40*rnd.Float64(), 'f', 1, 64)
	dst = append(dst, `,"batt":`...)
	dst = strconv.AppendFloat(dst, 3.3+0.9*rnd.Float64(), 'f', 2, 64)
	dst = append(dst, `,"st":"ok","pad":"`...)
	for len(dst)-start < size-2 {
		dst = append(dst, ' ')
	}
	return append(dst, `"}`...)
}

// telemetryMinSize is the smallest size telemetryPayload keeps to: the
// longest reading without padding (a nine-digit sequence number).
const telemetryMinSize = 128

// appendPadded appends n in decimal with leading zeros to width digits.
func appendPadded(dst []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for range width - len(s) {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// publishTelemetry connects to the NATS client port at addr and publishes
// n telemetry messages of size bytes (see telemetryPayload), waiting for a
// PONG after every telemetryWindow messages and after the last. It
// returns once the server has answered the final PING, or with the first
// error, an -ERR from the server included.
func publishTelemetry(ctx context.Context, addr string, n, size int, timeout time.Duration) error {
	if size < telemetryMinSize {
		return fmt.Errorf("benchcmp: telemetry payload of %d B: need at least %d", size, telemetryMinSize)
	}
	d := net.Dialer{Timeout: startTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("benchcmp: telemetry publisher: %w", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("benchcmp: telemetry publisher: no INFO from %s (%q, %v)", addr, strings.TrimSpace(line), err)
	}
	w := bufio.NewWriterSize(conn, 64<<10)
	if _, err := w.WriteString(connectLine); err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(1, 2)) // the same readings in every run
	var payload, line []byte
	for i := range n {
		payload = telemetryPayload(payload[:0], i, size, time.Now(), rnd)
		line = append(line[:0], "PUB "...)
		line = append(line, telemetrySubject(i)...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(len(payload)), 10)
		line = append(line, "\r\n"...)
		line = append(line, payload...)
		line = append(line, "\r\n"...)
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("benchcmp: telemetry publisher: %w", err)
		}
		if (i+1)%telemetryWindow == 0 || i == n-1 {
			if err := pingPong(w, r); err != nil {
				return fmt.Errorf("benchcmp: telemetry publisher, after %d messages: %w", i+1, err)
			}
		}
	}
	return nil
}

// pingPong sends PING through w and reads from r until the PONG, failing
// on -ERR. It answers the server's own PINGs.
func pingPong(w *bufio.Writer, r *bufio.Reader) error {
	if _, err := w.WriteString("PING\r\n"); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		switch op := strings.TrimSpace(line); {
		case op == "PONG":
			return nil
		case op == "PING":
			if _, err := w.WriteString("PONG\r\n"); err != nil {
				return err
			}
		case strings.HasPrefix(op, "-ERR"):
			return fmt.Errorf("server said %s", op)
		}
	}
}
