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

// connzSubs returns how many subscriptions on exactly subject the
// server's client connections hold, from /connz?subs=1. It stands in for
// subsMatching on a server whose /subsz fails.
func connzSubs(ctx context.Context, monitorURL, subject string) (int, error) {
	var cz connz
	if err := getJSON(ctx, monitorURL, "/connz?subs=1&limit=4096", &cz); err != nil {
		return 0, err
	}
	return cz.count(subject), nil
}

// connz is the part of a /connz?subs=1 answer that connzSubs reads.
type connz struct {
	Connections []struct {
		Subs []string `json:"subscriptions_list"`
	} `json:"connections"`
}

// count returns how many listed subscriptions are on exactly subject.
func (cz connz) count(subject string) int {
	n := 0
	for _, c := range cz.Connections {
		for _, s := range c.Subs {
			if s == subject {
				n++
			}
		}
	}
	return n
}

// waitSubscribed polls the server's monitoring until at least want
// subscriptions match subject. It asks /subsz; once /subsz fails while
// /connz answers, it records the failure in srv.subszErr and counts from
// /connz for the rest of the run. It gives up after subscribeTimeout, when
// ctx ends, or when gone is closed (the subscribing process exited).
func waitSubscribed(ctx context.Context, srv *server, subject string, want int, gone <-chan struct{}) error {
	deadline := time.Now().Add(subscribeTimeout)
	for {
		var n int
		var err error
		if srv.subszErr == nil {
			n, err = subsMatching(ctx, srv.monitorURL, subject)
			if err != nil {
				if m, connzErr := connzSubs(ctx, srv.monitorURL, subject); connzErr == nil {
					srv.subszErr = err
					n, err = m, nil
				}
			}
		} else {
			n, err = connzSubs(ctx, srv.monitorURL, subject)
		}
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
				return fmt.Errorf("monitoring /subsz and /connz unusable after %v: %w", subscribeTimeout, err)
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
