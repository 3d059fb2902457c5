package mqtt

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// storeWindow bounds the inbound messages being stored at once.
const storeWindow = 256

// Pipelined stores.
//
// Storing one message at a time waits a disk sync per message. The
// storer instead publishes each message to its stream at once, with a
// reply inbox of its own, and lets the stream's group commit sync many
// together; one goroutine (complete) takes the messages in the order they
// came and acknowledges each to the broker once its PubAck arrived, so
// the broker sees its acknowledgements in order, as MQTT requires. A
// message whose store failed (no PubAck within RequestTimeout, no stream,
// an error other than the stream's refusal of that message) is stored
// again, synchronously and with retries (run.store; only a message too
// large for the stream is dropped, counted), before any later
// message is acknowledged; its Nats-Msg-Id keeps a late first copy from
// being stored twice. The stream's order is the broker's except when one
// store fails and a later one, already published, did not.

// storeReq is one message being stored.
type storeReq struct {
	subj      string
	hdr, data []byte // copies, for a retry
	ack       func()
	result    chan error // one result; nil is stored
	sent      time.Time
	id        uint64 // its reply inbox's last token
}

// storer pipelines the stores of one Run.
type storer struct {
	r     *run
	inbox string // ends with '.'
	queue chan *storeReq

	mu      sync.Mutex
	pending map[uint64]*storeReq
	next    uint64
}

// newStorer subscribes its reply inbox and starts complete.
func newStorer(r *run) (*storer, func(), error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	s := &storer{r: r, inbox: "_INBOX." + hex.EncodeToString(b[:]) + ".", queue: make(chan *storeReq, storeWindow),
		pending: make(map[uint64]*storeReq)}
	unsubscribe, err := r.env.Bus.Subscribe(s.inbox+"*", "", s.reply)
	if err != nil {
		return nil, nil, fmt.Errorf("mqtt: subscribing the store inbox: %w", err)
	}
	r.wg.Add(1)
	go s.complete()
	return s, unsubscribe, nil
}

// store publishes one message to its stream; ack runs once it is
// stored. It blocks while storeWindow messages are being stored; false
// means Run ends (the message is not acknowledged).
func (s *storer) store(subj string, hdr, data []byte, ack func()) bool {
	req := &storeReq{subj: subj, hdr: append([]byte(nil), hdr...), data: append([]byte(nil), data...), ack: ack, result: make(chan error, 1), sent: time.Now()}
	select {
	case s.queue <- req:
	case <-s.r.ctx.Done():
		return false
	}
	s.mu.Lock()
	s.next++
	id := s.next
	req.id = id
	s.pending[id] = req
	s.mu.Unlock()
	if err := s.r.env.Bus.Publish(subj, s.inbox+strconv.FormatUint(id, 10), req.hdr, req.data); err != nil {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		req.result <- err
	}
	return true
}

// reply takes a PubAck from the inbox.
func (s *storer) reply(m bridge.Msg) {
	id, err := strconv.ParseUint(strings.TrimPrefix(string(m.Subject), s.inbox), 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	req := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if req == nil {
		return // given up on already
	}
	req.result <- pubAckError(req.subj, m)
}

// pubAckError decodes a stream's reply to a store as bridge.Store does.
func pubAckError(subj string, m bridge.Msg) error {
	if code, _ := proto.ParseStatus(m.Header); code == 503 {
		return fmt.Errorf("%w: %q", bridge.ErrNoStream, subj)
	}
	_, apiErr, err := jsapi.DecodePubAck(m.Data)
	switch {
	case err != nil:
		return fmt.Errorf("mqtt: storing %q: reply is no PubAck: %w", subj, err)
	case apiErr != nil:
		return &bridge.StoreError{Subject: subj, Err: apiErr}
	}
	return nil
}

// complete acknowledges the stored messages in order.
func (s *storer) complete() {
	defer s.r.wg.Done()
	r := s.r
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var req *storeReq
		select {
		case req = <-s.queue:
		case <-r.ctx.Done():
			return
		}
		timer.Reset(time.Until(req.sent.Add(r.cfg.RequestTimeout)))
		var err error
		select {
		case err = <-req.result:
		case <-timer.C:
			s.mu.Lock()
			delete(s.pending, req.id) // a late PubAck is ignored
			s.mu.Unlock()
			err = errors.New("mqtt: no PubAck within the request timeout")
		case <-r.ctx.Done():
			return
		}
		switch {
		case err == nil:
			r.env.Status.CountIn(1)
		case tooLarge(err):
			r.dropTooLarge(req.subj, err)
		default:
			r.env.Status.SetError(err)
			if !r.store(req.subj, req.hdr, req.data) {
				return
			}
		}
		req.ack()
	}
}
