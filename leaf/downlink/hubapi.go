package downlink

// The downlink's JetStream API requests to the hub: binding the durable
// consumer, asking the hub to resend, and pull requests.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/store/jsapi"
)

// consumerInfo is the part of the hub's consumer create answer used here.
type consumerInfo struct {
	NumPending    uint64 `json:"num_pending"`
	NumAckPending int    `json:"num_ack_pending"`
	AckFloor      struct {
		StreamSeq uint64 `json:"stream_seq"`
	} `json:"ack_floor"`
	jsapi.APIResponse
}

// consumerConfig is the consumer the downlink asks for.
type consumerConfig struct {
	Durable        string   `json:"durable_name"`
	DeliverPolicy  string   `json:"deliver_policy"`
	AckPolicy      string   `json:"ack_policy"`
	AckWait        int64    `json:"ack_wait"`
	MaxDeliver     int      `json:"max_deliver"`
	FilterSubject  string   `json:"filter_subject,omitempty"`
	FilterSubjects []string `json:"filter_subjects,omitempty"`
	ReplayPolicy   string   `json:"replay_policy"`
	MaxAckPending  int      `json:"max_ack_pending"`
}

// bind creates the durable consumer, or updates it to the configuration
// when it exists.
func (d *Downlink) bind(ctx context.Context) (*consumerInfo, error) {
	maxDeliver := -1
	if d.cfg.MaxDeliver > 0 {
		maxDeliver = d.cfg.MaxDeliver
	}
	cc := consumerConfig{
		Durable:       d.cfg.Durable,
		DeliverPolicy: "all",
		AckPolicy:     "explicit",
		AckWait:       int64(d.cfg.AckWait),
		MaxDeliver:    maxDeliver,
		ReplayPolicy:  "instant",
		MaxAckPending: d.cfg.MaxAckPending,
	}
	switch len(d.cfg.FilterSubjects) {
	case 0:
	case 1:
		cc.FilterSubject = d.cfg.FilterSubjects[0]
	default:
		cc.FilterSubjects = d.cfg.FilterSubjects
	}
	body, err := json.Marshal(struct {
		Stream string         `json:"stream_name"`
		Config consumerConfig `json:"config"`
	}{d.cfg.Stream, cc})
	if err != nil {
		return nil, err
	}
	subj := d.api + "CONSUMER.CREATE." + d.cfg.Stream + "." + d.cfg.Durable
	resp, err := d.request(ctx, subj, body)
	if err != nil {
		return nil, err
	}
	var info consumerInfo
	e, err := jsapi.DecodeReply(resp, &info)
	if err != nil {
		return nil, fmt.Errorf("downlink: invalid consumer create answer %q", truncate(resp))
	}
	if e != nil {
		return nil, fmt.Errorf("downlink: consumer %s on stream %s: hub error %d (%d): %s",
			d.cfg.Durable, d.cfg.Stream, e.Code, e.ErrCode, e.Description)
	}
	return &info, nil
}

// resend asks the hub to send again, at once, the message it has
// outstanding toward the gateway: one lost with the link would otherwise
// wait for the ack wait. The consumer goes back to its ack floor (with
// max ack pending 1 nothing above it was acked), so the message comes
// first, with its delivery count starting over. A hub without the reset
// API (before nats-server 2.14) leaves it to the ack wait.
func (d *Downlink) resend(ctx context.Context) {
	subj := d.api + "CONSUMER.RESET." + d.cfg.Stream + "." + d.cfg.Durable
	resp, err := d.request(ctx, subj, []byte("{}"))
	if err == nil {
		var answer jsapi.APIResponse
		switch e, uerr := jsapi.DecodeReply(resp, &answer); {
		case uerr != nil:
			err = fmt.Errorf("invalid answer %q", truncate(resp))
		case e != nil:
			err = fmt.Errorf("hub error %d (%d): %s", e.Code, e.ErrCode, e.Description)
		}
	}
	if err != nil {
		d.log.Warn("downlink: the hub did not resend its outstanding message; it comes after the ack wait", "ack_wait", d.cfg.AckWait, "error", err)
		return
	}
	d.resets.Add(1)
	d.rs.Changed()
}

// request sends an API request and waits for its answer; other inbox
// messages received meanwhile are kept for the session.
func (d *Downlink) request(ctx context.Context, subj string, body []byte) ([]byte, error) {
	d.requests++
	reply := d.inbox + "c." + strconv.FormatUint(d.requests, 10)
	if err := d.hub.Publish(subj, reply, nil, body); err != nil {
		return nil, fmt.Errorf("downlink: %s: %w (is the hub's JetStream domain %q?)", subj, err, d.cfg.Domain)
	}
	timer := time.NewTimer(d.cfg.RequestTimeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("%w: %s after %v", ErrRequestTimeout, subj, d.cfg.RequestTimeout)
		case <-d.lost:
			return nil, fmt.Errorf("%w: %s unanswered", ErrLinkLost, subj)
		case <-d.evSig:
		}
		var keep []event
		var answer *event
		for _, ev := range d.take() {
			switch {
			case ev.subject == reply && answer == nil:
				answer = &ev
			case strings.HasPrefix(ev.subject, d.inbox+"c."):
				// An answer to an earlier request that timed out.
			default:
				keep = append(keep, ev)
			}
		}
		d.stash = keep
		if answer != nil {
			if code, desc := status(answer.hdr); code >= 300 {
				return nil, fmt.Errorf("downlink: %s: %d %s (no JetStream in domain %q?)", subj, code, desc, d.cfg.Domain)
			}
			return answer.data, nil
		}
	}
}

// pull sends a pull request and returns its id, the tail of its reply
// subject.
func (d *Downlink) pull() (string, error) {
	d.requests++
	id := strconv.FormatUint(d.requests, 10)
	body, _ := json.Marshal(struct {
		Batch     int   `json:"batch"`
		Expires   int64 `json:"expires"`
		Heartbeat int64 `json:"idle_heartbeat"`
	}{d.cfg.Batch, int64(d.cfg.Expires), int64(d.heartbeat())})
	subj := d.api + "CONSUMER.MSG.NEXT." + d.cfg.Stream + "." + d.cfg.Durable
	if err := d.hub.Publish(subj, d.inbox+"p."+id, nil, body); err != nil {
		return "", fmt.Errorf("downlink: pull: %w", err)
	}
	d.pulls.Add(1)
	d.rs.Changed()
	return id, nil
}
