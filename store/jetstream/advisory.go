package jetstream

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/leafbox/leafbox/store/jsapi"
)

// Advisories (jsapi/advisory.go) are built only when someone listens: each
// sender first asks the Bus whether the advisory's subject has interest,
// and consumers keep their advisory subjects ready-made, so a NAK, TERM,
// max_deliver or evicted delivery with nobody listening costs one
// interest lookup and no allocation. Nothing is published with a lock
// held: what the consumer decides under its lock (max_deliver, a message
// gone) is published by its pump.

// advisoryKind numbers the advisory types for the per-type counters.
type advisoryKind uint8

const (
	advAPIAudit advisoryKind = iota
	advStreamAction
	advConsumerAction
	advConsumerPause
	advMaxDeliver
	advNak
	advTerminated
	advGroupPinned
	advGroupUnpinned
	advBatchAbandoned
	numAdvisoryKinds
)

// advisoryTypes are the type strings by kind.
var advisoryTypes = [numAdvisoryKinds]string{
	advAPIAudit:       jsapi.AdvisoryTypeAPIAudit,
	advStreamAction:   jsapi.AdvisoryTypeStreamAction,
	advConsumerAction: jsapi.AdvisoryTypeConsumerAction,
	advConsumerPause:  jsapi.AdvisoryTypeConsumerPause,
	advMaxDeliver:     jsapi.AdvisoryTypeMaxDeliver,
	advNak:            jsapi.AdvisoryTypeNak,
	advTerminated:     jsapi.AdvisoryTypeTerminated,
	advGroupPinned:    jsapi.AdvisoryTypeGroupPinned,
	advGroupUnpinned:  jsapi.AdvisoryTypeGroupUnpinned,
	advBatchAbandoned: jsapi.AdvisoryTypeBatchAbandoned,
}

// AdvisoryCount is how many advisories of one type were published.
type AdvisoryCount struct {
	// Type is the advisory's type string without its
	// "io.nats.jetstream.advisory.v1." prefix, e.g. "max_deliver".
	Type string
	// Published counts the advisories sent to at least one listener's
	// interest; advisories nobody listened for are not built or counted.
	Published uint64
}

// advisoryCounts returns the per-type counters, in a fixed order.
func (e *Engine) advisoryCounts() []AdvisoryCount {
	out := make([]AdvisoryCount, numAdvisoryKinds)
	for k := range numAdvisoryKinds {
		out[k] = AdvisoryCount{
			Type:      strings.TrimPrefix(advisoryTypes[k], "io.nats.jetstream.advisory.v1."),
			Published: e.advisories[k].Load(),
		}
	}
	return out
}

// event returns the head of a new advisory of kind k.
func event(k advisoryKind) jsapi.TypedEvent {
	return jsapi.TypedEvent{Type: advisoryTypes[k], ID: eventID(), Time: time.Now().UTC()}
}

// eventID returns a random 22-character base62 id, nats-server's nuid
// length.
func eventID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [22]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

// publishAdvisory encodes adv and publishes it on subj, counting it under
// kind k. The caller checked the interest in subj.
func (e *Engine) publishAdvisory(k advisoryKind, subj string, adv any) {
	b, err := json.Marshal(adv)
	if err != nil {
		e.log.Warn("jetstream: encode advisory", "subject", subj, "err", err)
		return
	}
	e.bus.Publish(subj, "", nil, b)
	e.advisories[k].Add(1)
}

// adviseStream sends a stream_action advisory on the subject for the
// action (STREAM.CREATED, UPDATED or DELETED).<stream>.
func (e *Engine) adviseStream(name string, action jsapi.AdvisoryAction) {
	var pre string
	switch action {
	case jsapi.ActionCreated:
		pre = jsapi.AdvisoryStreamCreated
	case jsapi.ActionModified:
		pre = jsapi.AdvisoryStreamUpdated
	default:
		pre = jsapi.AdvisoryStreamDeleted
	}
	subj := pre + "." + name
	if !e.bus.HasInterest(subj) {
		return
	}
	e.publishAdvisory(advStreamAction, subj, &jsapi.StreamActionAdvisory{
		TypedEvent: event(advStreamAction), Stream: name, Action: action, Domain: e.cfg.Domain,
	})
}

// adviseConsumer sends a consumer_action advisory on
// CONSUMER.CREATED or DELETED.<stream>.<consumer>.
func (e *Engine) adviseConsumer(stream, name string, action jsapi.AdvisoryAction) {
	pre := jsapi.AdvisoryConsumerCreated
	if action == jsapi.ActionDeleted {
		pre = jsapi.AdvisoryConsumerDeleted
	}
	subj := pre + "." + stream + "." + name
	if !e.bus.HasInterest(subj) {
		return
	}
	e.publishAdvisory(advConsumerAction, subj, &jsapi.ConsumerActionAdvisory{
		TypedEvent: event(advConsumerAction), Stream: stream, Consumer: name, Action: action, Domain: e.cfg.Domain,
	})
}

// advisePause sends a consumer_pause advisory for a pause (until is in
// the future) or a resume (until is nil).
func (e *Engine) advisePause(stream, name string, until *time.Time) {
	subj := jsapi.AdvisoryConsumerPause + "." + stream + "." + name
	if !e.bus.HasInterest(subj) {
		return
	}
	adv := &jsapi.ConsumerPauseAdvisory{TypedEvent: event(advConsumerPause), Stream: stream, Consumer: name, Domain: e.cfg.Domain}
	if until != nil {
		adv.PauseUntil = *until
		adv.Paused = time.Now().Before(*until)
	}
	e.publishAdvisory(advConsumerPause, subj, adv)
}

// advisorySubjects are a consumer's per-message advisory subjects, built
// once when it is made so that checking their interest allocates nothing.
type advisorySubjects struct {
	maxDeliver, nak, term string
}

// newAdvisorySubjects returns the subjects for consumer name of stream.
func newAdvisorySubjects(stream, name string) advisorySubjects {
	tail := "." + stream + "." + name
	return advisorySubjects{
		maxDeliver: jsapi.AdvisoryMaxDeliveries + tail,
		nak:        jsapi.AdvisoryMsgNaked + tail,
		term:       jsapi.AdvisoryMsgTerminated + tail,
	}
}

// termReasonDeleted is the reason of the terminated advisory for a
// pending delivery whose message left the stream by a limit, a delete or
// expiry (nats-server's text). A purge ends pending deliveries without
// advisories, as in nats-server.
const termReasonDeleted = "Unacknowledged message was deleted"

// dropped is a pending delivery the consumer gave up without an ack,
// noted under the consumer lock and advised by the pump: kind advMaxDeliver
// (it reached max_deliver) or advTerminated (its message is gone, for
// reason).
type dropped struct {
	kind       advisoryKind
	sseq, cseq uint64
	deliveries uint64
	reason     string
}

// noteExceeded records, for its advisory if someone listens, that sseq
// will not be delivered again after deliveries deliveries. Caller holds
// c.mu; the interest lookup takes only the broker's subscription locks,
// which come after every engine lock.
func (c *consumer) noteExceeded(sseq, deliveries uint64) {
	if c.eng.bus.HasInterest(c.advSubjects.maxDeliver) {
		c.dropped = append(c.dropped, dropped{kind: advMaxDeliver, sseq: sseq, deliveries: deliveries})
	}
}

// noteGone drops the pending delivery of sseq because its message left
// the stream, and records it for its advisory if someone listens. A limit
// may do this on every publish, so nothing is recorded (or allocated)
// without a listener. Caller holds c.mu.
func (c *consumer) noteGone(sseq uint64, reason string) {
	p := c.pending[sseq]
	if p == nil {
		return
	}
	if c.eng.bus.HasInterest(c.advSubjects.term) {
		c.dropped = append(c.dropped, dropped{
			kind: advTerminated, sseq: sseq, cseq: p.cseq, deliveries: c.redelivered[sseq] + 1, reason: reason,
		})
	}
	c.dropPending(sseq)
}

// adviseDropped sends the max_deliver and terminated advisories of ds,
// whose interest was checked when they were noted. It runs on the pump,
// without locks.
func (c *consumer) adviseDropped(ds []dropped) {
	for _, d := range ds {
		subj := c.advSubjects.maxDeliver
		if d.kind == advTerminated {
			subj = c.advSubjects.term
		}
		if d.kind == advMaxDeliver {
			c.eng.publishAdvisory(advMaxDeliver, subj, &jsapi.MaxDeliveriesAdvisory{
				TypedEvent: event(advMaxDeliver), Stream: c.s.name, Consumer: c.name,
				StreamSeq: d.sseq, Deliveries: d.deliveries, Domain: c.eng.cfg.Domain,
			})
			continue
		}
		c.eng.publishAdvisory(advTerminated, subj, &jsapi.TerminatedAdvisory{
			TypedEvent: event(advTerminated), Stream: c.s.name, Consumer: c.name,
			ConsumerSeq: d.cseq, StreamSeq: d.sseq, Deliveries: d.deliveries, Reason: d.reason,
			Domain: c.eng.cfg.Domain,
		})
	}
}

// adviseNak sends a nak advisory for the acked delivery a.
func (c *consumer) adviseNak(a *ackInfo) {
	subj := c.advSubjects.nak
	if !c.eng.bus.HasInterest(subj) {
		return
	}
	c.eng.publishAdvisory(advNak, subj, &jsapi.NakAdvisory{
		TypedEvent: event(advNak), Stream: c.s.name, Consumer: c.name,
		ConsumerSeq: a.dseq, StreamSeq: a.sseq, Deliveries: a.delivered, Domain: c.eng.cfg.Domain,
	})
}

// adviseTerm sends a terminated advisory for the acked delivery a with the
// reason that followed +TERM.
func (c *consumer) adviseTerm(a *ackInfo, reason []byte) {
	subj := c.advSubjects.term
	if !c.eng.bus.HasInterest(subj) {
		return
	}
	c.eng.publishAdvisory(advTerminated, subj, &jsapi.TerminatedAdvisory{
		TypedEvent: event(advTerminated), Stream: c.s.name, Consumer: c.name,
		ConsumerSeq: a.dseq, StreamSeq: a.sseq, Deliveries: a.delivered,
		Reason: string(bytes.TrimSpace(reason)), Domain: c.eng.cfg.Domain,
	})
}

// audits holds the API requests being served while someone listens on
// $JS.EVENT.ADVISORY.API, by reply subject, so that respond can report
// each response with its request. Requests are served on the goroutine
// that delivered them, and each has its own reply inbox.
type audits struct {
	mu      sync.Mutex
	byReply map[string]*auditedRequest
}

// auditedRequest is a request being served.
type auditedRequest struct {
	subject string
	request string
}

// beginAudit registers the request on subj (answered on reply) for an
// API audit if someone listens, and returns the function that ends it.
func (e *Engine) beginAudit(subj, reply string, data []byte) func() {
	if !e.bus.HasInterest(jsapi.AdvisoryAPIAudit) {
		return nil
	}
	r := &auditedRequest{subject: subj, request: string(data)}
	e.audit.mu.Lock()
	if e.audit.byReply == nil {
		e.audit.byReply = make(map[string]*auditedRequest)
	}
	e.audit.byReply[reply] = r
	e.auditing.Add(1)
	e.audit.mu.Unlock()
	return func() {
		e.audit.mu.Lock()
		if e.audit.byReply[reply] == r {
			delete(e.audit.byReply, reply)
		}
		e.auditing.Add(-1)
		e.audit.mu.Unlock()
	}
}

// adviseResponse sends the api_audit advisory for the response b to the
// request answered on reply, if that request is being audited.
func (e *Engine) adviseResponse(reply string, b []byte) {
	if e.auditing.Load() == 0 {
		return
	}
	e.audit.mu.Lock()
	r := e.audit.byReply[reply]
	e.audit.mu.Unlock()
	if r == nil {
		return
	}
	e.publishAdvisory(advAPIAudit, jsapi.AdvisoryAPIAudit, &jsapi.APIAudit{
		TypedEvent: event(advAPIAudit),
		Server:     e.cfg.ServerName,
		Client:     &jsapi.ClientInfo{Account: e.account(), Server: e.cfg.ServerName},
		Subject:    r.subject,
		Request:    r.request,
		Response:   string(b),
		Domain:     e.cfg.Domain,
	})
}

// account is the name of the account the engine serves.
func (e *Engine) account() string {
	if e.cfg.Account != "" {
		return e.cfg.Account
	}
	return "$G"
}
