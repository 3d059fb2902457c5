package jsapi

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// captureFiles hold requests and the responses nats-server v2.15.2 gave
// them, recorded with the nats CLI against a fresh `nats-server -js` per
// file, in order: later cases see the state earlier ones created. The
// first file follows client flows (streams, KV, publishes, consumers); the
// second has one request per validation rule.
var captureFiles = []string{
	"testdata/nats-server-v2.15.2.json",
	"testdata/nats-server-v2.15.2-rules.json",
}

type captureCase struct {
	Name     string          `json:"name"`
	Subject  string          `json:"subject"`
	Headers  []string        `json:"headers"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}

// body returns the request body as sent: a JSON string in the file is a
// raw (possibly invalid) body, anything else is the JSON itself.
func (c *captureCase) body(t *testing.T) []byte {
	t.Helper()
	if len(c.Request) > 0 && c.Request[0] == '"' {
		var s string
		mustUnmarshal(t, c.Request, &s)
		return []byte(s)
	}
	return c.Request
}

// apiError returns the response's error member, or nil.
func (c *captureCase) apiError(t *testing.T) *APIError {
	t.Helper()
	var r struct {
		Error *APIError `json:"error"`
	}
	mustUnmarshal(t, c.Response, &r)
	return r.Error
}

// loadCaptureFile reads one capture file.
func loadCaptureFile(t *testing.T, path string) []captureCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []captureCase
	mustUnmarshal(t, data, &cases)
	return cases
}

// loadCaptures reads every capture file.
func loadCaptures(t *testing.T) []captureCase {
	t.Helper()
	var all []captureCase
	for _, f := range captureFiles {
		all = append(all, loadCaptureFile(t, f)...)
	}
	return all
}

func captureByName(t *testing.T, cases []captureCase, name string) *captureCase {
	t.Helper()
	for i := range cases {
		if cases[i].Name == name {
			return &cases[i]
		}
	}
	t.Fatalf("no capture %q", name)
	return nil
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return b
}

// generic decodes JSON into maps and json.Numbers for exact comparison.
func generic(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

// requireSameJSON fails unless got and want encode the same JSON value:
// same members present, same values, regardless of member order.
func requireSameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	if !reflect.DeepEqual(generic(t, got), generic(t, want)) {
		t.Fatalf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

// dropServerMetadata removes nats-server's "_nats." metadata keys from a
// config object (and the metadata member when nothing remains), since
// leafbox does not stamp them.
func dropServerMetadata(t *testing.T, config json.RawMessage) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	mustUnmarshal(t, config, &m)
	if md, ok := m["metadata"]; ok {
		var kv map[string]string
		mustUnmarshal(t, md, &kv)
		for k := range kv {
			if strings.HasPrefix(k, "_nats.") {
				delete(kv, k)
			}
		}
		if len(kv) == 0 {
			delete(m, "metadata")
		} else {
			m["metadata"] = mustMarshal(t, kv)
		}
	}
	return mustMarshal(t, m)
}

func requireAPIError(t *testing.T, got *APIError, want *APIError) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Fatalf("got error %v, want %v", got, want)
		}
		return
	}
	if *got != *want {
		t.Fatalf("got error %d/%d %q, want %d/%d %q",
			got.Code, got.ErrCode, got.Description, want.Code, want.ErrCode, want.Description)
	}
}

// requireErrCode fails unless err carries the err_code of want.
func requireErrCode(t *testing.T, err *APIError, want *APIError) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if err == nil || err.ErrCode != want.ErrCode || err.Code != want.Code {
		t.Fatalf("got error %v, want %d/%d", err, want.Code, want.ErrCode)
	}
}
