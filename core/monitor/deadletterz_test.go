package monitor

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// deadLetterFake is the fixture with one uplink "tel" holding dead
// letters 1 and 2.
type deadLetterFake struct {
	*fakeProvider
	list     []DeadLetterInfo
	requeued [][]uint64
}

func (f *deadLetterFake) DeadLetters(uplink string, from uint64, limit int) ([]DeadLetterInfo, error) {
	if uplink != "" && uplink != "tel" {
		return nil, fmt.Errorf("%w %q", ErrUnknownUplink, uplink)
	}
	var out []DeadLetterInfo
	for _, d := range f.list {
		if d.Seq >= from && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *deadLetterFake) Requeue(uplink string, seqs []uint64, all bool) (int, error) {
	if uplink != "tel" {
		return 0, fmt.Errorf("%w %q", ErrUnknownUplink, uplink)
	}
	if all {
		seqs = []uint64{1, 2}
	}
	f.requeued = append(f.requeued, seqs)
	for _, s := range seqs {
		if s > 2 {
			return len(seqs) - 1, errors.New("no dead-lettered message 3")
		}
	}
	return len(seqs), nil
}

func post(h http.Handler, target, contentType, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func TestDeadLetterz(t *testing.T) {
	f := &deadLetterFake{fakeProvider: newFixture(), list: []DeadLetterInfo{
		{Uplink: "tel", Seq: 1, Subject: "other.x", Size: 10, Reason: "no_stream", Time: t0, OutboxSeq: 5, MsgID: "gw.tel.5"},
		{Uplink: "tel", Seq: 2, Subject: "big", Size: 9000, Reason: "too_large", Time: t0},
	}}
	h := newTestHandler(t, f)
	dz := getStruct[DeadLetterz](t, h, DeadLetterzPath+"?uplink=tel&from=2")
	if dz.NumMessages != 1 || dz.Messages[0].Seq != 2 || dz.ID != f.id || !dz.Now.Equal(testNow) {
		t.Fatalf("%+v", dz)
	}
	m := getJSON(t, h, DeadLetterzPath)
	requireKeys(t, "dead letter", m["messages"].([]any)[0].(map[string]any), "uplink", "seq", "subject", "size", "reason", "time", "outbox_seq", "msg_id")
	if res, _ := get(t, h, DeadLetterzPath+"?uplink=nope"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown uplink: %d", res.StatusCode)
	}
	require400(t, h, DeadLetterzPath+"?limit=x", "")

	rec := post(h, RequeuePath, "application/json", `{"uplink":"tel","seqs":[2]}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"requeued": 1`) {
		t.Fatalf("requeue: %d %s", rec.Code, rec.Body)
	}
	rec = post(h, RequeuePath, "application/json", `{"uplink":"tel","seqs":[1,3]}`)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "no dead-lettered message 3") {
		t.Fatalf("partial requeue: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, RequeuePath, "application/json", `{"uplink":"nope","all":true}`); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown uplink: %d %s", rec.Code, rec.Body)
	}
	for _, body := range []string{`{"uplink":"tel"}`, `{"seqs":[1]}`, `nope`} {
		if rec := post(h, RequeuePath, "application/json", body); rec.Code != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	// A cross-origin form POST (no preflight) and a GET change nothing.
	before := len(f.requeued)
	if rec := post(h, RequeuePath, "application/x-www-form-urlencoded", `{"uplink":"tel","all":true}`); rec.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("form post: %d", rec.Code)
	}
	if res, _ := get(t, h, RequeuePath); res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET requeue: %d", res.StatusCode)
	}
	if len(f.requeued) != before {
		t.Fatalf("requeued %v", f.requeued)
	}

	// Without a DeadLetterProvider both paths are 404.
	plain := newTestHandler(t, newFixture())
	if res, _ := get(t, plain, DeadLetterzPath); res.StatusCode != http.StatusNotFound {
		t.Fatalf("no provider: %d", res.StatusCode)
	}
	if rec := post(plain, RequeuePath, "application/json", `{"uplink":"tel","all":true}`); rec.Code != http.StatusNotFound {
		t.Fatalf("no provider requeue: %d", rec.Code)
	}
}
