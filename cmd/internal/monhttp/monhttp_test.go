package monhttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" "+string(body))
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/varz?x=1", nil)
	require.NoError(t, err)
	resp, err := Do(req, 5*time.Second)
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, resp.StatusCode, http.StatusOK)
	require.Equal(t, string(data), `{"ok":true}`)
	require.Equal(t, resp.Header.Get("X-Seen"), "GET /varz?x=1")

	req, err = http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/missing", bytes.NewReader([]byte(`{"a":1}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err = Do(req, 5*time.Second)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, resp.StatusCode, http.StatusNotFound)
	require.Equal(t, resp.Status, "404 Not Found")
	require.Equal(t, resp.Header.Get("X-Seen"), `POST /missing application/json {"a":1}`)
}

func TestDoErrors(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "ftp://127.0.0.1/x", nil)
	require.NoError(t, err)
	_, err = Do(req, time.Second)
	require.ErrorContains(t, err, `unsupported protocol scheme "ftp"`)

	// Nothing listens: the dial fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	req, err = http.NewRequest(http.MethodGet, "http://"+addr+"/varz", nil)
	require.NoError(t, err)
	_, err = Do(req, time.Second)
	require.ErrorContains(t, err, "GET http://"+addr+"/varz", "refused")

	// A listener that never answers: the timeout ends the request.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	req, err = http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/varz", nil)
	require.NoError(t, err)
	start := time.Now()
	_, err = Do(req, 200*time.Millisecond)
	require.ErrorContains(t, err, "no answer within 200ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
}

func TestDoTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	require.NoError(t, err)
	// The test server's certificate is not trusted: the handshake fails.
	_, err = Do(req, 5*time.Second)
	require.ErrorContains(t, err, "certificate")
}
