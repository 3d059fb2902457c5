package mqttstate

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Record encodings. Records are the data of stream messages; none uses
// headers.
//
// A session is JSON (sessionRecord): rare writes, readable with
// `nats`-style tools. A message (queued or retained) is binary:
//
//	version=1 | flags (bits 0-1 QoS, bit 2 retain, bit 3 packet id follows)
//	| [packet id (2 bytes, big endian)] | varint expiry (Unix ns, 0 none)
//	| varint time (Unix ns, 0 none) | uvarint len(topic) | topic
//	| uvarint len(header) | header | payload
//
// (a queued message stored by EnqueueSent carries its packet id, and
// counts one delivery, until an out record supersedes it)
//
// A queued message's delivery state (stream out) is
//
//	version=1 | packet id (2 bytes, big endian) | flags (bit 0 PUBREC) | uvarint deliveries
//
// and an incoming QoS 2 packet id (stream qos2in) is an empty record: the
// subject says it all.
const recordVersion = 1

// sessionRecord is the stored form of a Session.
type sessionRecord struct {
	ClientID string      `json:"id"`
	Version  byte        `json:"v"`
	Expiry   uint32      `json:"exp"`
	Subs     []subRecord `json:"subs,omitempty"`
	// Disconnected is DisconnectedAt in Unix ns, 0 while connected.
	Disconnected int64  `json:"disc,omitempty"`
	Account      string `json:"acc,omitempty"`
	User         string `json:"user,omitempty"`
}

// subRecord is the stored form of a Sub.
type subRecord struct {
	Filter            string `json:"f"`
	QoS               byte   `json:"q,omitempty"`
	NoLocal           bool   `json:"nl,omitempty"`
	RetainAsPublished bool   `json:"rap,omitempty"`
	RetainHandling    byte   `json:"rh,omitempty"`
	SubID             uint32 `json:"id,omitempty"`
	Share             string `json:"sh,omitempty"`
}

// encodeSession returns the record of s.
func encodeSession(s *Session) []byte {
	r := sessionRecord{ClientID: s.ClientID, Version: s.Version, Expiry: s.ExpiryInterval, Account: s.Account, User: s.User}
	if !s.DisconnectedAt.IsZero() {
		r.Disconnected = s.DisconnectedAt.UnixNano()
	}
	for _, sub := range s.Subs {
		r.Subs = append(r.Subs, subRecord(sub))
	}
	b, _ := json.Marshal(&r) // cannot fail: plain fields
	return b
}

// decodeSession parses a session record.
func decodeSession(b []byte) (Session, error) {
	var r sessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return Session{}, fmt.Errorf("%w: session: %v", ErrCorrupt, err)
	}
	if !utf8.ValidString(r.ClientID) {
		return Session{}, fmt.Errorf("%w: session: client id is not UTF-8", ErrCorrupt)
	}
	s := Session{ClientID: r.ClientID, Version: r.Version, ExpiryInterval: r.Expiry, Account: r.Account, User: r.User}
	if r.Disconnected != 0 {
		s.DisconnectedAt = time.Unix(0, r.Disconnected)
	}
	if len(r.Subs) > 0 {
		s.Subs = make([]Sub, len(r.Subs))
		for i, sr := range r.Subs {
			s.Subs[i] = Sub(sr)
		}
	}
	return s, nil
}

// appendMsg appends the record of m to dst.
func appendMsg(dst []byte, m *Msg) []byte { return appendQueued(dst, m, 0) }

// appendQueued appends the record of m with its packet id (0 for none).
func appendQueued(dst []byte, m *Msg, pid uint16) []byte {
	flags := m.QoS & 3
	if m.Retain {
		flags |= 4
	}
	if pid != 0 {
		flags |= 8
	}
	var exp int64
	if !m.Expiry.IsZero() {
		exp = m.Expiry.UnixNano()
	}
	var ts int64
	if !m.Time.IsZero() {
		ts = m.Time.UnixNano()
	}
	dst = append(dst, recordVersion, flags)
	if pid != 0 {
		dst = append(dst, byte(pid>>8), byte(pid))
	}
	dst = binary.AppendVarint(dst, exp)
	dst = binary.AppendVarint(dst, ts)
	dst = binary.AppendUvarint(dst, uint64(len(m.Topic)))
	dst = append(dst, m.Topic...)
	dst = binary.AppendUvarint(dst, uint64(len(m.Header)))
	dst = append(dst, m.Header...)
	return append(dst, m.Payload...)
}

// decodeMsg parses a message record. The message's slices alias b.
func decodeMsg(b []byte) (Msg, error) {
	m, _, err := decodeQueued(b)
	return m, err
}

// decodeQueued parses a message record and its packet id (0 for none).
func decodeQueued(b []byte) (Msg, uint16, error) {
	bad := func(what string) (Msg, uint16, error) {
		return Msg{}, 0, fmt.Errorf("%w: message: %s", ErrCorrupt, what)
	}
	if len(b) < 2 {
		return bad("short record")
	}
	if b[0] != recordVersion {
		return bad(fmt.Sprintf("unknown version %d", b[0]))
	}
	flags := b[1]
	if flags&^15 != 0 || flags&3 == 3 {
		return bad(fmt.Sprintf("bad flags %#x", flags))
	}
	b = b[2:]
	var pid uint16
	if flags&8 != 0 {
		if len(b) < 2 || b[0]|b[1] == 0 {
			return bad("bad packet id")
		}
		pid, b = uint16(b[0])<<8|uint16(b[1]), b[2:]
	}
	exp, n := binary.Varint(b)
	if n <= 0 {
		return bad("bad expiry")
	}
	b = b[n:]
	ts, n := binary.Varint(b)
	if n <= 0 {
		return bad("bad time")
	}
	b = b[n:]
	tl, n := binary.Uvarint(b)
	if n <= 0 || tl > uint64(len(b)-n) {
		return bad("bad topic length")
	}
	topic := string(b[n : n+int(tl)])
	b = b[n+int(tl):]
	pl, n := binary.Uvarint(b)
	if n <= 0 || pl > uint64(len(b)-n) {
		return bad("bad header length")
	}
	m := Msg{Topic: topic, QoS: flags & 3, Retain: flags&4 != 0}
	if pl > 0 {
		m.Header = b[n : n+int(pl) : n+int(pl)]
	}
	if rest := b[n+int(pl):]; len(rest) > 0 {
		m.Payload = rest
	}
	if exp != 0 {
		m.Expiry = time.Unix(0, exp)
	}
	if ts != 0 {
		m.Time = time.Unix(0, ts)
	}
	return m, pid, nil
}

// appendOut appends the delivery-state record of a queued message.
func appendOut(dst []byte, pid uint16, pubrec bool, deliveries int32) []byte {
	var flags byte
	if pubrec {
		flags = 1
	}
	dst = append(dst, recordVersion, byte(pid>>8), byte(pid), flags)
	return binary.AppendUvarint(dst, uint64(deliveries))
}

// decodeOut parses a delivery-state record.
func decodeOut(b []byte) (pid uint16, pubrec bool, deliveries int32, err error) {
	if len(b) < 5 || b[0] != recordVersion || b[3]&^1 != 0 {
		return 0, false, 0, fmt.Errorf("%w: delivery state: bad header", ErrCorrupt)
	}
	d, n := binary.Uvarint(b[4:])
	if n <= 0 || 4+n != len(b) || d > 1<<31-1 {
		return 0, false, 0, fmt.Errorf("%w: delivery state: bad deliveries", ErrCorrupt)
	}
	return uint16(b[1])<<8 | uint16(b[2]), b[3] == 1, int32(d), nil
}
