package jetstream

import (
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// apiConsumerCreate answers every consumer create subject:
// CONSUMER.CREATE.<stream>, CONSUMER.CREATE.<stream>.<name>[.<filter…>]
// and CONSUMER.DURABLE.CREATE.<stream>.<durable>.
func (e *Engine) apiConsumerCreate(subj, reply string, data []byte) {
	const typ = jsapi.ConsumerCreateResponseType
	var req jsapi.ConsumerCreateRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	target, err := jsapi.CheckConsumerCreate(subj, &req)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s := e.lookup(target.Stream)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	cfg := req.Config
	if err := cfg.CheckSupported(); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	scfg := s.config()
	if err := cfg.NormalizeWith(&scfg, jsapi.Options{Pedantic: req.Pedantic}); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	c, created, err := s.createConsumer(cfg, req.Action)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if created {
		e.adviseConsumer(s.name, c.name, jsapi.ActionCreated)
	}
	info := c.info()
	if info == nil {
		e.respondError(reply, typ, jsapi.NewConsumerNotFoundError())
		return
	}
	resp := &jsapi.ConsumerCreateResponse{APIResponse: jsapi.APIResponse{Type: typ}, ConsumerInfo: info}
	if cfg.Direct {
		// A sourcing stream's consumer: the response names the stream's
		// identity, as nats-server's does, so that a sourcer elsewhere
		// (over a leaf link) stores it in Nats-Stream-Source and sees a
		// recreated stream.
		hdr := proto.AppendHeader(nil, nil, headerStreamIdentity, streamIdentity(s.created))
		e.adviseResponse(reply, e.sendResponseHeader(reply, hdr, resp, nil))
		return
	}
	e.respond(reply, resp, nil)
}

// lookupConsumer finds stream and consumer, or the API error for the
// missing one.
func (e *Engine) lookupConsumer(stream, name string) (*stream, *consumer, *jsapi.APIError) {
	s := e.lookup(stream)
	if s == nil {
		return nil, nil, jsapi.NewStreamNotFoundError()
	}
	c := s.lookupConsumer(name)
	if c == nil {
		return s, nil, jsapi.NewConsumerNotFoundError()
	}
	return s, c, nil
}

// apiConsumerInfo answers CONSUMER.INFO.<stream>.<consumer>.
func (e *Engine) apiConsumerInfo(stream, name, reply string, data []byte) {
	const typ = jsapi.ConsumerInfoResponseType
	if !jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewNotEmptyRequestError())
		return
	}
	_, c, err := e.lookupConsumer(stream, name)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	info := c.info()
	if info == nil {
		e.respondError(reply, typ, jsapi.NewConsumerNotFoundError())
		return
	}
	e.respond(reply, &jsapi.ConsumerInfoResponse{APIResponse: jsapi.APIResponse{Type: typ}, ConsumerInfo: info}, nil)
}

// apiConsumerDelete answers CONSUMER.DELETE.<stream>.<consumer>.
func (e *Engine) apiConsumerDelete(stream, name, reply string, data []byte) {
	const typ = jsapi.ConsumerDeleteResponseType
	if !jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewNotEmptyRequestError())
		return
	}
	s, _, err := e.lookupConsumer(stream, name)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if !s.deleteConsumer(name) {
		e.respondError(reply, typ, jsapi.NewConsumerNotFoundError())
		return
	}
	e.respond(reply, &jsapi.ConsumerDeleteResponse{APIResponse: jsapi.APIResponse{Type: typ}, Success: true}, nil)
}

// apiConsumerNames answers CONSUMER.NAMES.<stream> and, with list,
// CONSUMER.LIST.<stream>.
func (e *Engine) apiConsumerNames(stream, reply string, data []byte, list bool) {
	typ := jsapi.ConsumerNamesResponseType
	limit := jsapi.NamesLimit
	if list {
		typ, limit = jsapi.ConsumerListResponseType, jsapi.ListLimit
	}
	var req jsapi.ConsumersRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s := e.lookup(stream)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	cons := s.sortedConsumers()
	lo, hi := page(len(cons), req.Offset, limit)
	paged := jsapi.APIPaged{Total: len(cons), Offset: lo, Limit: limit}
	if !list {
		names := make([]string, 0, hi-lo)
		for _, c := range cons[lo:hi] {
			names = append(names, c.name)
		}
		e.respond(reply, &jsapi.ConsumerNamesResponse{APIResponse: jsapi.APIResponse{Type: typ}, APIPaged: paged, Consumers: names}, nil)
		return
	}
	infos := make([]*jsapi.ConsumerInfo, 0, hi-lo)
	for _, c := range cons[lo:hi] {
		if info := c.info(); info != nil {
			infos = append(infos, info)
		}
	}
	e.respond(reply, &jsapi.ConsumerListResponse{APIResponse: jsapi.APIResponse{Type: typ}, APIPaged: paged, Consumers: infos}, nil)
}

// apiConsumerNext hands a pull request to its consumer.
func (e *Engine) apiConsumerNext(stream, name, reply string, data []byte) {
	_, c, err := e.lookupConsumer(stream, name)
	if err != nil {
		e.bus.Publish(reply, "", noResponders, nil)
		return
	}
	c.handleNext(reply, data)
}

// apiConsumerPause answers CONSUMER.PAUSE.<stream>.<consumer>.
func (e *Engine) apiConsumerPause(stream, name, reply string, data []byte) {
	const typ = jsapi.ConsumerPauseResponseType
	var req jsapi.ConsumerPauseRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	_, c, err := e.lookupConsumer(stream, name)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	now := time.Now()
	c.mu.Lock()
	if req.PauseUntil.After(now) {
		t := req.PauseUntil.UTC()
		c.cfg.PauseUntil = &t
	} else {
		c.cfg.PauseUntil = nil
	}
	resp := &jsapi.ConsumerPauseResponse{APIResponse: jsapi.APIResponse{Type: typ}}
	until := c.cfg.PauseUntil
	c.pauseEnd = until != nil
	if p := until; p != nil {
		resp.Paused, resp.PauseUntil, resp.PauseRemaining = true, *p, p.Sub(now)
	}
	c.mu.Unlock()
	c.kick()
	e.advisePause(c.s.name, c.name, until)
	e.respond(reply, resp, nil)
}
