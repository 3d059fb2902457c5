package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MaxNMEA is the longest NMEA 0183 sentence the standard allows, from the
// start character to the checksum, without CR LF.
const MaxNMEA = 82

// NMEA is the NMEA 0183 framer.
type NMEA struct {
	// MaxLen is the longest sentence accepted without CR LF (MaxNMEA
	// when 0; some receivers send longer proprietary sentences).
	MaxLen int
	// AllowNoChecksum accepts sentences without "*hh" (the checksum is
	// optional in old versions of the standard but required for GGA and
	// RMC since 2.3); by default they are bad frames.
	AllowNoChecksum bool

	lines Lines
}

// NewNMEA returns an NMEA framer.
func NewNMEA(maxLen int, allowNoChecksum bool) *NMEA {
	return &NMEA{MaxLen: maxLen, AllowNoChecksum: allowNoChecksum}
}

func (n *NMEA) maxLen() int {
	if n.MaxLen <= 0 {
		return MaxNMEA
	}
	return n.MaxLen
}

// Feed implements Framer.
func (n *NMEA) Feed(b []byte) { n.lines.Feed(b) }

// Reset implements Framer.
func (n *NMEA) Reset() { n.lines.Reset() }

// Next implements Framer.
func (n *NMEA) Next() (Frame, bool, error) {
	n.lines.MaxLen = n.maxLen()
	for {
		line, ok, err := n.lines.nextLine()
		if err != nil || !ok {
			return Frame{}, false, err
		}
		if len(line) == 0 {
			continue
		}
		s, err := ParseSentence(line, n.AllowNoChecksum)
		if err != nil {
			return Frame{}, false, err
		}
		f := Frame{Data: line, Sentence: s.Talker + s.Type}
		if fix, ok := s.Fix(); ok {
			f.Fix, err = json.Marshal(fix)
			if err != nil {
				return Frame{}, false, badFrame(ErrMalformed, len(line), "fix: %v", err)
			}
		}
		return f, true, nil
	}
}

// Encode implements Framer: msg is a sentence ("$GPGGA,..." or without
// its start character, which is then '$'); a checksum is added when it has
// none and checked when it has one; CR LF is appended.
func (n *NMEA) Encode(dst, msg []byte) ([]byte, error) {
	if len(msg) == 0 {
		return dst, badFrame(ErrMalformed, 0, "empty sentence")
	}
	if bytes.ContainsAny(msg, "\r\n") {
		return dst, badFrame(ErrMalformed, len(msg), "a sentence must not contain CR or LF")
	}
	start := len(dst)
	if msg[0] != '$' && msg[0] != '!' {
		dst = append(dst, '$')
	}
	dst = append(dst, msg...)
	if bytes.IndexByte(msg, '*') < 0 {
		dst = fmt.Appendf(dst, "*%02X", checksum(dst[start+1:]))
	}
	if _, err := ParseSentence(dst[start:], false); err != nil {
		return dst[:start], err
	}
	if len(dst)-start > n.maxLen() {
		return dst[:start], badFrame(ErrTooLong, len(dst)-start, "sentence exceeds %d bytes", n.maxLen())
	}
	return append(dst, '\r', '\n'), nil
}

func checksum(b []byte) byte {
	var c byte
	for _, x := range b {
		c ^= x
	}
	return c
}

// Sentence is a parsed NMEA 0183 sentence. Its strings are copies.
type Sentence struct {
	// Talker is the talker id ("GP", "GN"; "" for a proprietary
	// sentence, whose Type starts with 'P').
	Talker string
	// Type is the sentence formatter ("GGA", "RMC").
	Type string
	// Fields are the comma-separated fields after the address.
	Fields []string
}

// ParseSentence parses and checks one sentence without CR LF.
func ParseSentence(line []byte, allowNoChecksum bool) (Sentence, error) {
	n := len(line)
	if line[0] != '$' && line[0] != '!' {
		return Sentence{}, badFrame(ErrMalformed, n, "a sentence starts with '$' or '!'")
	}
	body := line[1:]
	if i := bytes.IndexByte(body, '*'); i >= 0 {
		sum := body[i+1:]
		body = body[:i]
		want, err := strconv.ParseUint(string(sum), 16, 8)
		if len(sum) != 2 || err != nil {
			return Sentence{}, badFrame(ErrMalformed, n, "checksum %q is not two hex digits", sum)
		}
		if got := checksum(body); byte(want) != got {
			return Sentence{}, badFrame(ErrChecksum, n, "sentence says %02X, bytes give %02X", want, got)
		}
	} else if !allowNoChecksum {
		return Sentence{}, badFrame(ErrMalformed, n, "no checksum")
	}
	for _, c := range body {
		if c < 0x20 || c > 0x7e || c == '$' || c == '!' {
			return Sentence{}, badFrame(ErrMalformed, n, "byte %#02x is not allowed in a sentence", c)
		}
	}
	parts := strings.Split(string(body), ",")
	addr := parts[0]
	s := Sentence{Fields: parts[1:]}
	switch {
	case len(addr) >= 2 && addr[0] == 'P':
		s.Type = addr
	case len(addr) == 5:
		s.Talker, s.Type = addr[:2], addr[2:]
	default:
		return Sentence{}, badFrame(ErrMalformed, n, "address %q is not a talker and a sentence type", addr)
	}
	for _, c := range addr {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return Sentence{}, badFrame(ErrMalformed, n, "address %q is not upper-case letters and digits", addr)
		}
	}
	return s, nil
}

// Fix is a GPS position fix from a GGA or RMC sentence.
type Fix struct {
	// Sentence is where the fix came from ("GPGGA").
	Sentence string `json:"sentence"`
	// Time is the UTC time of the fix, "hh:mm:ss.sss"; with an RMC's
	// date it is an RFC 3339 time.
	Time string `json:"time,omitempty"`
	// Lat and Lon are in decimal degrees, north and east positive.
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
	// Quality is GGA's fix quality (0 invalid, 1 GPS, 2 DGPS, 4 RTK
	// fixed, 5 RTK float, ...); an RMC gives 1 for status A.
	Quality int `json:"quality"`
	// Satellites is GGA's number of satellites in use.
	Satellites *int `json:"satellites,omitempty"`
	// HDOP is GGA's horizontal dilution of precision.
	HDOP *float64 `json:"hdop,omitempty"`
	// Altitude is GGA's antenna altitude above mean sea level, in metres.
	Altitude *float64 `json:"altitude_m,omitempty"`
	// SpeedKnots and Course are RMC's speed over ground and course over
	// ground (degrees true).
	SpeedKnots *float64 `json:"speed_knots,omitempty"`
	Course     *float64 `json:"course,omitempty"`
}

// Fix returns the sentence's GPS fix: for a GGA or RMC that has a
// position; false otherwise (another sentence, no fix yet, a field that
// does not parse).
func (s Sentence) Fix() (Fix, bool) {
	f := Fix{Sentence: s.Talker + s.Type}
	var latF, latH, lonF, lonH string
	switch s.Type {
	case "GGA":
		// time, lat, N/S, lon, E/W, quality, satellites, hdop, alt, M, ...
		if len(s.Fields) < 9 {
			return Fix{}, false
		}
		q, err := strconv.Atoi(s.Fields[5])
		if err != nil || q == 0 {
			return Fix{}, false
		}
		f.Quality = q
		if n, err := strconv.Atoi(s.Fields[6]); err == nil {
			f.Satellites = &n
		}
		f.HDOP = optFloat(s.Fields[7])
		f.Altitude = optFloat(s.Fields[8])
		latF, latH, lonF, lonH = s.Fields[1], s.Fields[2], s.Fields[3], s.Fields[4]
		t, ok := nmeaTime(s.Fields[0])
		if !ok {
			return Fix{}, false
		}
		f.Time = t
	case "RMC":
		// time, status, lat, N/S, lon, E/W, speed, course, date, ...
		if len(s.Fields) < 9 || s.Fields[1] != "A" {
			return Fix{}, false
		}
		f.Quality = 1
		latF, latH, lonF, lonH = s.Fields[2], s.Fields[3], s.Fields[4], s.Fields[5]
		f.SpeedKnots = optFloat(s.Fields[6])
		f.Course = optFloat(s.Fields[7])
		t, ok := nmeaTime(s.Fields[0])
		if !ok {
			return Fix{}, false
		}
		f.Time = t
		if d := s.Fields[8]; len(d) == 6 && allDigits(d) {
			f.Time = fmt.Sprintf("20%s-%s-%sT%sZ", d[4:6], d[2:4], d[0:2], t)
		}
	default:
		return Fix{}, false
	}
	var ok bool
	if f.Lat, ok = degrees(latF, latH, 2, "N", "S", 90); !ok {
		return Fix{}, false
	}
	if f.Lon, ok = degrees(lonF, lonH, 3, "E", "W", 180); !ok {
		return Fix{}, false
	}
	return f, true
}

func optFloat(s string) *float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || s == "" || strings.ContainsAny(s, "eEnNiIxXpP_") {
		return nil
	}
	return &v
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// nmeaTime turns "hhmmss[.sss]" into "hh:mm:ss[.sss]".
func nmeaTime(s string) (string, bool) {
	if len(s) < 6 || !allDigits(s[:6]) {
		return "", false
	}
	frac := s[6:]
	if frac != "" && (frac[0] != '.' || (len(frac) > 1 && !allDigits(frac[1:]))) {
		return "", false
	}
	return s[0:2] + ":" + s[2:4] + ":" + s[4:6] + frac, true
}

// degrees turns NMEA's "ddmm.mmmm" (or "dddmm.mmmm" with degDigits 3) and
// a hemisphere into decimal degrees.
func degrees(v, hemi string, degDigits int, pos, neg string, limit float64) (float64, bool) {
	dot := strings.IndexByte(v, '.')
	if dot < 0 {
		dot = len(v)
	}
	if dot != degDigits+2 || !allDigits(v[:dot]) || (dot < len(v) && !allDigits(v[dot+1:]) && dot+1 != len(v)) {
		return 0, false
	}
	deg, _ := strconv.Atoi(v[:degDigits])
	min, err := strconv.ParseFloat(v[degDigits:], 64)
	if err != nil || min >= 60 {
		return 0, false
	}
	d := float64(deg) + min/60
	switch hemi {
	case pos:
	case neg:
		d = -d
	default:
		return 0, false
	}
	if d > limit || d < -limit {
		return 0, false
	}
	return d, true
}
