package main

import (
	"math"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"one", []float64{7}, 7, true},
		{"odd, unsorted", []float64{5, 1, 9, 3, 7}, 5, true},
		{"even takes the mean of the middle two", []float64{4, 1, 3, 2}, 2.5, true},
		{"duplicates", []float64{2, 2, 2, 1, 9}, 2, true},
		{"an outlier does not move it", []float64{100, 101, 99, 1e9, 100}, 100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.in)
			got, ok := median(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("median(%v) = %g, %v; want %g, %v", tc.in, got, ok, tc.want, tc.ok)
			}
			if !slices.Equal(before, tc.in) {
				t.Errorf("median reordered its input: %v, was %v", tc.in, before)
			}
		})
	}
}

func TestFormatRatio(t *testing.T) {
	tests := []struct {
		name     string
		a, b     float64
		okA, okB bool
		want     string
	}{
		{"equal", 100, 100, true, true, "1.00×"},
		{"faster", 2265595, 2000000, true, true, "1.13×"},
		{"slower rounds half up", 0.985, 1, true, true, "0.98×"}, // 0.985 is 0.98499… in binary
		{"large", 3, 1, true, true, "3.00×"},
		{"missing subject", 0, 1, false, true, "n/a"},
		{"missing reference", 1, 0, true, false, "n/a"},
		{"zero reference", 1, 0, true, true, "n/a"},
		{"NaN", math.NaN(), 1, true, true, "n/a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatRatio(tc.a, tc.b, tc.okA, tc.okB); got != tc.want {
				t.Errorf("formatRatio(%g, %g) = %q, want %q", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		u    unit
		want string
	}{
		{2265595, unitRate, "2,265,595"},
		{2265594.6, unitRate, "2,265,595"},
		{999, unitRate, "999"},
		{1000, unitRate, "1,000"},
		{0, unitRate, "0"},
		{3902, unitRequests, "3,902"},
		{246.021, unitMicros, "246.0"},
		{1864.346, unitMicros, "1864.3"},
		{14.94, unitMiB, "14.9"},
		{math.NaN(), unitMiB, "n/a"},
		{math.Inf(1), unitRate, "n/a"},
	}
	for _, tc := range tests {
		if got := formatValue(tc.v, tc.u); got != tc.want {
			t.Errorf("formatValue(%g, %v) = %q, want %q", tc.v, tc.u, got, tc.want)
		}
	}
}

func TestGroupThousands(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 123: "123", 1234: "1,234", 123456: "123,456", 1234567: "1,234,567",
		-1234: "-1,234", -123: "-123",
	} {
		if got := groupThousands(n); got != want {
			t.Errorf("groupThousands(%d) = %q, want %q", n, got, want)
		}
	}
}
