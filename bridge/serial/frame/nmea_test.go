package frame

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
)

const (
	ggaSentence = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
	rmcSentence = "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"
)

func TestNMEAFix(t *testing.T) {
	evs := collect(NewNMEA(0, false), []byte(ggaSentence+"\r\n"+rmcSentence+"\r\n"))
	if len(evs) != 2 || evs[0].err != nil || evs[1].err != nil {
		t.Fatalf("events = %v", evs)
	}
	if evs[0].sentence != "GPGGA" || evs[0].data != ggaSentence {
		t.Fatalf("GGA frame = %v", evs[0])
	}
	var gga Fix
	if err := json.Unmarshal([]byte(evs[0].fix), &gga); err != nil {
		t.Fatalf("GGA fix %q: %v", evs[0].fix, err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !near(gga.Lat, 48+7.038/60) || !near(gga.Lon, 11+31.0/60) || gga.Quality != 1 ||
		gga.Satellites == nil || *gga.Satellites != 8 || gga.Time != "12:35:19" ||
		gga.Altitude == nil || *gga.Altitude != 545.4 || gga.HDOP == nil || *gga.HDOP != 0.9 {
		t.Fatalf("GGA fix = %+v", gga)
	}
	var rmc Fix
	if err := json.Unmarshal([]byte(evs[1].fix), &rmc); err != nil {
		t.Fatalf("RMC fix %q: %v", evs[1].fix, err)
	}
	if !near(rmc.Lat, 48+7.038/60) || rmc.Time != "2094-03-23T12:35:19Z" && rmc.Time != "1994-03-23T12:35:19Z" ||
		rmc.SpeedKnots == nil || *rmc.SpeedKnots != 22.4 || rmc.Quality != 1 {
		t.Fatalf("RMC fix = %+v", rmc)
	}
}

func TestNMEASouthWest(t *testing.T) {
	s, err := ParseSentence([]byte(withChecksum("GNGGA,000000.00,3351.000,S,15112.000,W,2,12,1.0,10.0,M,,M,,")), false)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := s.Fix()
	if !ok || f.Lat > -33.85 || f.Lat < -33.86 || f.Lon > -151.19 || f.Lon < -151.21 || f.Quality != 2 {
		t.Fatalf("fix = %+v, %v", f, ok)
	}
}

// withChecksum wraps a sentence body as "$body*hh".
func withChecksum(body string) string {
	return fmt.Sprintf("$%s*%02X", body, checksum([]byte(body)))
}

func TestNMEABadFrames(t *testing.T) {
	bad := ggaSentence[:len(ggaSentence)-2] + "00"
	cases := []struct {
		name, in string
		reason   error
	}{
		{"bad checksum", bad, ErrChecksum},
		{"no checksum", "$GPGGA,1,2,3", ErrMalformed},
		{"short checksum", "$GPGGA,1*4", ErrMalformed},
		{"no start", "GPGGA,1*00", ErrMalformed},
		{"bad address", withChecksum("GP,1"), ErrMalformed},
		{"lower-case address", withChecksum("gpgga,1"), ErrMalformed},
		{"too long", "$" + string(make([]byte, 90)), ErrTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs := collect(NewNMEA(0, false), []byte(tc.in+"\r\n"+ggaSentence+"\r\n"))
			if len(evs) != 2 || !errors.Is(evs[0].err, tc.reason) || evs[1].data != ggaSentence {
				t.Fatalf("events = %v, want %v then the good sentence", evs, tc.reason)
			}
		})
	}
}

func TestNMEANoFix(t *testing.T) {
	cases := []string{
		withChecksum("GPGGA,123519,,,,,0,00,,,M,,M,,"),                                // quality 0
		withChecksum("GPRMC,123519,V,,,,,,,230394,,"),                                 // status void
		withChecksum("GPGSV,3,1,11,03,03,111,00,04,15"),                               // no position sentence
		withChecksum("GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"), // bad hemisphere
		withChecksum("GPGGA,123519,4867.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"), // minutes >= 60
	}
	for _, in := range cases {
		evs := collect(NewNMEA(0, false), []byte(in+"\r\n"))
		if len(evs) != 1 || evs[0].err != nil || evs[0].fix != "" {
			t.Fatalf("%q: events = %v, want a sentence without a fix", in, evs)
		}
	}
}

func TestNMEAEncode(t *testing.T) {
	f := NewNMEA(0, false)
	got, err := f.Encode(nil, []byte("PMTK220,1000"))
	if err != nil || string(got) != "$PMTK220,1000*1F\r\n" {
		t.Fatalf("Encode = %q, %v", got, err)
	}
	if _, err := f.Encode(nil, []byte(ggaSentence[:len(ggaSentence)-2]+"00")); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Encode with a wrong checksum = %v", err)
	}
	evs := collect(NewNMEA(0, true), []byte("$GPZDA,1,2\r\n"))
	if len(evs) != 1 || evs[0].err != nil {
		t.Fatalf("no checksum allowed: %v", evs)
	}
}
