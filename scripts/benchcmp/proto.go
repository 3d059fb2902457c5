package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// connectLine is the CONNECT the handshake sends: no echo of +OK, no
// pedantic checks, nothing the two servers could treat differently.
const connectLine = `CONNECT {"verbose":false,"pedantic":false,"name":"benchcmp","lang":"go","protocol":1}` + "\r\n"

// pingServer completes one NATS client handshake with the server at addr:
// it reads INFO, sends CONNECT and PING, and waits for PONG. It proves the
// server accepts clients and gives it the work of one connection before
// its idle memory is read.
func pingServer(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading INFO from %s: %w", addr, err)
	}
	if !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("%s greeted with %q, want INFO", addr, strings.TrimSpace(line))
	}
	if _, err := conn.Write([]byte(connectLine + "PING\r\n")); err != nil {
		return fmt.Errorf("writing CONNECT to %s: %w", addr, err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("waiting for PONG from %s: %w", addr, err)
		}
		switch op := strings.TrimSpace(line); {
		case op == "PONG":
			return nil
		case strings.HasPrefix(op, "-ERR"):
			return fmt.Errorf("%s answered CONNECT with %s", addr, op)
		}
		// INFO updates, PING and +OK are allowed before the PONG.
	}
}
