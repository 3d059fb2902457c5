package leaf

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/core/proto"
)

// globalAccount is the name nats-server gives the default account.
const globalAccount = "$G"

// dial opens the TCP connection to r.
func (l *Link) dial(ctx context.Context, r remote) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.DialTimeout)
	defer cancel()
	if l.cfg.Dial != nil {
		return l.cfg.Dial(ctx, "tcp", r.address())
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", r.address())
}

// handshake runs the solicited side of the leafnode handshake on a fresh
// connection, in the order nats-server's hub expects (leafnode.go
// createLeafNode, processLeafnodeInfo, negotiateLeafCompression,
// sendLeafConnect, leafNodeFinishConnectProcess):
//
//  1. read the hub's INFO and check that it comes from a leafnode port;
//  2. upgrade to TLS if the hub or our configuration asks for it;
//  3. if both sides want compression, write our own plain INFO with our
//     mode, switch both directions to S2, and read the hub's second
//     (compressed) INFO, which carries the nonce from now on;
//  4. send CONNECT, signed with the nonce;
//  5. wait for the INFO with connect_info (answering PINGs meanwhile).
//
// Each read step is bounded by HandshakeTimeout. On return the session is
// ready to register; its reader may hold bytes already received after the
// connect_info INFO (the hub's first LS+ lines).
func (s *session) handshake(id *identity) error {
	cfg := s.cfg
	info, err := s.expectInfo()
	if err != nil {
		return err
	}
	// A leafnode port's INFO has a client id and either leafnode_urls or
	// info_on_connect; a client or route port's does not.
	if info.ClientID == 0 || (info.LeafNodeURLs == nil && !info.InfoOnConnect) {
		return ErrWrongPort
	}
	if strings.ContainsAny(info.Cluster, " \t") || info.Cluster == "_" {
		return fmt.Errorf("%w: hub cluster name %q", ErrProtocol, info.Cluster)
	}
	if s.remote.tls || cfg.TLS != nil || info.TLSRequired {
		if err := s.startTLS(); err != nil {
			return err
		}
	}

	s.compression = compressionNotSupported
	if info.Compression != "" {
		s.compression = CompressionOff
	}
	if needsCompression(cfg.Compression) {
		mode, err := selectCompression(cfg.Compression, info.Compression)
		if err != nil {
			return err
		}
		if mode == CompressionS2Auto {
			mode = autoLevel(time.Since(s.started), cfg.RTTThresholds)
		}
		s.compression = mode
		if compresses(mode) {
			announce := mode
			if cfg.Compression == CompressionS2Auto {
				announce = CompressionS2Auto
			}
			if info, err = s.switchToS2(announce, mode); err != nil {
				return err
			}
		}
	}
	s.hubInfo = *info
	s.headers = info.Headers

	// CONNECT, signed with the nonce of the INFO in force.
	account := cfg.Account
	if account == "" {
		account = globalAccount
	}
	c := proto.Connect{
		Echo:          true,
		Name:          cfg.Name,
		Version:       cfg.Version,
		Protocol:      1,
		Headers:       info.Headers,
		ServerID:      cfg.ServerID,
		Domain:        cfg.Domain,
		JetStream:     cfg.JetStream,
		DenyPub:       cfg.DenyImports,
		CompressMode:  s.compression,
		RemoteAccount: account,
	}
	if err := authenticate(&c, id, s.remote, info.Nonce); err != nil {
		return err
	}
	arg, err := json.Marshal(c)
	if err != nil {
		return err
	}
	line := append(append([]byte("CONNECT "), arg...), "\r\n"...)
	if err := s.writeNow(line); err != nil {
		return err
	}

	if !info.InfoOnConnect {
		// An old hub sends no connect_info INFO; nats-server registers at
		// once in that case.
		s.perms.Store(newPerms(cfg, nil, nil))
		return s.conn.SetReadDeadline(time.Time{})
	}
	return s.awaitConnectInfo()
}

// expectInfo reads the next operation, which must be INFO, within the
// handshake timeout.
func (s *session) expectInfo() (*proto.Info, error) {
	if err := s.conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout)); err != nil {
		return nil, err
	}
	op, err := s.next()
	if err != nil {
		return nil, err
	}
	switch op.Kind {
	case proto.OpInfo:
	case proto.OpErr:
		return nil, &HubError{Text: string(op.Arg)}
	default:
		return nil, fmt.Errorf("%w: %v before INFO", ErrProtocol, op.Kind)
	}
	info := new(proto.Info)
	if err := json.Unmarshal(op.Arg, info); err != nil {
		return nil, fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
	}
	return info, nil
}

// startTLS runs the client TLS handshake on the connection. Nothing may
// have arrived after the hub's INFO.
func (s *session) startTLS() error {
	if len(s.rest) > 0 {
		return fmt.Errorf("%w: data after INFO before TLS", ErrProtocol)
	}
	var tc *tls.Config
	if s.cfg.TLS != nil {
		tc = s.cfg.TLS.Clone()
	} else {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if tc.ServerName == "" {
		tc.ServerName = s.remote.tlsName
	}
	conn := tls.Client(s.conn, tc)
	if err := conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout)); err != nil {
		return err
	}
	if err := conn.Handshake(); err != nil {
		return fmt.Errorf("leaf: tls handshake: %w", err)
	}
	s.conn = conn
	s.rd = conn
	return nil
}

// switchToS2 writes our plain INFO announcing mode, switches both
// directions to S2 at level, and returns the hub's compressed INFO. The
// hub switches its reader only after the read that held our INFO, so
// nothing else may be written until its INFO arrives (which is why CONNECT
// waits for it).
func (s *session) switchToS2(announce, level string) (*proto.Info, error) {
	ours, err := json.Marshal(struct {
		ID          string `json:"server_id"`
		Name        string `json:"server_name"`
		Compression string `json:"compression"`
	}{s.cfg.ServerID, s.cfg.Name, announce})
	if err != nil {
		return nil, err
	}
	line := append(append([]byte("INFO "), ours...), "\r\n"...)
	if err := s.writeNow(line); err != nil {
		return nil, err
	}
	s.comp = newCompressor(s.conn, level)
	// Bytes already read past the plain INFO are compressed: give them to
	// the S2 reader first (copied, since the read buffer is reused).
	pre := bytes.Clone(s.rest)
	s.rest = nil
	s.rd = s2.NewReader(io.MultiReader(bytes.NewReader(pre), s.conn))
	return s.expectInfo()
}

// awaitConnectInfo reads until the hub's INFO with connect_info, which it
// sends once CONNECT is accepted. It answers PINGs and fails on -ERR.
func (s *session) awaitConnectInfo() error {
	if err := s.conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout)); err != nil {
		return err
	}
	for {
		op, err := s.next()
		if err != nil {
			return err
		}
		switch op.Kind {
		case proto.OpInfo:
			var info proto.Info
			if err := json.Unmarshal(op.Arg, &info); err != nil {
				return fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
			}
			s.link.learnURLs(info.LeafNodeURLs, s.remote)
			if !info.ConnectInfo {
				continue
			}
			s.remoteAccount = info.RemoteAccount
			s.perms.Store(newPerms(s.cfg, info.Import, info.Export))
			return s.conn.SetReadDeadline(time.Time{})
		case proto.OpPing:
			if err := s.writeNow([]byte(proto.PongLine)); err != nil {
				return err
			}
		case proto.OpPong, proto.OpOK:
		case proto.OpErr:
			text := string(op.Arg)
			s.delay = errorDelay(text)
			return &HubError{Text: text}
		default:
			return fmt.Errorf("%w: %v before connect_info INFO", ErrProtocol, op.Kind)
		}
	}
}
