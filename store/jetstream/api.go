package jetstream

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jsapi"
)

// APILevel is the JetStream API level leafbox reports: nats-server 2.12's
// level 2, whose features are all implemented: per-message TTL, consumer
// pause and priority groups (level 1), counters, atomic batch publish,
// message schedules and persist_mode async (level 2). Fast batch publish
// (level 4) is not, so clients that gate on a level refuse it first.
const APILevel = 2

// handleAPI is the Bus handler for $JS.API.>.
func (e *Engine) handleAPI(subj, reply, hdr, data []byte) {
	e.dispatch(string(subj), string(reply), hdr, data)
}

// domainSources returns the subjects a JetStream domain maps onto the
// local API: the nine sources nats-server maps for a domain (jetstream_api.go
// generateJSMappingTable). The engine subscribes to exactly these, so a
// leaf link announces them to its hub and nothing else under
// $JS.<domain>.API. An empty domain has none.
func domainSources(domain string) []string {
	if domain == "" {
		return nil
	}
	pre := "$JS." + domain + ".API."
	return []string{
		pre + "INFO", pre + "STREAM.>", pre + "CONSUMER.>", pre + "DIRECT.>", pre + "META.>",
		pre + "SERVER.>", pre + "ACCOUNT.>", pre + "$KV.>", pre + "$OBJ.>",
	}
}

// handleDomainAPI serves $JS.<domain>.API.… as nats-server's domain
// mappings do: $JS.<domain>.API.$KV.… and .$OBJ.… are republished on
// $KV.… and $OBJ.… (KeyValue and object store writes through a domain,
// with or without a reply), everything else is served as $JS.API.….
// The republished message reaches the streams through the broker like
// any publish, so a mapped KV put gets the same PubAck as a direct one.
func (e *Engine) handleDomainAPI(subj, reply, hdr, data []byte) {
	rest := strings.TrimPrefix(string(subj), "$JS."+e.cfg.Domain+".API.")
	if strings.HasPrefix(rest, "$KV.") || strings.HasPrefix(rest, "$OBJ.") {
		e.bus.Publish(rest, string(reply), hdr, data)
		return
	}
	e.dispatch(jsapi.APIPrefix+"."+rest, string(reply), hdr, data)
}

// dispatch routes one API request by its subject. Requests without a
// reply, and subjects leafbox does not serve, are ignored, as nats-server
// ignores them.
func (e *Engine) dispatch(subj, reply string, hdr, data []byte) {
	if reply == "" {
		return
	}
	toks := strings.Split(subj, ".")
	if len(toks) < 3 || toks[0] != "$JS" || toks[1] != "API" {
		return
	}
	if end := e.beginAudit(subj, reply, data); end != nil {
		defer end()
	}
	tok := func(i int) string {
		if i < len(toks) {
			return toks[i]
		}
		return ""
	}
	n := len(toks)
	switch tok(2) {
	case "INFO":
		if n == 3 && e.levelSupported(hdr, reply, jsapi.AccountInfoResponseType) {
			e.apiAccountInfo(reply, data)
		}
	case "STREAM":
		switch tok(3) {
		case "CREATE":
			if n == 5 && e.levelSupported(hdr, reply, jsapi.StreamCreateResponseType) {
				e.apiStreamCreate(tok(4), reply, data)
			}
		case "UPDATE":
			if n == 5 && e.levelSupported(hdr, reply, jsapi.StreamUpdateResponseType) {
				e.apiStreamUpdate(tok(4), reply, data)
			}
		case "INFO":
			if n == 5 {
				e.apiStreamInfo(tok(4), reply, data)
			}
		case "DELETE":
			if n == 5 {
				e.apiStreamDelete(tok(4), reply, data)
			}
		case "PURGE":
			if n == 5 {
				e.apiStreamPurge(tok(4), reply, data)
			}
		case "SNAPSHOT":
			if n == 5 {
				e.apiStreamSnapshot(tok(4), reply, data)
			}
		case "RESTORE":
			if n == 5 {
				e.apiStreamRestore(tok(4), reply, data)
			}
		case "NAMES":
			if n == 4 {
				e.apiStreamNames(reply, data, false)
			}
		case "LIST":
			if n == 4 {
				e.apiStreamNames(reply, data, true)
			}
		case "MSG":
			if n == 6 && tok(4) == "GET" {
				e.apiMsgGet(tok(5), reply, data)
			} else if n == 6 && tok(4) == "DELETE" {
				e.apiMsgDelete(tok(5), reply, data)
			}
		}
	case "DIRECT":
		if tok(3) == "GET" && n >= 5 {
			var last string
			if n > 5 {
				last = strings.Join(toks[5:], ".")
			}
			e.apiDirectGet(tok(4), last, n > 5, reply, data)
		}
	case "CONSUMER":
		switch tok(3) {
		case "CREATE", "DURABLE":
			if e.levelSupported(hdr, reply, jsapi.ConsumerCreateResponseType) {
				e.apiConsumerCreate(subj, reply, data)
			}
		case "INFO":
			if n == 6 {
				e.apiConsumerInfo(tok(4), tok(5), reply, data)
			}
		case "DELETE":
			if n == 6 {
				e.apiConsumerDelete(tok(4), tok(5), reply, data)
			}
		case "NAMES":
			if n == 5 {
				e.apiConsumerNames(tok(4), reply, data, false)
			}
		case "LIST":
			if n == 5 {
				e.apiConsumerNames(tok(4), reply, data, true)
			}
		case "MSG":
			if n == 7 && tok(4) == "NEXT" {
				e.apiConsumerNext(tok(5), tok(6), reply, data)
			}
		case "PAUSE":
			if n == 6 {
				e.apiConsumerPause(tok(4), tok(5), reply, data)
			}
		case "UNPIN":
			if n == 6 && e.levelSupported(hdr, reply, jsapi.ConsumerUnpinResponseType) {
				e.apiConsumerUnpin(tok(4), tok(5), reply, data)
			}
		}
	}
}

// maxRequiredLevel is the highest Nats-Required-Api-Level a request may
// carry. Clients (jsm.go, so the nats CLI) derive it from the fields a
// request sets: `nats bench js pub --create` asks for 3. Up to 3 every
// field is one the wire types know, so the strict decoder and the
// validation serve what leafbox implements and refuse the rest (counters,
// batches, schedules) with an error naming it. Levels 4 and 5 carry
// behaviour no field shows (durable sourcing, consumer reset, stream
// identity), so they get 10185, and a nats-server hub sourcing one of our
// streams retries without them.
const maxRequiredLevel = 3

// levelSupported reports whether a request's Nats-Required-Api-Level
// header, if any, is at most maxRequiredLevel; otherwise it answers 10185,
// as nats-server does for a level above its own.
func (e *Engine) levelSupported(hdr []byte, reply, typ string) bool {
	v := proto.HeaderValue(hdr, jsapi.HeaderRequiredAPILevel)
	if len(v) == 0 {
		return true
	}
	if level, err := strconv.Atoi(string(v)); err == nil && level <= maxRequiredLevel {
		return true
	}
	e.respondError(reply, typ, jsapi.NewRequiredAPILevelError())
	return false
}

// respond sends a JSON API response; apiErr (nil on success) is counted.
func (e *Engine) respond(reply string, resp any, apiErr *jsapi.APIError) {
	e.adviseResponse(reply, e.sendResponseHeader(reply, nil, resp, apiErr))
}

// sendResponse is respond without the API audit, for the responses
// nats-server leaves out of it (a message got by STREAM.MSG.GET). It
// returns the response sent.
func (e *Engine) sendResponse(reply string, resp any, apiErr *jsapi.APIError) []byte {
	return e.sendResponseHeader(reply, nil, resp, apiErr)
}

// sendResponseHeader is sendResponse with a header block (nil: none).
func (e *Engine) sendResponseHeader(reply string, hdr []byte, resp any, apiErr *jsapi.APIError) []byte {
	e.apiTotal.Add(1)
	if apiErr != nil {
		e.apiErrors.Add(1)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		e.log.Error("jetstream: encode response", "err", err)
		b, _ = json.Marshal(jsapi.ErrorResponse(jsapi.SystemResponseType, jsapi.NewBadRequestError()))
	}
	e.bus.Publish(reply, "", hdr, b)
	return b
}

// respondError sends an error response of the given type.
func (e *Engine) respondError(reply, typ string, apiErr *jsapi.APIError) {
	e.respond(reply, jsapi.ErrorResponse(typ, apiErr), apiErr)
}

// apiAccountInfo answers $JS.API.INFO.
func (e *Engine) apiAccountInfo(reply string, data []byte) {
	const typ = jsapi.AccountInfoResponseType
	if !jsapi.IsEmptyRequest(data) {
		e.respondError(reply, typ, jsapi.NewNotEmptyRequestError())
		return
	}
	st := e.Stats()
	limit := func(v int64) int64 {
		if v <= 0 {
			return -1
		}
		return v
	}
	info := &jsapi.AccountInfo{
		Tier: jsapi.Tier{
			Memory:         st.Memory,
			Store:          st.Store,
			ReservedMemory: st.ReservedMemory,
			ReservedStore:  st.ReservedStore,
			Streams:        st.Streams,
			Consumers:      st.Consumers,
			Limits: jsapi.AccountLimits{
				MaxMemory:            limit(e.cfg.MaxMemory),
				MaxStore:             limit(e.cfg.MaxStore),
				MaxStreams:           -1,
				MaxConsumers:         -1,
				MaxAckPending:        -1,
				MemoryMaxStreamBytes: -1,
				StoreMaxStreamBytes:  -1,
			},
		},
		Domain: e.cfg.Domain,
		API:    jsapi.APIStats{Level: APILevel, Total: st.APITotal, Errors: st.APIErrors},
	}
	e.respond(reply, &jsapi.AccountInfoResponse{APIResponse: jsapi.APIResponse{Type: typ}, AccountInfo: info}, nil)
}

// page returns the [offset, offset+limit) window of n items.
func page(n, offset, limit int) (int, int) {
	if offset < 0 {
		offset = 0
	}
	if offset > n {
		offset = n
	}
	return offset, min(offset+limit, n)
}
