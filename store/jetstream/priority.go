package jetstream

import (
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Priority groups (nats-server's ADR-42) steer which waiting pull request
// of a consumer gets the next message. A consumer names one group and a
// policy; its pull requests name the group and, by policy:
//
//   - overflow: a request with min_pending or min_ack_pending is served
//     only while the consumer has at least that many messages pending
//     (counting the one being placed) or unacknowledged; other requests
//     are served as usual. A standby worker thus takes over only when the
//     primary falls behind.
//   - pinned_client: the first request without a pin ID served while no
//     client is pinned gets a new ID, and from then on only requests
//     carrying that ID (sent back by the client from the Nats-Pin-Id
//     header of its deliveries) are served; requests without an ID wait,
//     requests with another ID are answered 423. The pin ends when the
//     pinned client sends no request for priority_timeout (reason
//     "timeout") or on CONSUMER.UNPIN (reason "admin"), with pinned and
//     unpinned advisories.
//   - prioritized: requests are served by their priority, 0 first, and in
//     arrival order within a priority.
//
// The pin lives in memory only, as in nats-server: a restart unpins.

// pinEvent is a pin change the pump advises once the lock is released.
type pinEvent struct {
	pinned bool
	group  string
	id     string // the new pin, when pinned
	reason string // why it ended, when unpinned
}

// requestPriority is the place of wr in a prioritized queue: a request
// without priority-group fields goes last.
func requestPriority(wr *pullRequest) int {
	if !wr.hasPG {
		return int(^uint(0) >> 1)
	}
	return wr.pg.Priority
}

// enqueue adds wr to the waiting requests: at the back, or for the
// prioritized policy behind every request of its priority or a lower one.
// Caller holds c.mu.
func (c *consumer) enqueue(wr *pullRequest) {
	if c.cfg.PriorityPolicy != jsapi.PriorityPrioritized {
		c.waiting = append(c.waiting, wr)
		return
	}
	p := requestPriority(wr)
	i := len(c.waiting)
	for j, o := range c.waiting {
		if requestPriority(o) > p {
			i = j
			break
		}
	}
	c.waiting = append(c.waiting, nil)
	copy(c.waiting[i+1:], c.waiting[i:])
	c.waiting[i] = wr
}

// cycleHead moves the first waiting request to the back, passing it over
// for this message. Caller holds c.mu.
func (c *consumer) cycleHead() {
	wr := c.waiting[0]
	copy(c.waiting, c.waiting[1:])
	c.waiting[len(c.waiting)-1] = wr
}

// passOver cycles the first waiting request and reports whether every
// request was passed over now, counting in *cycled. Caller holds c.mu.
func (c *consumer) passOver(cycled *int) bool {
	c.cycleHead()
	*cycled++
	return *cycled >= len(c.waiting)
}

// dropHead removes the first waiting request. Caller holds c.mu.
func (c *consumer) dropHead() {
	c.waiting[0] = nil
	c.waiting = c.waiting[1:]
}

// overflowHeld reports whether wr asks for more pending or unacknowledged
// messages than the consumer has, counting the message being placed as
// pending (nats-server's check). Caller holds c.mu.
func (c *consumer) overflowHeld(wr *pullRequest) bool {
	pg := &wr.pg
	if pg.MinPending <= 0 && pg.MinAckPending <= 0 {
		return false
	}
	if pg.MinPending > 0 && uint64(pg.MinPending) <= c.numPending+1 {
		return false
	}
	if pg.MinAckPending > 0 && pg.MinAckPending <= int64(len(c.pending)) {
		return false
	}
	return true
}

// assignPin pins the client of wr with a new ID, if wr names a group.
// Caller holds c.mu.
func (c *consumer) assignPin(wr *pullRequest, now time.Time) bool {
	if !wr.hasPG || wr.pg.Group == "" {
		return false
	}
	c.pinID = eventID()
	c.pinnedAt = now.UTC()
	c.pinExpires = now.Add(c.cfg.PinnedTTL)
	wr.pg.ID = c.pinID
	c.pinEvents = append(c.pinEvents, pinEvent{pinned: true, group: wr.pg.Group, id: c.pinID})
	return true
}

// unassignPin ends the pin, if any. Caller holds c.mu.
func (c *consumer) unassignPin() {
	c.pinID, c.pinnedAt, c.pinExpires = "", time.Time{}, time.Time{}
}

// expirePin ends a pin whose client sent no request for priority_timeout
// and schedules the check otherwise. Caller holds c.mu.
func (c *consumer) expirePin(now time.Time, st *step) {
	if c.pinID == "" {
		return
	}
	if now.Before(c.pinExpires) {
		st.wake = earliest(st.wake, c.pinExpires)
		return
	}
	c.unassignPin()
	c.pinEvents = append(c.pinEvents, pinEvent{group: c.priorityGroup(), reason: jsapi.UnpinReasonTimeout})
}

// priorityGroup is the consumer's priority group ("" without one).
// Caller holds c.mu.
func (c *consumer) priorityGroup() string {
	if len(c.cfg.PriorityGroups) == 0 {
		return ""
	}
	return c.cfg.PriorityGroups[0]
}

// wrongPin ends the first waiting request, whose pin ID is not the
// current one, with 423. Caller holds c.mu.
func (c *consumer) wrongPin(st *step) {
	wr := c.waiting[0]
	st.out = append(st.out, outMsg{route: wr.reply, hdr: pendingHeader(423, jsapi.StatusWrongPinID, wr)})
	c.dropHead()
}

// withPin adds the Nats-Pin-Id header to a delivery of a pinned_client
// consumer. Caller holds c.mu.
func (c *consumer) withPin(m *outMsg) {
	if c.cfg.PriorityPolicy == jsapi.PriorityPinnedClient && c.pinID != "" {
		m.hdr = proto.AppendHeader(nil, m.hdr, jsapi.HeaderPinID, c.pinID)
	}
}

// priorityInfo is the priority_groups part of the consumer's info. Caller
// holds c.mu.
func (c *consumer) priorityInfo() []jsapi.PriorityGroupState {
	if len(c.cfg.PriorityGroups) == 0 {
		return nil
	}
	return []jsapi.PriorityGroupState{{Group: c.cfg.PriorityGroups[0], PinnedClientID: c.pinID, PinnedTS: c.pinnedAt}}
}

// advisePins sends the pinned and unpinned advisories of evs. It runs
// without locks.
func (c *consumer) advisePins(evs []pinEvent) {
	for _, ev := range evs {
		if ev.pinned {
			c.eng.advisePinned(c.s.name, c.name, ev.group, ev.id)
		} else {
			c.eng.adviseUnpinned(c.s.name, c.name, ev.group, ev.reason)
		}
	}
}

// advisePinned sends a consumer_group_pinned advisory.
func (e *Engine) advisePinned(stream, name, group, id string) {
	subj := jsapi.AdvisoryConsumerPinned + "." + stream + "." + name
	if !e.bus.HasInterest(subj) {
		return
	}
	e.publishAdvisory(advGroupPinned, subj, &jsapi.ConsumerGroupPinnedAdvisory{
		TypedEvent: event(advGroupPinned), Account: e.account(), Stream: stream, Consumer: name,
		Domain: e.cfg.Domain, Group: group, PinnedClientID: id,
	})
}

// adviseUnpinned sends a consumer_group_unpinned advisory.
func (e *Engine) adviseUnpinned(stream, name, group, reason string) {
	subj := jsapi.AdvisoryConsumerUnpinned + "." + stream + "." + name
	if !e.bus.HasInterest(subj) {
		return
	}
	e.publishAdvisory(advGroupUnpinned, subj, &jsapi.ConsumerGroupUnpinnedAdvisory{
		TypedEvent: event(advGroupUnpinned), Account: e.account(), Stream: stream, Consumer: name,
		Domain: e.cfg.Domain, Group: group, Reason: reason,
	})
}

// apiConsumerUnpin answers CONSUMER.UNPIN.<stream>.<consumer>: the
// group's pin ends (an unpinned advisory with reason "admin" is sent even
// when nothing was pinned, as nats-server does) and the next request
// without a pin ID is pinned.
func (e *Engine) apiConsumerUnpin(stream, name, reply string, data []byte) {
	const typ = jsapi.ConsumerUnpinResponseType
	var req jsapi.ConsumerUnpinRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := req.Check(); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	_, c, err := e.lookupConsumer(stream, name)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	c.mu.Lock()
	if err := c.cfg.CheckUnpin(req.Group); err != nil {
		c.mu.Unlock()
		e.respondError(reply, typ, err)
		return
	}
	c.unassignPin()
	c.mu.Unlock()
	e.adviseUnpinned(c.s.name, c.name, req.Group, jsapi.UnpinReasonAdmin)
	c.kick()
	e.respond(reply, &jsapi.ConsumerUnpinResponse{APIResponse: jsapi.APIResponse{Type: typ}}, nil)
}
