package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// reopenPoll is how often the reopen rows ask a restarted server for its
// stream's state.
const reopenPoll = 20 * time.Millisecond

// reopenStopTimeout bounds the clean stop before a reopen: a server
// holding millions of messages may write its indexes on the way out, and
// a SIGKILL would turn the reopen into a crash recovery.
const reopenStopTimeout = 2 * time.Minute

// restart stops the server cleanly and starts the same command again in
// the same directory, keeping its store, then waits up to timeout for
// its ports file and a client handshake. It returns when the new process
// was started: the start of the reopen rows' start-up time. s then
// describes the new process.
func (s *server) restart(ctx context.Context, timeout time.Duration) (time.Time, error) {
	select {
	case <-s.exited:
		return time.Time{}, fmt.Errorf("benchcmp: %s exited before its restart (%v)%s", s.label, s.exitErr, s.logTail())
	default:
	}
	if !s.stopWithin(reopenStopTimeout) {
		return time.Time{}, fmt.Errorf("benchcmp: %s did not stop within %v before its restart%s", s.label, reopenStopTimeout, s.logTail())
	}
	// The log of the first run is kept beside the second's.
	cmd := exec.Command(s.cmd.Path, s.cmd.Args[1:]...)
	cmd.Dir, cmd.SysProcAttr = s.cmd.Dir, childAttr()
	logFile, err := openAppend(s.logPath)
	if err != nil {
		return time.Time{}, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return time.Time{}, fmt.Errorf("benchcmp: restarting %s: %w", s.label, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited, s.exitErr = cmd, exited, nil
	go func() {
		s.exitErr = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(timeout)
	for {
		err := s.awaitReady(ctx, s.dir)
		if err == nil {
			return start, nil
		}
		if ctx.Err() != nil || s.alive() != nil || time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("benchcmp: %s did not come back after its restart: %w%s", s.label, err, s.logTail())
		}
	}
}

// waitStreamMsgs asks the server for stream's info every reopenPoll over
// one raw-protocol connection until it reports at least want messages,
// and returns when that answer arrived. It fails after timeout, or when
// the server exits.
func waitStreamMsgs(ctx context.Context, s *server, stream string, want uint64, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	d := net.Dialer{Timeout: startTimeout}
	conn, err := d.DialContext(ctx, "tcp", s.clientAddr)
	if err != nil {
		return time.Time{}, fmt.Errorf("benchcmp: stream info: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return time.Time{}, err
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriter(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		return time.Time{}, fmt.Errorf("benchcmp: stream info: no INFO from %s (%q, %v)", s.clientAddr, strings.TrimSpace(line), err)
	}
	const inbox = "_INBOX.benchcmp.reopen"
	w.WriteString(connectLine + "SUB " + inbox + " 1\r\n")
	if err := pingPong(w, r); err != nil {
		return time.Time{}, fmt.Errorf("benchcmp: stream info: %w", err)
	}
	var last string
	for {
		if err := s.alive(); err != nil {
			return time.Time{}, err
		}
		fmt.Fprintf(w, "PUB $JS.API.STREAM.INFO.%s %s 0\r\n\r\n", stream, inbox)
		if err := w.Flush(); err != nil {
			return time.Time{}, fmt.Errorf("benchcmp: stream info: %w", err)
		}
		body, err := readReply(r, w)
		if err != nil {
			return time.Time{}, fmt.Errorf("benchcmp: stream info (last answer %q): %w", last, err)
		}
		at := time.Now()
		var info struct {
			State struct {
				Messages uint64 `json:"messages"`
			} `json:"state"`
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &info); err != nil {
			return time.Time{}, fmt.Errorf("benchcmp: stream info %q: %w", tail(string(body), 3), err)
		}
		if info.Error == nil && info.State.Messages >= want {
			return at, nil
		}
		last = tail(string(body), 3)
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("benchcmp: stream %s not open with %d messages after %v (last answer %q)", stream, want, timeout, last)
		}
		if err := pause(ctx, reopenPoll); err != nil {
			return time.Time{}, err
		}
	}
}

// readReply returns the payload of the next message on r (see nextMsg).
// A headers-only reply is the 503 no-responders status a server sends
// before JetStream answers: it comes back as an API error, which the
// caller asks again after.
func readReply(r *bufio.Reader, w *bufio.Writer) ([]byte, error) {
	var buf []byte
	_, hdr, size, err := nextMsg(r, w, &buf)
	if err != nil {
		return nil, err
	}
	if size == hdr {
		return []byte(`{"error":{"description":"no responders yet"}}`), nil
	}
	return buf[hdr:size], nil
}

// openAppend opens the log at path for appending.
func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	return f, nil
}
