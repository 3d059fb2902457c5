package jetstream

import (
	"errors"
	"sort"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// apiStreamCreate answers STREAM.CREATE.<name>.
func (e *Engine) apiStreamCreate(name, reply string, data []byte) {
	const typ = jsapi.StreamCreateResponseType
	var req jsapi.StreamCreateRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	cfg := req.StreamConfig
	if err := jsapi.CheckStreamCreate(name, &cfg); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := checkSupported(&cfg); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := cfg.NormalizeWith(jsapi.Options{Pedantic: req.Pedantic}); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s, created, err := e.createStream(cfg)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if created {
		e.adviseStream(s.name, jsapi.ActionCreated)
	}
	e.respond(reply, &jsapi.StreamCreateResponse{
		APIResponse: jsapi.APIResponse{Type: typ},
		StreamInfo:  s.info(false, ""),
		DidCreate:   created,
	}, nil)
}

// checkSupported refuses stream features leafbox does not implement.
// allow_batched is accepted, because the nats CLI sets it on every stream
// it creates, but fast batch publishes are then refused message by
// message (see handlePublish). allow_atomic is implemented (batch.go).
func checkSupported(cfg *jsapi.StreamConfig) *jsapi.APIError {
	c := *cfg
	c.AllowBatchPublish = false
	return c.CheckSupported()
}

// createStream creates the stream cfg describes (normalized), or returns
// the existing one when its configuration is the same.
func (e *Engine) createStream(cfg jsapi.StreamConfig) (*stream, bool, *jsapi.APIError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, false, jsapi.NewNotEnabledError()
	}
	if s := e.streams[cfg.Name]; s != nil {
		old := s.config()
		if !jsapi.SameStreamConfig(&old, &cfg) {
			return nil, false, jsapi.NewStreamNameExistError()
		}
		return s, false, nil
	}
	for _, o := range e.streams {
		if overlaps(o.config().Subjects, cfg.Subjects) {
			return nil, false, jsapi.NewStreamSubjectOverlapError()
		}
	}
	if err := e.checkReservation(&cfg, ""); err != nil {
		return nil, false, err
	}
	s, err := e.newStream(cfg, time.Now().UTC(), false)
	if err != nil {
		return nil, false, jsapi.NewStreamCreateError(err)
	}
	if err := s.subscribe(cfg.Subjects); err != nil {
		_ = s.close(true)
		return nil, false, jsapi.NewStreamCreateError(err)
	}
	e.streams[cfg.Name] = s
	s.startSources()
	return s, true, nil
}

// checkReservation refuses a max_bytes that does not fit the engine's
// limit next to the other streams' reservations. Caller holds e.mu.
func (e *Engine) checkReservation(cfg *jsapi.StreamConfig, except string) *jsapi.APIError {
	limit := e.cfg.MaxStore
	if cfg.Storage == jsapi.MemoryStorage {
		limit = e.cfg.MaxMemory
	}
	if limit <= 0 || cfg.MaxBytes <= 0 {
		return nil
	}
	reserved := cfg.MaxBytes
	for name, s := range e.streams {
		if name == except || s.storage != cfg.Storage {
			continue
		}
		if mb := s.config().MaxBytes; mb > 0 {
			reserved += mb
		}
	}
	if reserved > limit {
		if cfg.Storage == jsapi.MemoryStorage {
			return jsapi.NewMemoryResourcesExceededError()
		}
		return jsapi.NewStorageResourcesExceededError()
	}
	return nil
}

// apiStreamUpdate answers STREAM.UPDATE.<name>.
func (e *Engine) apiStreamUpdate(name, reply string, data []byte) {
	const typ = jsapi.StreamUpdateResponseType
	var req jsapi.StreamCreateRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	cfg := req.StreamConfig
	if cfg.Name != name {
		e.respondError(reply, typ, jsapi.NewStreamMismatchError())
		return
	}
	if err := checkSupported(&cfg); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if err := cfg.NormalizeWith(jsapi.Options{Pedantic: req.Pedantic}); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s, err := e.updateStream(cfg)
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	e.adviseStream(s.name, jsapi.ActionModified)
	e.respond(reply, &jsapi.StreamUpdateResponse{APIResponse: jsapi.APIResponse{Type: typ}, StreamInfo: s.info(false, "")}, nil)
}

// updateStream applies a normalized configuration to an existing stream.
func (e *Engine) updateStream(cfg jsapi.StreamConfig) (*stream, *jsapi.APIError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.streams[cfg.Name]
	if s == nil {
		return nil, jsapi.NewStreamNotFoundError()
	}
	old := s.config()
	if err := jsapi.CheckStreamUpdate(&old, &cfg); err != nil {
		return nil, err
	}
	for name, o := range e.streams {
		if name != cfg.Name && overlaps(o.config().Subjects, cfg.Subjects) {
			return nil, jsapi.NewStreamSubjectOverlapError()
		}
	}
	if err := e.checkReservation(&cfg, cfg.Name); err != nil {
		return nil, err
	}
	if err := s.update(cfg); err != nil {
		return nil, jsapi.NewStreamUpdateError(err)
	}
	if !jsonSame(old.Sources, cfg.Sources) {
		s.restartSources()
	}
	return s, nil
}

// apiStreamInfo answers STREAM.INFO.<name>.
func (e *Engine) apiStreamInfo(name, reply string, data []byte) {
	const typ = jsapi.StreamInfoResponseType
	var req jsapi.StreamInfoRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s := e.lookup(name)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	info := s.info(req.DeletedDetails, req.SubjectsFilter)
	resp := &jsapi.StreamInfoResponse{APIResponse: jsapi.APIResponse{Type: typ}, StreamInfo: info}
	if subjects := info.State.Subjects; len(subjects) > jsapi.MaxSubjectDetails || req.Offset > 0 && len(subjects) > 0 {
		keys := make([]string, 0, len(subjects))
		for k := range subjects {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lo, hi := page(len(keys), req.Offset, jsapi.MaxSubjectDetails)
		paged := make(map[string]uint64, hi-lo)
		for _, k := range keys[lo:hi] {
			paged[k] = subjects[k]
		}
		info.State.Subjects = paged
		resp.APIPaged = jsapi.APIPaged{Total: len(keys), Offset: lo, Limit: jsapi.MaxSubjectDetails}
	} else if req.SubjectsFilter != "" {
		resp.APIPaged = jsapi.APIPaged{Total: len(subjects), Limit: jsapi.MaxSubjectDetails}
	}
	e.respond(reply, resp, nil)
}

// apiStreamDelete answers STREAM.DELETE.<name>.
func (e *Engine) apiStreamDelete(name, reply string, data []byte) {
	const typ = jsapi.StreamDeleteResponseType
	if !jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewNotEmptyRequestError())
		return
	}
	e.mu.Lock()
	s := e.streams[name]
	delete(e.streams, name)
	e.mu.Unlock()
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	if err := s.close(true); err != nil {
		e.respondError(reply, typ, jsapi.NewStreamDeleteError(err))
		return
	}
	e.adviseStream(name, jsapi.ActionDeleted)
	e.respond(reply, &jsapi.StreamDeleteResponse{APIResponse: jsapi.APIResponse{Type: typ}, Success: true}, nil)
}

// apiStreamPurge answers STREAM.PURGE.<name>.
func (e *Engine) apiStreamPurge(name, reply string, data []byte) {
	const typ = jsapi.StreamPurgeResponseType
	var req jsapi.StreamPurgeRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if req.Sequence > 0 && req.Keep > 0 {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	if req.Subject != "" && !subject.Valid(req.Subject) {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	s := e.lookup(name)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	n, err := s.purge(store.PurgeOptions{Subject: req.Subject, Sequence: req.Sequence, Keep: req.Keep})
	if err != nil {
		e.respondError(reply, typ, err)
		return
	}
	e.respond(reply, &jsapi.StreamPurgeResponse{APIResponse: jsapi.APIResponse{Type: typ}, Success: true, Purged: n}, nil)
}

// purge removes messages through the API.
func (s *stream) purge(opts store.PurgeOptions) (uint64, *jsapi.APIError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, jsapi.NewStreamNotFoundError()
	}
	if s.cfg.Sealed {
		return 0, jsapi.NewStreamSealedError()
	}
	if s.cfg.DenyPurge {
		return 0, jsapi.NewStreamPurgeFailedError(errors.New("stream purge not permitted"))
	}
	n, err := s.store.Purge(opts)
	if err != nil {
		return 0, jsapi.NewStreamPurgeFailedError(err)
	}
	s.resyncConsumersLocked(true)
	return n, nil
}

// apiStreamNames answers STREAM.NAMES and, with list, STREAM.LIST.
func (e *Engine) apiStreamNames(reply string, data []byte, list bool) {
	typ := jsapi.StreamNamesResponseType
	limit := jsapi.NamesLimit
	if list {
		typ, limit = jsapi.StreamListResponseType, jsapi.ListLimit
	}
	var req jsapi.StreamNamesRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	var matched []*stream
	for _, s := range e.sortedStreams() {
		if req.Subject != "" && !overlaps(s.config().Subjects, []string{req.Subject}) {
			continue
		}
		matched = append(matched, s)
	}
	lo, hi := page(len(matched), req.Offset, limit)
	paged := jsapi.APIPaged{Total: len(matched), Offset: lo, Limit: limit}
	if !list {
		names := make([]string, 0, hi-lo)
		for _, s := range matched[lo:hi] {
			names = append(names, s.name)
		}
		e.respond(reply, &jsapi.StreamNamesResponse{APIResponse: jsapi.APIResponse{Type: typ}, APIPaged: paged, Streams: names}, nil)
		return
	}
	infos := make([]*jsapi.StreamInfo, 0, hi-lo)
	for _, s := range matched[lo:hi] {
		infos = append(infos, s.info(false, ""))
	}
	e.respond(reply, &jsapi.StreamListResponse{APIResponse: jsapi.APIResponse{Type: typ}, APIPaged: paged, Streams: infos}, nil)
}

// apiMsgDelete answers STREAM.MSG.DELETE.<name>.
func (e *Engine) apiMsgDelete(name, reply string, data []byte) {
	const typ = jsapi.MsgDeleteResponseType
	if len(data) == 0 {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	var req jsapi.MsgDeleteRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	s := e.lookup(name)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	if err := s.deleteMsg(req.Seq, !req.NoErase); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	e.respond(reply, &jsapi.MsgDeleteResponse{APIResponse: jsapi.APIResponse{Type: typ}, Success: true}, nil)
}

// deleteMsg removes one message through the API.
func (s *stream) deleteMsg(seq uint64, erase bool) *jsapi.APIError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return jsapi.NewStreamNotFoundError()
	}
	if s.cfg.Sealed {
		return jsapi.NewStreamSealedError()
	}
	if s.cfg.DenyDelete {
		return jsapi.NewStreamMsgDeleteFailedError(errors.New("message delete not permitted"))
	}
	ok, err := s.store.Remove(seq, erase)
	if err != nil {
		return jsapi.NewStreamMsgDeleteFailedError(err)
	}
	if !ok {
		return jsapi.NewSequenceNotFoundError(seq)
	}
	for _, c := range s.consumerList() {
		c.removed(seq)
	}
	s.resyncConsumersLocked(true)
	return nil
}

// apiMsgGet answers STREAM.MSG.GET.<name>.
func (e *Engine) apiMsgGet(name, reply string, data []byte) {
	const typ = jsapi.MsgGetResponseType
	if len(data) == 0 {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	var req jsapi.MsgGetRequest
	if err := jsapi.DecodeRequest(data, &req); err != nil {
		e.respondError(reply, typ, err)
		return
	}
	if !validMsgGet(&req) || req.Batch > 0 || len(req.MultiLastFor) > 0 {
		e.respondError(reply, typ, jsapi.NewBadRequestError())
		return
	}
	s := e.lookup(name)
	if s == nil {
		e.respondError(reply, typ, jsapi.NewStreamNotFoundError())
		return
	}
	m, err := s.getMsg(&req)
	if err != nil {
		e.respondError(reply, typ, jsapi.NewNoMessageFoundError())
		return
	}
	// Like nats-server, a message got is not repeated in an API audit.
	e.sendResponse(reply, &jsapi.MsgGetResponse{
		APIResponse: jsapi.APIResponse{Type: typ},
		Message: &jsapi.StoredMsg{
			Subject:  m.Subject,
			Sequence: m.Seq,
			Header:   m.Header,
			Data:     m.Data,
			Time:     time.Unix(0, m.Time).UTC(),
		},
	}, nil)
}

// validMsgGet checks that a get request selects one way.
func validMsgGet(req *jsapi.MsgGetRequest) bool {
	if req.Seq == 0 && req.LastFor == "" && req.NextFor == "" && req.StartTime == nil && len(req.MultiLastFor) == 0 {
		return false
	}
	switch {
	case req.Seq > 0 && req.LastFor != "",
		req.Seq > 0 && req.StartTime != nil,
		req.StartTime != nil && req.LastFor != "",
		req.LastFor != "" && req.NextFor != "",
		req.LastFor != "" && req.Batch > 0,
		req.LastFor != "" && len(req.MultiLastFor) > 0,
		req.NextFor != "" && len(req.MultiLastFor) > 0,
		req.UpToSeq > 0 && req.UpToTime != nil:
		return false
	}
	return true
}

// getMsg loads the message a single get request selects.
func (s *stream) getMsg(req *jsapi.MsgGetRequest) (*store.Msg, error) {
	seq := req.Seq
	if req.StartTime != nil {
		seq = s.seqFromTime(req.StartTime.UnixNano())
	}
	switch {
	case req.LastFor != "":
		return s.store.LoadLast(req.LastFor, nil)
	case req.NextFor != "":
		return s.store.LoadNext(req.NextFor, seq, nil)
	case req.StartTime != nil:
		return s.store.LoadNext("", seq, nil)
	default:
		return s.store.Load(seq, nil)
	}
}
