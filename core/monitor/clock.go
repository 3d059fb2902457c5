package monitor

import "time"

// ClockInfo describes the trust in the server's wall clock, a leafbox
// extension reported in /healthz, /varz and /uplinkz. A gateway without a
// real-time clock boots at 1970 and is untrusted until NTP or the hub
// vouches for a time not earlier than the last known-good one. An
// untrusted clock is a status, not a health failure.
type ClockInfo struct {
	Trusted       bool      `json:"trusted"`                  // Trusted reports whether a source vouches for the time.
	Source        string    `json:"source,omitempty"`         // Source is what vouches: "os" (NTP sync) or "hub".
	Now           time.Time `json:"now"`                      // Now is the trusted time, or the local clock's reading when untrusted.
	OffsetSeconds float64   `json:"offset_seconds,omitempty"` // OffsetSeconds is the trusted time minus the local clock's.
	LastKnownGood time.Time `json:"last_known_good"`          // LastKnownGood is the latest trusted time seen, on any boot.
	Rejected      string    `json:"rejected,omitempty"`       // Rejected names a source that vouched for a time before LastKnownGood.
	BootID        string    `json:"boot_id"`                  // BootID identifies this boot.
	MonoSeconds   float64   `json:"mono_seconds"`             // MonoSeconds is the monotonic time since boot.
	HubTime       time.Time `json:"hub_time,omitzero"`        // HubTime is the last time read from the hub, if any.
}

// ClockProvider is implemented by a Provider that tracks the trust in its
// wall clock. Without it the documents carry no clock field.
type ClockProvider interface {
	// ClockStatus returns the clock's status now, or nil.
	ClockStatus() *ClockInfo
}

// clockInfo returns the provider's clock status, or nil.
func clockInfo(p Provider) *ClockInfo {
	if cp, ok := p.(ClockProvider); ok {
		return cp.ClockStatus()
	}
	return nil
}
