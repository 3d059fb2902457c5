package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Bounds on the waits that poll a server's monitoring endpoints.
const (
	subscribeTimeout = 15 * time.Second     // for bench clients to subscribe
	quietTimeout     = 15 * time.Second     // for the previous row's clients to go
	pollInterval     = 5 * time.Millisecond // between polls
	httpTimeout      = 2 * time.Second      // per monitoring request
)

var monitorClient = &http.Client{Timeout: httpTimeout}

// getJSON fetches base+path and decodes the JSON body into v.
func getJSON(ctx context.Context, base, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := monitorClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// subsMatching returns how many subscriptions a message on subject would
// reach, from /subsz?subs=1&test=subject ("total" counts every match, not
// just the page returned).
func subsMatching(ctx context.Context, monitorURL, subject string) (int, error) {
	var sz struct {
		Total *int `json:"total"`
	}
	path := "/subsz?subs=1&limit=1&test=" + url.QueryEscape(subject)
	if err := getJSON(ctx, monitorURL, path, &sz); err != nil {
		return 0, err
	}
	if sz.Total == nil {
		return 0, fmt.Errorf("GET %s: no \"total\" field", path)
	}
	return *sz.Total, nil
}

// waitSubscribed polls /subsz until at least want subscriptions match
// subject. It gives up after subscribeTimeout, when ctx ends, or when
// gone is closed (the subscribing process exited).
func waitSubscribed(ctx context.Context, monitorURL, subject string, want int, gone <-chan struct{}) error {
	deadline := time.Now().Add(subscribeTimeout)
	for {
		n, err := subsMatching(ctx, monitorURL, subject)
		if err == nil && n >= want {
			return nil
		}
		select {
		case <-gone:
			return fmt.Errorf("the subscribing client exited before %d subscriptions on %q appeared", want, subject)
		default:
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("monitoring /subsz unusable after %v: %w", subscribeTimeout, err)
			}
			return fmt.Errorf("%d of %d subscriptions on %q after %v", n, want, subject, subscribeTimeout)
		}
		if err := pause(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// waitQuiet polls /varz until the server reports no client connections, so
// a row never overlaps the previous row's clients being torn down.
func waitQuiet(ctx context.Context, monitorURL string) error {
	deadline := time.Now().Add(quietTimeout)
	for {
		var vz struct {
			Connections *int `json:"connections"`
		}
		err := getJSON(ctx, monitorURL, "/varz", &vz)
		if err == nil && vz.Connections == nil {
			err = fmt.Errorf("GET /varz: no \"connections\" field")
		}
		if err == nil && *vz.Connections == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("monitoring /varz unusable after %v: %w", quietTimeout, err)
			}
			return fmt.Errorf("%d client connections still open after %v", *vz.Connections, quietTimeout)
		}
		if err := pause(ctx, pollInterval); err != nil {
			return err
		}
	}
}
