package server

import (
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

// closeReason says why a connection ended. The texts are nats-server's, as
// shown in /connz "reason".
type closeReason uint8

const (
	reasonUnknown closeReason = iota
	reasonClientClosed
	reasonAuthTimeout
	reasonAuthViolation
	reasonTLSHandshake
	reasonTLSRequired
	reasonSlowPending
	reasonSlowWriteDeadline
	reasonWriteError
	reasonReadError
	reasonParseError
	reasonStale
	reasonProtocolViolation
	reasonBadProtocol
	reasonMaxConnections
	reasonResources
	reasonMaxPayload
	reasonMaxControlLine
	reasonServerShutdown
)

var reasonText = [...]string{
	reasonUnknown:           "Unknown",
	reasonClientClosed:      "Client Closed",
	reasonAuthTimeout:       "Authentication Timeout",
	reasonAuthViolation:     "Authentication Failure",
	reasonTLSHandshake:      "TLS Handshake Failure",
	reasonTLSRequired:       "Secure Connection - TLS Required",
	reasonSlowPending:       "Slow Consumer (Pending Bytes)",
	reasonSlowWriteDeadline: "Slow Consumer (Write Deadline)",
	reasonWriteError:        "Write Error",
	reasonReadError:         "Read Error",
	reasonParseError:        "Parse Error",
	reasonStale:             "Stale Connection",
	reasonProtocolViolation: "Protocol Violation",
	reasonBadProtocol:       "Bad Client Protocol Version",
	reasonMaxConnections:    "Maximum Connections Exceeded",
	reasonResources:         "Insufficient Resources",
	reasonMaxPayload:        "Maximum Message Payload Exceeded",
	reasonMaxControlLine:    "Maximum Control Line Exceeded",
	reasonServerShutdown:    "Server Shutdown",
}

// String returns nats-server's text for the reason.
func (r closeReason) String() string {
	if int(r) < len(reasonText) {
		return reasonText[r]
	}
	return reasonText[reasonUnknown]
}

// closedConn is what /connz keeps of a closed connection.
type closedConn struct {
	snapshot monitor.ConnSnapshot
}

// recordClosed keeps c's final state for /connz?state=closed, evicting the
// oldest record beyond maxClosedClients.
func (s *Server) recordClosed(c *client) {
	c.mu.Lock()
	if c.stop.IsZero() {
		c.stop = time.Now()
	}
	c.mu.Unlock()
	rec := closedConn{snapshot: c.snapshot(true)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.closed) < maxClosedClients {
		s.closed = append(s.closed, rec)
		return
	}
	s.closed[s.closedNext] = rec
	s.closedNext = (s.closedNext + 1) % maxClosedClients
}
