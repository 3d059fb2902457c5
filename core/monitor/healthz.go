package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// JetStreamNotEnabled is the error text of a server configured for
// JetStream that is not running it, as nats-server words it.
const JetStreamNotEnabled = "JetStream not enabled"

// The values of Healthz.Status.
const (
	healthOK          = "ok"
	healthError       = "error"
	healthUnavailable = "unavailable"
)

// Healthz is the /healthz document. Without details a failed check sets
// Status to "error" or "unavailable" and Error to the first problem; with
// details=true Status is "ok" or "error" and Errors lists every problem.
type Healthz struct {
	Status string         `json:"status"`           // Status is "ok", "error" or "unavailable".
	Error  string         `json:"error,omitempty"`  // Error describes the first problem (without details).
	Errors []HealthzError `json:"errors,omitempty"` // Errors lists every problem (details=true).
	// Degraded lists trouble that does not fail the check unless asked
	// to (uplinks=true): an uplink or downlink whose link is down, whose
	// backlog is old, or that dead-lettered messages (leafbox extension).
	Degraded []HealthzError `json:"degraded,omitempty"`
	Clock    *ClockInfo     `json:"clock,omitempty"` // Clock is the wall clock's trust (leafbox extension; never a failure).
}

// HealthzOptions are the /healthz query parameters.
type HealthzOptions struct {
	JSEnabledOnly bool   // JSEnabledOnly checks only that JetStream runs (js-enabled-only; js-enabled is a deprecated alias).
	JSServerOnly  bool   // JSServerOnly checks only that the server accepts connections (js-server-only).
	JSMetaOnly    bool   // JSMetaOnly checks only JetStream's metadata layer (js-meta-only).
	Account       string // Account restricts the JetStream checks to one account (account).
	Stream        string // Stream restricts them to one stream; needs Account (stream).
	Consumer      string // Consumer restricts them to one consumer; needs Stream (consumer).
	Details       bool   // Details lists every problem (details).
	// Uplinks makes the degraded conditions fatal: 503 while any is
	// present (uplinks; leafbox extension).
	Uplinks bool
}

// HealthzError is one problem found by a health check.
type HealthzError struct {
	Type     HealthzErrorType `json:"type"`               // Type classifies the problem.
	Account  string           `json:"account,omitempty"`  // Account is the account concerned, if any.
	Stream   string           `json:"stream,omitempty"`   // Stream is the stream concerned, if any.
	Consumer string           `json:"consumer,omitempty"` // Consumer is the consumer concerned, if any.
	Uplink   string           `json:"uplink,omitempty"`   // Uplink is the uplink concerned, if any (leafbox extension).
	Downlink string           `json:"downlink,omitempty"` // Downlink is the downlink concerned, if any (leafbox extension).
	Error    string           `json:"error,omitempty"`    // Error describes the problem.
}

// HealthzErrorType classifies a health problem. It marshals as the
// upper-case names nats-server uses.
type HealthzErrorType int

// The health problem types.
const (
	HealthzErrorConn       HealthzErrorType = iota // HealthzErrorConn: the server does not accept connections ("CONNECTION").
	HealthzErrorBadRequest                         // HealthzErrorBadRequest: the query is inconsistent ("BAD_REQUEST").
	HealthzErrorJetStream                          // HealthzErrorJetStream: JetStream is not running ("JETSTREAM").
	HealthzErrorAccount                            // HealthzErrorAccount: an account is missing or broken ("ACCOUNT").
	HealthzErrorStream                             // HealthzErrorStream: a stream is missing or broken ("STREAM").
	HealthzErrorConsumer                           // HealthzErrorConsumer: a consumer is missing or broken ("CONSUMER").
	HealthzErrorStore                              // HealthzErrorStore: the store directory is unusable ("STORE"; leafbox extension).
	HealthzErrorUplink                             // HealthzErrorUplink: an uplink is in trouble ("UPLINK"; leafbox extension).
	HealthzErrorDownlink                           // HealthzErrorDownlink: a downlink is in trouble ("DOWNLINK"; leafbox extension).
)

var healthzErrorNames = [...]string{
	HealthzErrorConn:       "CONNECTION",
	HealthzErrorBadRequest: "BAD_REQUEST",
	HealthzErrorJetStream:  "JETSTREAM",
	HealthzErrorAccount:    "ACCOUNT",
	HealthzErrorStream:     "STREAM",
	HealthzErrorConsumer:   "CONSUMER",
	HealthzErrorStore:      "STORE",
	HealthzErrorUplink:     "UPLINK",
	HealthzErrorDownlink:   "DOWNLINK",
}

// String returns the type's wire name, or "unknown".
func (t HealthzErrorType) String() string {
	if t >= 0 && int(t) < len(healthzErrorNames) {
		return healthzErrorNames[t]
	}
	return "unknown"
}

// MarshalJSON encodes the type as its wire name.
func (t HealthzErrorType) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.String())
}

// UnmarshalJSON decodes a wire name.
func (t *HealthzErrorType) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err != nil {
		return err
	}
	for i, n := range healthzErrorNames {
		if n == name {
			*t = HealthzErrorType(i)
			return nil
		}
	}
	return fmt.Errorf("monitor: unknown healthz error type %q", name)
}

// checkHealth runs the health checks in nats-server's order: query
// consistency, readiness, then the provider's own checks unless
// js-server-only. It returns the document and its HTTP status.
func checkHealth(p Provider, opts HealthzOptions) (*Healthz, int) {
	var bad string
	switch {
	case opts.Account == "" && opts.Stream != "":
		bad = `"account" must not be empty when checking stream health`
	case opts.Stream == "" && opts.Consumer != "":
		bad = `"stream" must not be empty when checking consumer health`
	}
	if bad != "" {
		return unhealthy(opts, healthError, http.StatusBadRequest,
			[]HealthzError{{Type: HealthzErrorBadRequest, Error: bad}})
	}
	if err := p.Ready(); err != nil {
		return unhealthy(opts, healthError, http.StatusInternalServerError,
			[]HealthzError{{Type: HealthzErrorConn, Error: err.Error()}})
	}
	if opts.JSServerOnly {
		return &Healthz{Status: healthOK}, http.StatusOK
	}
	var degraded []HealthzError
	fatal := opts.Uplinks
	if dc, ok := p.(DegradationChecker); ok && !opts.JSEnabledOnly {
		var always bool
		degraded, always = dc.CheckDegraded(opts)
		fatal = fatal || always
	}
	if hc, ok := p.(HealthChecker); ok {
		if code, problems := hc.CheckHealth(opts); len(problems) > 0 {
			if code == 0 {
				code = http.StatusServiceUnavailable
			}
			if fatal {
				problems = append(problems, degraded...)
			}
			hz, code := unhealthy(opts, healthUnavailable, code, problems)
			if !fatal {
				hz.Degraded = degraded
			}
			return hz, code
		}
	}
	if fatal && len(degraded) > 0 {
		return unhealthy(opts, healthUnavailable, http.StatusServiceUnavailable, degraded)
	}
	return &Healthz{Status: healthOK, Degraded: degraded}, http.StatusOK
}

// unhealthy shapes failed checks: the first problem under status, or every
// problem under "error" with details.
func unhealthy(opts HealthzOptions, status string, code int, problems []HealthzError) (*Healthz, int) {
	if opts.Details {
		return &Healthz{Status: healthError, Errors: problems}, code
	}
	return &Healthz{Status: status, Error: problems[0].Error}, code
}
