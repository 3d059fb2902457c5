package main

import (
	"math"
	"testing"
	"time"
)

func TestGridLateness(t *testing.T) {
	const every = 100 * time.Millisecond
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	type poll struct {
		slot int
		late time.Duration
	}
	for _, tc := range []struct {
		name   string
		phase  time.Duration // where the bridge's grid lies against t0
		polls  []poll
		missed int
	}{
		{name: "on time", phase: 37 * time.Millisecond,
			polls: []poll{{0, 300 * time.Microsecond}, {1, 200 * time.Microsecond}, {2, 250 * time.Microsecond}, {3, 0}, {4, 400 * time.Microsecond}}},
		{name: "one late poll", phase: 5 * time.Millisecond,
			polls: []poll{{0, time.Millisecond}, {1, 200 * time.Microsecond}, {2, 6600 * time.Microsecond}, {3, 300 * time.Microsecond}, {4, 100 * time.Microsecond}}},
		{name: "first poll late", phase: 50 * time.Millisecond,
			polls: []poll{{0, 8 * time.Millisecond}, {1, 100 * time.Microsecond}, {2, 0}, {3, 200 * time.Microsecond}}},
		{name: "an overrun skips two slots", phase: 12 * time.Millisecond,
			polls: []poll{{0, 100 * time.Microsecond}, {1, 300 * time.Microsecond}, {2, 200 * time.Microsecond}, {3, 0}, {6, 400 * time.Microsecond}, {7, 100 * time.Microsecond}}, missed: 2},
		{name: "late by more than half an interval", phase: 20 * time.Millisecond,
			polls: []poll{{0, 0}, {1, 70 * time.Millisecond}, {2, 100 * time.Microsecond}, {3, 200 * time.Microsecond}, {4, 0}}},
		// The grid just before a multiple of the interval after the first
		// poll: the polls' phases wrap around it.
		{name: "phase at the boundary", phase: 99500 * time.Microsecond,
			polls: []poll{{0, 0}, {1, 900 * time.Microsecond}, {2, 200 * time.Microsecond}, {3, 700 * time.Microsecond}, {5, 300 * time.Microsecond}}, missed: 1},
	} {
		var at []time.Time
		for _, p := range tc.polls {
			at = append(at, t0.Add(tc.phase+time.Duration(p.slot)*every+p.late))
		}
		late, missed := gridLateness(at, every)
		if missed != tc.missed || len(late) != len(tc.polls) {
			t.Errorf("%s: %d lateness values, %d missed; want %d, %d", tc.name, len(late), missed, len(tc.polls), tc.missed)
			continue
		}
		// The estimated grid may sit at the earliest poll's lateness
		// instead of on the true slot: lateness is relative to it.
		shift := math.Inf(1)
		for _, p := range tc.polls {
			shift = math.Min(shift, float64(p.late)/1e6)
		}
		for i, p := range tc.polls {
			if want := float64(p.late)/1e6 - shift; math.Abs(late[i]-want) > 1e-6 {
				t.Errorf("%s: poll %d is %.4f ms late, want %.4f", tc.name, i, late[i], want)
			}
		}
	}
	if late, missed := gridLateness(nil, every); late != nil || missed != 0 {
		t.Errorf("no polls: %v, %d", late, missed)
	}
}
