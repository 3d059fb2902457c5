package jsapi

import (
	"testing"
	"time"
)

// TestParseSchedule: next firing times of @at, @every and cron patterns
// (robfig-style six fields, as nats-server reads them), and the patterns
// refused.
func TestParseSchedule(t *testing.T) {
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	// Saturday 2026-01-03 10:20:30.4 UTC.
	base := time.Date(2026, 1, 3, 10, 20, 30, 400_000_000, time.UTC)
	ts := base.UnixNano()
	for _, tc := range []struct {
		pattern string
		loc     *time.Location
		want    string // RFC 3339 UTC; "" for an invalid pattern
		repeat  bool
	}{
		{"@at 2026-02-01T00:00:00Z", nil, "2026-02-01T00:00:00Z", false},
		{"@at 2026-02-01T01:00:00+01:00", nil, "2026-02-01T00:00:00Z", false},
		{"@at 2026-02-01T00:00:00Z", ams, "", false},
		{"@at 2026-02-01", nil, "", false},
		{"@every 1s", nil, "2026-01-03T10:20:31Z", true},
		{"@every 90m", nil, "2026-01-03T11:50:30Z", true},
		{"@every 999ms", nil, "", false},
		{"@every 1m", ams, "", false},
		{"* * * * * *", nil, "2026-01-03T10:20:31Z", true},
		{"*/15 * * * * *", nil, "2026-01-03T10:20:45Z", true},
		{"0 30 9 * * mon-fri", nil, "2026-01-05T09:30:00Z", true},
		{"0 30 9 * * MON-FRI", ams, "2026-01-05T08:30:00Z", true},
		{"0 0 0 29 2 ?", nil, "2028-02-29T00:00:00Z", true},
		{"0 0 0 1 * mon", nil, "2026-01-05T00:00:00Z", true}, // day of month or weekday
		{"0 0 0 1 * *", nil, "2026-02-01T00:00:00Z", true},
		{"5/20 * * * * *", nil, "2026-01-03T10:20:45Z", true},
		{"0 0 12 * jan,jul *", nil, "2026-01-03T12:00:00Z", true},
		{"@hourly", nil, "2026-01-03T11:00:00Z", true},
		{"@daily", nil, "2026-01-04T00:00:00Z", true},
		{"@weekly", nil, "2026-01-04T00:00:00Z", true},
		{"@monthly", nil, "2026-02-01T00:00:00Z", true},
		{"@yearly", nil, "2027-01-01T00:00:00Z", true},
		{"0 0 0 31 2 *", nil, "", false},
		{"* * * * *", nil, "", false},
		{"60 * * * * *", nil, "", false},
		{"* * * * * 7", nil, "", false},
		{"*/0 * * * * *", nil, "", false},
		{"1-2-3 * * * * *", nil, "", false},
		{"@reboot", nil, "", false},
	} {
		next, repeat, ok := ParseSchedule(tc.pattern, tc.loc, ts, base)
		if tc.want == "" {
			if ok {
				t.Errorf("%q: accepted (%v)", tc.pattern, next)
			}
			continue
		}
		if !ok || repeat != tc.repeat || next.UTC().Format(time.RFC3339) != tc.want {
			t.Errorf("%q: %v repeat %v ok %v, want %s repeat %v", tc.pattern, next.UTC(), repeat, ok, tc.want, tc.repeat)
		}
	}
	// A repeating schedule long overdue fires once, from now.
	next, _, _ := ParseSchedule("@every 10s", nil, ts, base.Add(time.Hour))
	if want := base.Add(time.Hour).Round(time.Second).Add(10 * time.Second); !next.Equal(want) {
		t.Errorf("overdue @every: %v, want %v", next, want)
	}
	if next, _, ok := ParseSchedule("", nil, ts, base); !ok || !next.IsZero() {
		t.Errorf("empty pattern: %v %v", next, ok)
	}
}
