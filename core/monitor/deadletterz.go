package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// Dead-letter paths, leafbox extensions under /uplinkz.
const (
	// DeadLetterzPath lists dead-lettered messages (GET): query uplink
	// (optional: every uplink when absent), from (a dead-letter
	// sequence) and limit (default 1000).
	DeadLetterzPath = "/uplinkz/deadletter"
	// RequeuePath moves dead-lettered messages back to their outbox
	// (POST, Content-Type application/json, body RequeueRequest).
	RequeuePath = "/uplinkz/deadletter/requeue"
)

// defaultDeadLetterLimit bounds a DeadLetterz listing without limit.
const defaultDeadLetterLimit = 1000

// ErrUnknownUplink is returned by a DeadLetterProvider for an uplink name
// it does not run; the handler answers 404.
var ErrUnknownUplink = errors.New("monitor: no such uplink")

// DeadLetterProvider is implemented by a Provider whose uplinks keep the
// messages the hub refused for good. Without it the dead-letter paths
// answer 404.
type DeadLetterProvider interface {
	// DeadLetters returns up to limit dead-lettered messages of uplink
	// ("" for every uplink, in configuration order) from dead-letter
	// sequence from on, oldest first.
	DeadLetters(uplink string, from uint64, limit int) ([]DeadLetterInfo, error)
	// Requeue moves the dead-lettered messages seqs (every one with all)
	// of uplink back to its outbox and returns how many it moved.
	Requeue(uplink string, seqs []uint64, all bool) (int, error)
}

// DeadLetterInfo describes one dead-lettered message.
type DeadLetterInfo struct {
	Uplink    string    `json:"uplink"`             // Uplink is the uplink the message belongs to.
	Seq       uint64    `json:"seq"`                // Seq is its sequence in the dead-letter store, which requeue takes.
	Subject   string    `json:"subject"`            // Subject is the captured (local) subject.
	Size      int       `json:"size"`               // Size is its header and payload bytes.
	Reason    string    `json:"reason"`             // Reason says why the hub refused it ("no_stream", "wrong_stream", "too_large", ...).
	Error     string    `json:"error,omitempty"`    // Error is the hub's error.
	Time      time.Time `json:"time"`               // Time is when it was dead-lettered.
	OutboxSeq uint64    `json:"outbox_seq"`         // OutboxSeq is its former sequence in the outbox.
	MsgID     string    `json:"msg_id,omitempty"`   // MsgID is the Nats-Msg-Id it was sent with.
	Refusals  int       `json:"refusals,omitempty"` // Refusals is how many permanent refusals it got.
}

// DeadLetterz is the DeadLetterzPath document.
type DeadLetterz struct {
	ID          string           `json:"server_id"`    // ID is the server's id.
	Now         time.Time        `json:"now"`          // Now is the time of the snapshot.
	NumMessages int              `json:"num_messages"` // NumMessages is the number of messages listed.
	Messages    []DeadLetterInfo `json:"messages"`     // Messages lists them; never null.
}

// RequeueRequest is the body of a RequeuePath POST.
type RequeueRequest struct {
	Uplink string   `json:"uplink"`         // Uplink names the uplink.
	Seqs   []uint64 `json:"seqs,omitempty"` // Seqs are the dead-letter sequences to requeue.
	All    bool     `json:"all,omitempty"`  // All requeues every dead-lettered message of the uplink.
}

// RequeueResponse answers a RequeuePath POST.
type RequeueResponse struct {
	Requeued int    `json:"requeued"`        // Requeued is how many messages went back to the outbox.
	Error    string `json:"error,omitempty"` // Error is why some did not, if any.
}

func (h *handler) serveDeadLetterz(w http.ResponseWriter, r *http.Request) {
	dp, ok := h.p.(DeadLetterProvider)
	if !ok {
		http.NotFound(w, r)
		return
	}
	q := query{v: r.URL.Query()}
	from, limit := q.uint64("from"), q.int("limit")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	if limit <= 0 {
		limit = defaultDeadLetterLimit
	}
	list, err := dp.DeadLetters(q.v.Get("uplink"), from, limit)
	if err != nil {
		writeProviderError(w, err)
		return
	}
	dz := &DeadLetterz{ID: h.p.ServerID(), Now: h.now().UTC(), Messages: append(make([]DeadLetterInfo, 0, len(list)), list...)}
	dz.NumMessages = len(dz.Messages)
	writeJSON(w, r, http.StatusOK, dz, true)
}

// serveRequeue takes only a JSON body: a browser cannot send one to
// another origin without a CORS preflight, which this handler never
// grants, so a web page cannot requeue through a local browser.
func (h *handler) serveRequeue(w http.ResponseWriter, r *http.Request) {
	dp, ok := h.p.(DeadLetterProvider)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "requeue needs Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	var req RequeueRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	switch {
	case err != nil:
		writeError(w, fmt.Errorf("invalid requeue request: %v", err))
		return
	case req.Uplink == "":
		writeError(w, errors.New("invalid requeue request: no uplink"))
		return
	case !req.All && len(req.Seqs) == 0:
		writeError(w, errors.New("invalid requeue request: no seqs and not all"))
		return
	}
	n, err := dp.Requeue(req.Uplink, req.Seqs, req.All)
	if errors.Is(err, ErrUnknownUplink) {
		writeProviderError(w, err)
		return
	}
	resp := RequeueResponse{Requeued: n}
	code := http.StatusOK
	if err != nil {
		resp.Error = err.Error()
		code = http.StatusConflict
	}
	writeJSON(w, r, code, &resp, true)
}

// writeProviderError answers 404 for an unknown uplink, 500 otherwise.
func writeProviderError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, ErrUnknownUplink) {
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}
